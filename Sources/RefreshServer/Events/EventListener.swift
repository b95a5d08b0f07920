import NIOCore
import RefreshHTTP
import Synchronization

/// An open event stream as a session's log sees it: an object that lives on one event loop
/// and is woken there when it has something to send.
///
/// Streams are woken per event loop, not one by one: news for ten thousand streams costs
/// one task per loop, and every stream then writes the same framed bytes.
protocol EventListener: AnyObject, Sendable {
    var eventLoop: any EventLoop { get }
    /// On `eventLoop`. `replay` is shared by the streams woken together, so the events
    /// after a common cursor are looked up, joined and framed once for all of them.
    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache)
}

/// What the streams woken together share in one wake-up round: the events the wake-up
/// carries, framed once, and the last lookup of "events after this cursor" in the log.
struct ReplayCache {
    struct Answer {
        var events: [ServerEvent]
        var cursor: UInt64
        /// The events' frames as one HTTP chunk, ready for the socket, as the one part of a
        /// write (an array every stream of the round shares; a lone event's own chunk, not a
        /// copy of it); `nil` when they are more than a
        /// stream writes at once (``ReplayCache/maxBatchBytes``): a reader that was stalled
        /// catches up batch by batch, and a chunk of it all would only be copied.
        var parts: [ByteBuffer]?
        /// Superseded events left out (see ``Delivery``).
        var coalesced = 0
        /// When the samples request behind the `state` event among them arrived, until the
        /// first stream that writes them takes it.
        var sampleArrival: ContinuousClock.Instant?

        init(events: [ServerEvent], cursor: UInt64, coalesced: Int, sampleArrival: ContinuousClock.Instant?) {
            self.events = events
            self.cursor = cursor
            let bytes = events.reduce(0) { $0 + $1.frameBytes }
            if events.isEmpty || bytes > ReplayCache.maxBatchBytes {
                parts = nil
            } else {
                parts = [events.count == 1 ? events[0].chunk : HTTPChunk.frame(events.lazy.map(\.frame))]
            }
            self.coalesced = coalesced
            self.sampleArrival = sampleArrival
        }
    }

    /// The most a stream writes at once, and the most a wake-up's shared chunk holds: a
    /// reader that resumes after a long stall is sent its session's ring (up to
    /// `--replay-buffer-bytes`) batch by batch as its socket drains, not in one write that
    /// the server would hold for it, per stalled reader, until the client had read it all.
    static let maxBatchBytes = 32 * 1024

    /// The events the wake-up brought, and the id they start after.
    private var announced: (from: UInt64, answer: Answer)?
    private var cursor: UInt64?
    private var answer = Answer(events: [], cursor: 0, coalesced: 0, sampleArrival: nil)
    private var roundInstant: ContinuousClock.Instant?

    init(_ announcement: Announcement? = nil) {
        announced = announcement.map {
            ($0.from, Answer(events: $0.events, cursor: $0.through, coalesced: $0.coalesced, sampleArrival: $0.sampleArrival))
        }
    }

    /// What the wake-up brought for a stream at `cursor`: its events when the stream was at
    /// their start, nothing when it is already past them, `nil` when only the log can say.
    func announced(after cursor: UInt64) -> Answer? {
        guard let announced else { return nil }
        if cursor == announced.from { return announced.answer }
        if cursor >= announced.answer.cursor { return Answer(events: [], cursor: cursor, coalesced: 0, sampleArrival: nil) }
        return nil
    }

    /// The events after `cursor`, looked up again only for another cursor or when the log
    /// has grown since: a round writing to many streams takes a while, and the streams it
    /// reaches late get what arrived meanwhile in the same write, not in a second round.
    mutating func events(after cursor: UInt64, lookup: (_ cursor: UInt64, _ known: UInt64?) -> Delivery?) -> Answer {
        if let delivery = lookup(cursor, cursor == self.cursor ? answer.cursor : nil) {
            answer = Answer(events: delivery.events, cursor: delivery.cursor, coalesced: delivery.coalesced, sampleArrival: nil)
            self.cursor = cursor
        }
        return answer
    }

