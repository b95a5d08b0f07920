@testable import RefreshFeed

/// A test's feed that passes every call to `forwarded`, but the one or two it is there to
/// change (a read that waits, a write that fails).
protocol ForwardingFeed: FeedSource {
    var forwarded: any FeedSource { get }
}

extension ForwardingFeed {
    func update(progress: @escaping ProgressSink) async throws -> FeedUpdate { try await forwarded.update(progress: progress) }
    func added(after position: FeedPosition, limit: Int) async throws -> FeedPage { try await forwarded.added(after: position, limit: limit) }
    func older(than position: FeedPosition?, limit: Int) async throws -> FeedPage { try await forwarded.older(than: position, limit: limit) }
    func head() async throws -> FeedHead? { try await forwarded.head() }
    func publishing(_ items: [FeedItem]) async throws -> FeedWrite { try await forwarded.publishing(items) }
    func replace(_ item: FeedItem, ifVersion version: FeedVersion?) async throws -> FeedWrite {
        try await forwarded.replace(item, ifVersion: version)
    }
    func remove(id: String, ifVersion version: FeedVersion?) async throws -> FeedWrite { try await forwarded.remove(id: id, ifVersion: version) }
    func changes(since version: FeedVersion, within positions: ClosedRange<FeedPosition>, limit: Int) async throws -> FeedChanges? {
        try await forwarded.changes(since: version, within: positions, limit: limit)
    }
    func forgetRemovals(before time: Timestamp) async throws -> Int { try await forwarded.forgetRemovals(before: time) }
    func item(id: String) async throws -> FeedItem? { try await forwarded.item(id: id) }
    func position(of id: String) async throws -> FeedPosition? { try await forwarded.position(of: id) }
}
