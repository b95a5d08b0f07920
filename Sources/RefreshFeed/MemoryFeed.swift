import Synchronization

/// Feeds held in memory: items published through the API, nothing upstream. The instance
/// made by `init` is the feed `main`; ``feed(_:)`` gives the others, sharing its storage.
public final class MemoryFeed: FeedSource, FeedStore {
    private struct Storage {
        /// Items in the order the feed gained them: the item at position p is `gained[p - 1]`.
        var gained: [FeedItem] = []
        var positions: [ItemKey: FeedPosition] = [:]

        var head: FeedPosition { FeedPosition(gained.count) }

        /// Stores a batch; answers the items as stored, in the order given.
        @discardableResult
        mutating func upsert(_ items: [FeedItem]) -> [FeedItem] {
            let batch = ItemKey.lastOfEachID(items)
            for item in batch.sorted(by: { $0.dateOrder < $1.dateOrder }) {
                let key = ItemKey(item.id)
                var kept = item
                if let position = positions[key] {
                    kept.position = position
                    gained[Int(position) - 1] = kept
                } else {
                    kept.position = head + 1
                    gained.append(kept)
                    positions[key] = head
                }
            }
            return batch.compactMap { positions[ItemKey($0.id)].map { gained[Int($0) - 1] } }
        }

        /// The items at positions `range`, newest first; `hasMore` when positions below
        /// `range` remain.
        func page(positions range: ClosedRange<FeedPosition>?, hasMore: Bool) -> FeedPage {
            let items = range.map { gained[Int($0.lowerBound - 1)..<Int($0.upperBound)].reversed() } ?? []
            return FeedPage(items: Array(items), hasMore: hasMore, head: head)
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
            let first = max(0, position) + 1
            guard first <= storage.head else { return storage.page(positions: nil, hasMore: false) }
            let low = max(first, storage.head - FeedPosition(limit) + 1)
            return storage.page(positions: low...storage.head, hasMore: low > first)
        }
    }

    public func older(than position: FeedPosition?, limit: Int) async throws -> FeedPage {
        storage.withLock { storage in
            let last = min(storage.head, position.map { max($0, 1) - 1 } ?? storage.head)
            guard last >= 1 else { return storage.page(positions: nil, hasMore: false) }
            let low = max(1, last - FeedPosition(limit) + 1)
            return storage.page(positions: low...last, hasMore: low > 1)
        }
    }

    public func head() async throws -> FeedHead? {
        storage.withLock { storage in
            storage.gained.last.map { FeedHead(position: storage.head, item: $0) }
        }
    }

    public func publish(_ items: [FeedItem]) async throws -> [FeedItem] {
        try ItemRules.check(items)
        return storage.withLock { $0.upsert(items) }
    }

    public func item(id: String) async throws -> FeedItem? {
        storage.withLock { storage in storage.positions[ItemKey(id)].map { storage.gained[Int($0) - 1] } }
    }

    public func position(of id: String) async throws -> FeedPosition? {
        storage.withLock { $0.positions[ItemKey(id)] }
    }
}
