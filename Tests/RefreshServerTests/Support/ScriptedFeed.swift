import Synchronization

@testable import RefreshFeed
@testable import RefreshServer

/// A memory feed whose update takes its time in steps, counts its calls, and can fail or
/// hang, so tests can watch progress, share flights, cancel and time out.
final class ScriptedFeed: FeedSource {
    enum Behaviour: Sendable {
        case steps(Int, every: Duration)
        case fail(String)
        case hang
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let memory: MemoryFeed
    let behaviour: Behaviour
    /// How long reading older items takes, so a load-more can be caught running.
    let olderDelay: Duration
    private let calls = Mutex(0)

    /// Reading the head fails too, as a store that is gone would.
    let headFails: Bool

    init(items: [FeedItem] = [], behaviour: Behaviour, olderDelay: Duration = .zero, headFails: Bool = false) {
        memory = MemoryFeed(items: items)
        self.behaviour = behaviour
        self.olderDelay = olderDelay
        self.headFails = headFails
    }

    var updateCalls: Int { calls.withLock { $0 } }

    func update(progress: @escaping ProgressSink) async throws -> FeedUpdate {
        calls.withLock { $0 += 1 }
        switch behaviour {
        case .steps(let count, let every):
            for step in 1...count {
                try await Task.sleep(for: every)
                progress(FeedProgress(fraction: Double(step) / Double(count), stage: "downloading", message: "Step \(step) of \(count)"))
            }
            return FeedUpdate(added: 0, message: "Up to date")
        case .fail(let message):
            throw Failure(description: message)
        case .hang:
            try await Task.sleep(for: .seconds(3600))
            return FeedUpdate(added: 0, message: "")
        }
    }

    func older(than position: FeedPosition?, limit: Int) async throws -> FeedPage {
        if olderDelay > .zero { try await Task.sleep(for: olderDelay) }
        return try await memory.older(than: position, limit: limit)
    }
    func added(after position: FeedPosition, limit: Int) async throws -> FeedPage { try await memory.added(after: position, limit: limit) }
    func head() async throws -> FeedHead? {
        if headFails, case .fail(let message) = behaviour { throw Failure(description: message) }
        return try await memory.head()
    }
    func publish(_ items: [FeedItem]) async throws -> [FeedItem] { try await memory.publish(items) }
    func item(id: String) async throws -> FeedItem? { try await memory.item(id: id) }
    func position(of id: String) async throws -> FeedPosition? { try await memory.position(of: id) }
}

func items(_ count: Int, from newest: Int64 = 1_800_000_000_000, prefix: String = "item") -> [FeedItem] {
    (0..<count).map { index in
        FeedItem(id: "\(prefix)-\(index)", title: "\(prefix) \(index)", published: Timestamp(milliseconds: newest - Int64(index) * 60_000))
    }
}

/// Every id of a feed, page by page through `older(than:)`, as a client pages.
func allIDsByPaging(_ feed: any FeedSource, limit: Int) async throws -> [String] {
    var seen: [String] = []
    var position: FeedPosition?
    var hasMore = true
    while hasMore {
        let page = try await feed.older(than: position, limit: limit)
        seen += page.items.map(\.id)
        position = page.items.last?.position
        hasMore = page.hasMore
    }
    return seen
}
