import NIOCore
import RefreshFeed
import Synchronization

/// What the hub tells of a move of the feed's head: a session with open streams, known to
/// the hub only by this.
protocol NewsListener: AnyObject, Sendable {
    /// On the event loop of the streams the listener was registered with.
    func headAdvanced(_ payloads: NewsPayloads)
}

/// One feed's head as this server knows it, and the fan-out that tells every open page of
/// that feed (and no other: each feed with sessions here has its own, from ``FeedRegistry``).
///
/// The head moves when a publish commits, when a refresh stores items it pulled upstream,
/// and (with a shared store) when another instance says so. It only ever moves forward: a
/// report at or below the known head changes nothing, so the same news arriving by two
/// paths is told once.
///
/// A move is one task per event loop. In it, each session with a stream on that loop
/// appends its `news` (encoded once per position shown, in that task) and its streams there
/// write at once: the loops work in parallel, and nothing is queued per session (only a
/// session with streams on several loops queues a wake-up for the others). A session with
/// no open stream is told when a stream opens.
final class FeedNews: Sendable {
    private struct State {
        var head: FeedHead?
        /// Reads of "what came after p" for live sessions since the head last moved.
        var reads: [FeedPosition: Task<LiveRead?, Never>] = [:]
        /// Sessions with open streams, by the event loop the streams live on.
        var loops: [ObjectIdentifier: LoopStreams] = [:]
    }

    private let state = Mutex(State())
    /// The head's position alone, read on every sample of a live session without a lock.
    private let knownPosition = Atomic<FeedPosition>(0)
    /// The feed whose head this is, read by every catch-up and live read.
    let feed: any FeedSource
    /// Where the fan-out's latency goes.
    let metrics: ServerMetrics

    init(feed: any FeedSource, metrics: ServerMetrics) {
        self.feed = feed
        self.metrics = metrics
    }

    /// The newest head reported so far.
    var head: FeedHead? { state.withLock { $0.head } }

    /// Where the head is; 0 before any news.
    var position: FeedPosition { knownPosition.load(ordering: .acquiring) }

    /// Moves the head forward to `head` and tells every event loop; returns once each loop
    /// has told its sessions, so a publish is answered after every open page has its news.
    func advance(to head: FeedHead) async {
        let moved = ContinuousClock.now
        let loops = state.withLock { state -> [LoopStreams] in
            guard head.position > state.head?.position ?? 0 else { return [] }
            state.head = head
            state.reads.removeAll()
            knownPosition.store(head.position, ordering: .releasing)
            return Array(state.loops.values)
        }
        // Each loop says when its streams have written; the latency is the last of them, over
        // the loops that had a session to tell.
        let told = loops.map { streams in
            streams.loop.submit {
                let sessions = streams.announce(head)
                return sessions > 0 ? ContinuousClock.now : nil
            }
        }
        var last: ContinuousClock.Instant?
        for loop in told {
            if let written = (try? await loop.get()) ?? nil { last = max(last ?? written, written) }
        }
        if let last { metrics.newsFannedOut(in: last - moved) }
    }

    /// Reads the head from the feed and moves to it: after a commit, everything up to the head
    /// read is visible to every reader. It runs to the end even when the caller is cancelled
    /// (a client that hangs up once its publish committed): the news must not go with it. A
    /// store that fails here is read again by the next catch-up, at the latest the periodic one.
    func catchUp() async {
        await Task { [feed] in
            if let head = try? await feed.head() { await advance(to: head) }
        }.value
    }

    /// What the feed gained after `position`, read and encoded once for every live session
    /// that shows it, until the head moves again; `nil` when the store failed.
    func added(after position: FeedPosition, limit: Int) async -> LiveRead? {
        let read = state.withLock { state in
            if let read = state.reads[position] { return read }
            let read = Task { [feed] in (try? await feed.added(after: position, limit: limit)).map(LiveRead.init) }
            state.reads[position] = read
            return read
        }
        return await read.value
    }

    // MARK: - Streams

    /// `listener`'s first stream on `group`'s event loop opened.
    func streamsOpened(_ group: LoopListeners, of listener: any NewsListener) {
        let streams = state.withLock { state in
            let key = ObjectIdentifier(group.loop)
            if let streams = state.loops[key] { return streams }
            let streams = LoopStreams(loop: group.loop)
            state.loops[key] = streams
            return streams
        }
        streams.members.withLock { $0[ObjectIdentifier(group)] = listener }
    }

    /// The last of them closed.
    func streamsClosed(_ group: LoopListeners) {
        let streams = state.withLock { $0.loops[ObjectIdentifier(group.loop)] }
        _ = streams?.members.withLock { $0.removeValue(forKey: ObjectIdentifier(group)) }
    }
}

/// The sessions with streams on one event loop, by their group of streams there.
private final class LoopStreams: Sendable {
    let loop: any EventLoop
    let members = Mutex<[ObjectIdentifier: any NewsListener]>([:])

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// On `loop`: every session appends its news, and its streams here write it. Answers how
    /// many sessions were told.
    func announce(_ head: FeedHead) -> Int {
        let payloads = NewsPayloads(head: head)
        let listeners = members.withLock { Array($0.values) }
        for listener in listeners {
            listener.headAdvanced(payloads)
        }
        return listeners.count
    }
}

/// New items for live pages, with their `items` payload encoded once for all of them.
struct LiveRead: Sendable {
    let page: FeedPage
    private let more: ByteBuffer
    private let noMore: ByteBuffer

    init(page: FeedPage) {
        self.page = page
        let op = ActionResult.Op.prepend.rawValue
        more = EventData.items(action: nil, op: op, items: page.items, hasMore: true, head: page.head)
        noMore = EventData.items(action: nil, op: op, items: page.items, hasMore: false, head: page.head)
    }

    /// The payload for a page that has older items to load or not.
    func data(hasMore: Bool) -> ByteBuffer { hasMore ? more : noMore }
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
