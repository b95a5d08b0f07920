import NIOCore
import Synchronization

/// The feed's head as this server knows it, and who hears when it moves.
///
/// The head moves when a publish commits, when a refresh stores items it pulled upstream,
/// and (with a shared store) when another instance says so. It only ever moves forward: a
/// report at or below the known head changes nothing, so the same news arriving by two
/// paths is told once.
public final class NewsHub: Sendable {
    private struct State {
        var head: FeedHead?
        var observers: [@Sendable (FeedHead) -> Void] = []
        /// Reads of "what came after p" for live sessions since the head last moved.
        var reads: [FeedPosition: Task<FeedPage?, Never>] = [:]
    }

    private let state = Mutex(State())
    /// The head's position alone, read on every sample of a live session without a lock.
    private let knownPosition = Atomic<FeedPosition>(0)

    public init() {}

    /// The newest head reported so far.
    public var head: FeedHead? { state.withLock { $0.head } }

    /// Where the head is; 0 before any news.
    var position: FeedPosition { knownPosition.load(ordering: .acquiring) }

    /// Moves the head forward to `head` and tells the observers, outside the lock and in the
    /// caller's task: a publish is answered once every session has its news queued.
    public func advance(to head: FeedHead) {
        let observers = state.withLock { state -> [@Sendable (FeedHead) -> Void] in
            guard head.position > state.head?.position ?? 0 else { return [] }
            state.head = head
            state.reads.removeAll()
            knownPosition.store(head.position, ordering: .releasing)
            return state.observers
        }
        for observer in observers { observer(head) }
    }

    /// Reads the head from `feed` and moves to it: after a commit, everything up to the head
    /// read is visible to every reader.
    func catchUp(with feed: any FeedSource) async throws {
        if let head = try await feed.head() { advance(to: head) }
    }

    /// What the feed gained after `position`, read once for every live session that shows
    /// it, until the head moves again; `nil` when the store failed.
    func added(after position: FeedPosition, in feed: any FeedSource, limit: Int) async -> FeedPage? {
        let read = state.withLock { state in
            if let read = state.reads[position] { return read }
            let read = Task { try? await feed.added(after: position, limit: limit) }
            state.reads[position] = read
            return read
        }
        return await read.value
    }

    func observe(_ observer: @escaping @Sendable (FeedHead) -> Void) {
        state.withLock { $0.observers.append(observer) }
    }
}

/// The `news` payloads of one head, built once for each position a session shows: ten
/// thousand sessions that show the same items share one encoding, and only their event's
/// `id:` line differs.
final class NewsPayloads {
    let head: FeedHead
    private var byShown: [FeedPosition: ByteBuffer] = [:]

    init(head: FeedHead) {
        self.head = head
    }

    func data(shown: FeedPosition) -> ByteBuffer {
        if let data = byShown[shown] { return data }
        let data = EventData.news(count: head.position - shown, head: head)
        byShown[shown] = data
        return data
    }
}
