import Synchronization

/// A feed held in memory: items published through the API, nothing upstream.
public final class MemoryFeed: FeedSource {
    private struct Storage {
        /// Ascending by cursor, so the newest item is last and inserts of new items append.
        var ordered: [FeedItem] = []
        var byID: [String: FeedItem] = [:]

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

        mutating func upsert(_ item: FeedItem) {
            if let existing = byID[item.id] {
                let index = lowerBound(existing.cursor)
                ordered.remove(at: index)
            }
            byID[item.id] = item
            ordered.insert(item, at: lowerBound(item.cursor))
        }
    }

    private let storage = Mutex(Storage())

    public init(items: [FeedItem] = []) {
        storage.withLock { storage in
            for item in items { storage.upsert(item) }
        }
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
            return FeedPage(items: taken.reversed(), hasMore: count > limit)
        }
    }

    public func older(than cursor: FeedCursor?, limit: Int) async throws -> FeedPage {
        storage.withLock { storage in
            let end = cursor.map { storage.lowerBound($0) } ?? storage.ordered.count
            let start = max(0, end - limit)
            return FeedPage(items: storage.ordered[start..<end].reversed(), hasMore: start > 0)
        }
    }

    public func publish(_ items: [FeedItem]) async throws -> [FeedItem] {
        storage.withLock { storage in
            for item in items { storage.upsert(item) }
        }
        return items
    }

    public func item(id: String) async throws -> FeedItem? {
        storage.withLock { $0.byID[id] }
    }
}
