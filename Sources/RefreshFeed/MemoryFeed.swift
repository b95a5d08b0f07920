import Synchronization

/// Feeds held in memory: items published through the API, nothing upstream. The instance
/// made by `init` is the feed `main`; ``feed(_:)`` gives the others, sharing its storage.
public final class MemoryFeed: FeedSource, FeedStore {
    private struct Storage {
        /// Ascending by cursor, so the newest item is last and inserts of new items append.
        var ordered: [FeedItem] = []
        var byID: [ItemKey: FeedItem] = [:]
        /// Ids in the order the feed gained them: the item at position p is `gained[p - 1]`.
        var gained: [ItemKey] = []
        var positions: [ItemKey: FeedPosition] = [:]

        var head: FeedPosition { FeedPosition(gained.count) }

        /// Index of the first item whose cursor is not below `cursor`.
        func lowerBound(_ cursor: FeedCursor) -> Int {
            var low = 0
            var high = ordered.count
            while low < high {
                let middle = (low + high) / 2
                if ordered[middle].cursor < cursor { low = middle + 1 } else { high = middle }
            }
            return low
        }

        mutating func upsert(_ items: [FeedItem]) {
            for item in ItemKey.lastOfEachID(items).sorted(by: { $0.cursor < $1.cursor }) {
                let key = ItemKey(item.id)
                if let existing = byID[key] {
                    ordered.remove(at: lowerBound(existing.cursor))
                } else {
                    gained.append(key)
                    positions[key] = FeedPosition(gained.count)
                }
                byID[key] = item
                ordered.insert(item, at: lowerBound(item.cursor))
            }
        }

        func page(_ items: some Sequence<FeedItem>, hasMore: Bool) -> FeedPage {
            FeedPage(items: Array(items), hasMore: hasMore, head: head)
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
        storage.withLock { $0.upsert(items.filter { ItemRules.violation(of: $0) == nil }) }
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

    public func newer(than cursor: FeedCursor, limit: Int) async throws -> FeedPage {
        storage.withLock { storage in
            var start = storage.lowerBound(cursor)
            if start < storage.ordered.count, storage.ordered[start].cursor == cursor { start += 1 }
            let count = storage.ordered.count - start
            let taken = storage.ordered[max(start, storage.ordered.count - limit)...]
            return storage.page(taken.reversed(), hasMore: count > limit)
        }
    }

    public func older(than cursor: FeedCursor?, through position: FeedPosition?, limit: Int) async throws -> FeedPage {
        storage.withLock { storage in
            let end = cursor.map { storage.lowerBound($0) } ?? storage.ordered.count
            guard let position else {
                let start = max(0, end - limit)
                return storage.page(storage.ordered[start..<end].reversed(), hasMore: start > 0)
            }
            let positions = storage.positions
            let older = storage.ordered[..<end].reversed().lazy.filter { positions[ItemKey($0.id), default: 0] <= position }
            let taken = Array(older.prefix(limit + 1))
            return storage.page(taken.prefix(limit), hasMore: taken.count > limit)
        }
    }

    public func added(after position: FeedPosition, limit: Int) async throws -> FeedPage {
        storage.withLock { storage in
            let first = Int(max(0, min(position, storage.head)))
            let items = storage.gained[first...].compactMap { storage.byID[$0] }.sorted { $0.cursor > $1.cursor }
            return storage.page(items.prefix(limit), hasMore: items.count > limit)
        }
    }

    public func head() async throws -> FeedHead? {
        storage.withLock { storage in
            storage.gained.last.flatMap { storage.byID[$0] }.map { FeedHead(position: storage.head, item: $0) }
        }
    }

    public func publish(_ items: [FeedItem]) async throws -> [FeedItem] {
        try ItemRules.check(items)
        let stored = ItemKey.lastOfEachID(items)
        storage.withLock { $0.upsert(stored) }
        return stored
    }

    public func item(id: String) async throws -> FeedItem? {
        storage.withLock { $0.byID[ItemKey(id)] }
    }

    public func position(of id: String) async throws -> FeedPosition? {
        storage.withLock { $0.positions[ItemKey(id)] }
    }
}
