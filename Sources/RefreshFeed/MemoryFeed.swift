import Synchronization

/// Feeds held in memory: items published through the API, nothing upstream. The instance
/// made by `init` is the feed `main`; ``feed(_:)`` gives the others, sharing its storage.
public final class MemoryFeed: FeedSource, FeedStore {
    private struct Storage {
        /// Items in the order the feed gained them: the item at position p is `gained[p - 1]`,
        /// `nil` once removed.
        var gained: [FeedItem?] = []
        /// Where each id the feed holds stands.
        var positions: [ItemKey: FeedPosition] = [:]
        var version: FeedVersion = 0
        /// Removals, oldest first: the tombstones ``changes(since:within:limit:)`` reports.
        var removals: [(change: FeedChange, at: Timestamp)] = []
        /// Changes at or below this version may have been forgotten (their tombstones expired).
        var horizon: FeedVersion = 0

        var head: FeedPosition { FeedPosition(gained.count) }

        /// Stores a batch: new ids take the next positions, known ones are edited in place when
        /// anything of them differs (an item republished as it is changes nothing).
        mutating func upsert(_ items: [FeedItem], replacing: Bool = true) -> FeedWrite {
            let batch = ItemKey.lastOfEachID(items)
            var changes: [FeedChange] = []
            var added = 0
            for item in batch.sorted(by: { $0.dateOrder < $1.dateOrder }) {
                let key = ItemKey(item.id)
                var kept = item
                if let position = positions[key], let current = gained[Int(position) - 1] {
                    guard replacing, current != item else { continue }
                    version += 1
                    kept.position = position
                    kept.version = version
                    gained[Int(position) - 1] = kept
                    changes.append(.update(kept))
                } else {
                    version += 1
                    kept.position = head + 1
                    kept.version = version
                    gained.append(kept)
                    positions[key] = head
                    added += 1
                }
            }
            let stored = batch.compactMap { positions[ItemKey($0.id)].flatMap { gained[Int($0) - 1] } }
            return FeedWrite(stored: stored, head: added > 0 ? currentHead : nil, added: added, changes: changes, version: version)
        }

        mutating func replace(_ item: FeedItem, ifVersion expected: FeedVersion?) throws -> FeedWrite {
            guard let position = positions[ItemKey(item.id)], let current = gained[Int(position) - 1] else {
                throw FeedItemNotFound(id: item.id)
            }
            if let expected, expected != current.version { throw FeedVersionMismatch(current: current.version ?? 0) }
            guard current != item else { return FeedWrite(stored: [current], version: version) }
            version += 1
            var kept = item
            kept.position = position
            kept.version = version
            gained[Int(position) - 1] = kept
            return FeedWrite(stored: [kept], changes: [.update(kept)], version: version)
        }

        mutating func remove(id: String, ifVersion expected: FeedVersion?, at now: Timestamp) throws -> FeedWrite {
            let key = ItemKey(id)
            guard let position = positions[key], let current = gained[Int(position) - 1] else { throw FeedItemNotFound(id: id) }
            if let expected, expected != current.version { throw FeedVersionMismatch(current: current.version ?? 0) }
            version += 1
            gained[Int(position) - 1] = nil
            positions[key] = nil
            let change = FeedChange.remove(id: current.id, position: position, version: version)
            removals.append((change, now))
            return FeedWrite(stored: [], changes: [change], version: version)
        }

        /// The head, with the newest item still held.
        var currentHead: FeedHead? {
            guard let newest = gained.last(where: { $0 != nil }) ?? nil else { return nil }
            return FeedHead(position: head, item: newest, version: version)
        }

        /// Up to `limit` items held below position `below` (1 past the head for the newest),
        /// newest first, and whether more are held below them.
        func page(below: FeedPosition, limit: Int) -> FeedPage {
            var items: [FeedItem] = []
            var index = Int(min(below, head + 1)) - 2
            while index >= 0, items.count <= limit {
                if let item = gained[index] { items.append(item) }
                index -= 1
            }
            return FeedPage(items: Array(items.prefix(limit)), hasMore: items.count > limit, head: head, version: version)
        }
    }

    /// Every feed's storage, shared by the views of one store.
    private final class Feeds: Sendable {
        let byName = Mutex<[FeedName: Storage]>([:])
    }

    /// One feed's storage within the shared lock, so views of different feeds never see each
    /// other's items.
    private struct Shelf {
        let feeds: Feeds
        let name: FeedName

