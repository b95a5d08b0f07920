import RefreshFeed

/// The feed store as the server's parts use it: every read or write that fails is counted,
/// whichever part then catches the error (a route answering 500 or 503, a refresh that
/// fails, the news hub that tries again later). Counting at the store rather than where
/// errors are caught counts exactly the store's failures, not the upstream's or a client's.
///
/// `update` is passed through uncounted: it is mostly the upstream's work, and
/// ``SharedUpdate`` counts its outcomes. A call cancelled by its caller is not a failure.
struct MeteredFeed: FeedSource {
    let base: any FeedSource
    let metrics: ServerMetrics

    init(_ base: any FeedSource, metrics: ServerMetrics) {
        self.base = base
        self.metrics = metrics
    }

    func update(progress: @escaping ProgressSink) async throws -> FeedUpdate {
        try await base.update(progress: progress)
    }

    func older(than position: FeedPosition?, limit: Int) async throws -> FeedPage {
        try await counted(.read) { try await base.older(than: position, limit: limit) }
    }

    func added(after position: FeedPosition, limit: Int) async throws -> FeedPage {
        try await counted(.read) { try await base.added(after: position, limit: limit) }
    }

    func head() async throws -> FeedHead? {
        try await counted(.read) { try await base.head() }
    }

    func publishing(_ items: [FeedItem]) async throws -> FeedWrite {
        try await counted(.write) { try await base.publishing(items) }
    }

    func replace(_ item: FeedItem, ifVersion version: FeedVersion?) async throws -> FeedWrite {
        try await counted(.write) { try await base.replace(item, ifVersion: version) }
    }

    func remove(id: String, ifVersion version: FeedVersion?) async throws -> FeedWrite {
        try await counted(.write) { try await base.remove(id: id, ifVersion: version) }
    }

    func changes(since version: FeedVersion, within positions: ClosedRange<FeedPosition>, limit: Int) async throws -> FeedChanges? {
        try await counted(.read) { try await base.changes(since: version, within: positions, limit: limit) }
    }

    func forgetRemovals(before time: Timestamp) async throws -> Int {
        try await counted(.write) { try await base.forgetRemovals(before: time) }
    }

    func item(id: String) async throws -> FeedItem? {
        try await counted(.read) { try await base.item(id: id) }
    }

    func position(of id: String) async throws -> FeedPosition? {
        try await counted(.read) { try await base.position(of: id) }
    }

    func checkReady() async throws {
        try await counted(.read) { try await base.checkReady() }
    }

    private func counted<Result: Sendable>(
        _ operation: ServerMetrics.StoreOperation, _ call: () async throws -> Result
    ) async throws -> Result {
        do {
            return try await call()
        } catch {
            // An id the feed does not hold, or another version of it, is the request's, not the store's.
            if !(error is CancellationError), !(error is FeedItemNotFound), !(error is FeedVersionMismatch), !Task.isCancelled {
                metrics.storeFailed(operation)
            }
            throw error
        }
    }
}