    /// The instant the streams of this round write at, as their quiet time counts it (a
    /// keepalive is due only after seconds): read once for the round, not once per stream, and
    /// not at all when the round carries a sample's `state` event, whose arrival is as good.
    mutating func instant() -> ContinuousClock.Instant {
        if let roundInstant { return roundInstant }
        let instant = announced?.answer.sampleArrival ?? .now
        roundInstant = instant
        return instant
    }

    /// When the samples request behind the `state` event just written arrived: once, for
    /// the first stream of the round that wrote it.
    mutating func takeSampleArrival() -> ContinuousClock.Instant? {
        guard let arrival = announced?.answer.sampleArrival else { return nil }
        announced?.answer.sampleArrival = nil
        return arrival
    }
}

/// What an open stream is sent after its cursor, looked up in the log.
struct Delivery: Sendable {
    var events: [ServerEvent]
    var cursor: UInt64
    /// Superseded `state` and `news` events between the cursor and the newest, left out.
    var coalesced = 0
    /// The log no longer has what followed the cursor: `events` are a reset and a snapshot.
    var gap = false
}

/// The open streams of one event loop, for one session. Its member list is read by the
/// wake-up task, so it sits in its own lock, changed only under the session's.
final class LoopListeners: Sendable {
    struct Shared {
        var members: [any EventListener] = []
        /// The events of news wake-ups queued on `loop` that have not started.
        var pending: Announcement?
        /// A news wake-up is queued on `loop` and has not started: another joins it.
        var queued = false
        /// The newest event id a wake-up here has handed its members: the log keeps what
        /// follows it, whatever its bounds, until a wake-up here has run with it.
        var wokenThrough: UInt64

        init(wokenThrough: UInt64) {
            self.wokenThrough = wokenThrough
        }
    }

    let loop: any EventLoop
    let shared: Mutex<Shared>

    /// `announced`: the newest id the session's streams were woken for before this group.
    init(loop: any EventLoop, announced: UInt64 = 0) {
        self.loop = loop
        shared = Mutex(Shared(wokenThrough: announced))
    }

    /// Wakes the current members on `loop`, in this call when already there.
    func wake(_ reason: Wakeup.Reason, _ news: Announcement?) {
        if loop.inEventLoop {
            wakeMembers(reason, news)
        } else if reason != .news {
            loop.execute { [self] in wakeMembers(reason, nil) }
        } else {
            let queue = shared.withLock { shared in
                if let news { shared.pending = shared.pending.map { $0.merged(with: news) } ?? news }
                defer { shared.queued = true }
                return !shared.queued
            }
            guard queue else { return }
            loop.execute { [self] in
                // Taken before the streams write: news appended from here on queues a new wake.
                let (members, news) = shared.withLock { shared in
                    shared.queued = false
                    defer { shared.pending = nil }
                    return (shared.members, shared.pending)
                }
                wake(members, .news, news)
            }
        }
    }

    /// On `loop`: wakes the members now.
    func wakeMembers(_ reason: Wakeup.Reason, _ news: Announcement? = nil) {
        wake(shared.withLock { $0.members }, reason, news)
    }

    private func wake(_ members: [any EventListener], _ reason: Wakeup.Reason, _ news: Announcement?) {
        var replay = ReplayCache(news)
        var carried = news
        for (index, member) in members.enumerated() {
            if reason == .news, index > 0, index.isMultiple(of: Self.membersBetweenLooks), let newer = newsSince(carried) {
                replay = ReplayCache(newer)
                carried = newer
            }
            member.wake(reason, replay: &replay)
        }
        if let carried { shared.withLock { $0.wokenThrough = max($0.wokenThrough, carried.through) } }
    }

    /// How many streams a round writes between two looks at the news queued behind it.
    static let membersBetweenLooks = 64