        /// A feed that gains nothing takes no room: reading unknown names leaves no trace.
        func withLock<Result>(_ body: (inout Storage) throws -> Result) rethrows -> Result {
            try feeds.byName.withLock { all in
                guard all[name] != nil else {
                    var empty = Storage()
                    let result = try body(&empty)
                    if !empty.gained.isEmpty { all[name] = empty }
                    return result
                }
                return try body(&all[name]!)
            }
        }
    }

    private let storage: Shelf

    /// The feed's name within its store.
    public let name: FeedName

    /// - Parameter items: the first items of `main`; any that breaks ``ItemRules`` is left
    ///   out, as ``publish(_:)`` would refuse it.
    public init(items: [FeedItem] = []) {
        name = .main
        storage = Shelf(feeds: Feeds(), name: .main)
        _ = storage.withLock { $0.upsert(items.filter { ItemRules.violation(of: $0) == nil }) }
    }

    private init(feeds: Feeds, name: FeedName) {
        self.name = name
        storage = Shelf(feeds: feeds, name: name)
    }

    public func feed(_ name: FeedName) -> any FeedSource {
        name == self.name ? self : MemoryFeed(feeds: storage.feeds, name: name)
    }

    /// Nothing upstream: the feed is always up to date.
    public func update(progress: @escaping ProgressSink) async throws -> FeedUpdate {
        progress(FeedProgress(fraction: 1, stage: "checking", message: "Checked for new items"))
        return FeedUpdate(added: 0, message: "Up to date")
    }

    public func added(after position: FeedPosition, limit: Int) async throws -> FeedPage {
        storage.withLock { storage in
            let newer = storage.gained[Int(max(0, min(position, storage.head)))...].compactMap { $0 }
            return FeedPage(
                items: newer.suffix(limit).reversed(), hasMore: newer.count > limit, head: storage.head, version: storage.version)
        }
    }

    public func older(than position: FeedPosition?, limit: Int) async throws -> FeedPage {
        storage.withLock { storage in storage.page(below: position ?? .max, limit: limit) }
    }

    public func head() async throws -> FeedHead? {
        storage.withLock { $0.currentHead }
    }

    public func publishing(_ items: [FeedItem]) async throws -> FeedWrite {
        try ItemRules.check(items)
        return storage.withLock { $0.upsert(items) }
    }

    public func replace(_ item: FeedItem, ifVersion version: FeedVersion?) async throws -> FeedWrite {
        try ItemRules.check([item])
        return try storage.withLock { try $0.replace(item, ifVersion: version) }
    }

    public func remove(id: String, ifVersion version: FeedVersion?) async throws -> FeedWrite {
        try storage.withLock { try $0.remove(id: id, ifVersion: version, at: .now()) }
    }

    public func changes(
        since version: FeedVersion, within positions: ClosedRange<FeedPosition>, limit: Int
    ) async throws
        -> FeedChanges?
    {
        storage.withLock { storage in
            guard version >= storage.horizon else { return nil }
            var changes: [FeedChange] = []
            let low = Int(max(1, positions.lowerBound)) - 1
            let high = Int(min(storage.head, positions.upperBound))
            if low < high {
                for case let item? in storage.gained[low..<high] where (item.version ?? 0) > version { changes.append(.update(item)) }
            }
            for removal in storage.removals where removal.change.version > version && positions.contains(removal.change.position) {
                changes.append(removal.change)
            }
            guard changes.count <= limit else { return nil }
            return FeedChanges(changes: changes.sorted { $0.version < $1.version }, version: storage.version)
        }
    }

    public func forgetRemovals(before time: Timestamp) async throws -> Int {
        storage.feeds.byName.withLock { all in
            var forgotten = 0
            for name in all.keys {
                let expired = all[name]!.removals.prefix { $0.at < time }
                guard let last = expired.last else { continue }
                all[name]!.horizon = max(all[name]!.horizon, last.change.version)
                all[name]!.removals.removeFirst(expired.count)
                forgotten += expired.count
            }
            return forgotten
        }
    }

    public func item(id: String) async throws -> FeedItem? {
        storage.withLock { storage in storage.positions[ItemKey(id)].flatMap { storage.gained[Int($0) - 1] } }
    }

    public func position(of id: String) async throws -> FeedPosition? {
        storage.withLock { storage in
            let key = ItemKey(id)
            return storage.positions[key] ?? storage.removals.last { ItemKey($0.change.id) == key }?.change.position
        }
    }
}
