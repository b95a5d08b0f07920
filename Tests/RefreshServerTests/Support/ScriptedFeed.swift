import Synchronization

@testable import RefreshFeed
@testable import RefreshServer

/// A point a feed's work waits at until the test opens it (or two minutes pass), so a test
/// decides what runs when, not the machine's speed.
final class Gate: Sendable {
    private let isOpen = Atomic(false)

    func open() { isOpen.store(true, ordering: .releasing) }

    func wait() async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while !isOpen.load(ordering: .acquiring), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    }
}

/// A memory feed whose update takes its time in steps, counts its calls, and can fail or
/// hang, so tests can watch progress, share flights, cancel and time out.
final class ScriptedFeed: ForwardingFeed {
    enum Behaviour: Sendable {
        case steps(Int, every: Duration)
        case fail(String)
        case hang
        /// Reports the stage `gated`, then waits behind the gate, then completes.
        case gated(Gate)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let memory: MemoryFeed
    let behaviour: Behaviour
    /// How long reading older items takes, so a load-more can be caught running.
    let olderDelay: Duration
    /// What reading older items waits behind, so a load-more is caught running for sure.
    let olderGate: Gate?
    private let calls = Mutex(0)

    /// Reading the head fails too, as a store that is gone would.
    let headFails: Bool

    init(items: [FeedItem] = [], behaviour: Behaviour, olderDelay: Duration = .zero, olderGate: Gate? = nil, headFails: Bool = false) {
        memory = MemoryFeed(items: items)
        self.behaviour = behaviour
        self.olderDelay = olderDelay
        self.olderGate = olderGate
        self.headFails = headFails
    }

    var updateCalls: Int { calls.withLock { $0 } }
    var forwarded: any FeedSource { memory }

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
        case .gated(let gate):
            progress(FeedProgress(fraction: 0.1, stage: "gated", message: "Waiting for the test"))
            try await gate.wait()
            progress(FeedProgress(fraction: 1, stage: "done", message: "Done"))
            return FeedUpdate(added: 0, message: "Up to date")
        }
    }

    func older(than position: FeedPosition?, limit: Int) async throws -> FeedPage {
        if olderDelay > .zero { try await Task.sleep(for: olderDelay) }
        try await olderGate?.wait()
        return try await memory.older(than: position, limit: limit)
    }
    func head() async throws -> FeedHead? {
        if headFails, case .fail(let message) = behaviour { throw Failure(description: message) }
        return try await memory.head()
    }
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