    /// A round to many streams takes a while, and what the session appended meanwhile waits in
    /// ``Shared/pending`` for the next round: the streams this round has yet to reach take it
    /// now, with what the round carries, in one write instead of two (a refresh's start, then
    /// its items). The next round still comes, for the streams already written to; the later
    /// ones, already past it, write nothing then.
    private func newsSince(_ carried: Announcement?) -> Announcement? {
        guard let carried, let pending = shared.withLock({ $0.pending }) else { return nil }
        var merged = carried.merged(with: pending)
        guard merged.through > carried.through else { return nil }
        // The latency of a sample behind these events is taken by the round that carries them
        // first, at its first stream: this one already did for the events it carried, and the
        // next round does for the rest.
        merged.sampleArrival = nil
        return merged
    }
}

/// The open streams of one session, grouped by the event loop each lives on.
struct ListenerGroups: Sendable {
    private var groups: [LoopListeners] = []
    /// Each listener's index in its group's member list.
    private var positions: [ObjectIdentifier: Int] = [:]

    var count: Int { positions.count }

    /// Answers the listener's group when it is the first on its event loop. `announced`: the
    /// newest id the streams were woken for so far.
    mutating func insert(_ listener: any EventListener, announced: UInt64) -> LoopListeners? {
        let loop = listener.eventLoop
        var created: LoopListeners?
        let group =
            groups.first { $0.loop === loop }
            ?? {
                let group = LoopListeners(loop: loop, announced: announced)
                groups.append(group)
                created = group
                return group
            }()
        positions[ObjectIdentifier(listener)] = group.shared.withLock { shared in
            shared.members.append(listener)
            return shared.members.count - 1
        }
        return created
    }

    /// Removes in O(1): the last member takes the leaver's place. Answers the listener's
    /// group when it was the last on its event loop.
    mutating func remove(_ listener: any EventListener) -> LoopListeners? {
        guard let position = positions.removeValue(forKey: ObjectIdentifier(listener)),
            let index = groups.firstIndex(where: { $0.loop === listener.eventLoop })
        else { return nil }
        let (moved, empty) = groups[index].shared.withLock { shared in
            let last = shared.members.removeLast()
            guard position < shared.members.count else { return (nil as (any EventListener)?, shared.members.isEmpty) }
            shared.members[position] = last
            return (last, false)
        }
        if let moved { positions[ObjectIdentifier(moved)] = position }
        return empty ? groups.remove(at: index) : nil
    }

    mutating func removeAll() -> [LoopListeners] {
        defer {
            groups = []
            positions = [:]
        }
        return groups
    }

    /// The newest id every event loop's wake-ups have handed their streams: what follows
    /// may still be on its way to a wake-up, which carries it, and a stream that asks the
    /// log meanwhile (its socket drained, the keepalive tick) must find it there.
    func wokenThrough() -> UInt64 {
        groups.lazy.map { $0.shared.withLock { $0.wokenThrough } }.min() ?? .max
    }

    /// The wake-up of every stream, to be fired once the session's lock is released.
    func wakeup(_ reason: Wakeup.Reason, _ news: Announcement? = nil) -> Wakeup? {
        groups.isEmpty ? nil : Wakeup(reason: reason, groups: groups, news: news)
    }

}

/// Streams to wake, one task per event loop. Built under a session's lock, fired after it.
struct Wakeup: Sendable {
    enum Reason: Sendable {
        /// Events were appended.
        case news
        /// The keepalive tick: a stream quiet for a while sends a comment.
        case tick
        /// The session ended: streams end their responses.
        case sessionEnded
        /// The token the stream was opened with is about to expire: that stream ends its
        /// response, and its reader comes back with a renewed one.
        case accessExpired
    }

    let reason: Reason
    let groups: [LoopListeners]
    /// The events appended, for a news wake-up.
    var news: Announcement?

    /// Streams on the calling event loop are woken at once, before the caller goes on: a
    /// sample's state event is written before the POST that caused it is answered.
    func fire() {
        for group in groups { group.wake(reason, news) }
    }
}
