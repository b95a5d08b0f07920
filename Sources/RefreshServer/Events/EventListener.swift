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

/// The last lookup of "events after this cursor" in one wake-up round.
struct ReplayCache {
    struct Answer {
        var events: [ServerEvent]
        var cursor: UInt64
        /// The events' frames as one HTTP chunk, ready for the socket; `nil` when they are
        /// more than a stream writes at once (``EventStream/maxBatchBytes``): a reader that
        /// was stalled catches up batch by batch, and a chunk of it all would only be copied.
        var chunk: ByteBuffer?
        /// Superseded events left out (see ``Session/Delivery``).
        var coalesced = 0
        /// When the samples request behind the `state` event among them arrived, until the
        /// first stream that writes them takes it.
        var sampleArrival: ContinuousClock.Instant?
    }

    private var cursor: UInt64?
    private var answer = Answer(events: [], cursor: 0)

    /// The events after `cursor`, looked up again only for another cursor or when the log
    /// has grown since: a round writing to many streams takes a while, and the streams it
    /// reaches late get what arrived meanwhile in the same write, not in a second round.
    mutating func events(after cursor: UInt64, newest: () -> UInt64, lookup: (UInt64) -> Session.Delivery) -> Answer {
        if cursor != self.cursor || newest() > answer.cursor {
            let delivery = lookup(cursor)
            let events = delivery.events
            let bytes = events.reduce(0) { $0 + $1.frame.readableBytes }
            answer = Answer(
                events: events, cursor: delivery.cursor,
                chunk: events.isEmpty || bytes > EventStream.maxBatchBytes ? nil : HTTPChunk.frame(events.map(\.frame)),
                coalesced: delivery.coalesced, sampleArrival: delivery.sampleArrival)
            self.cursor = cursor
        }
        return answer
    }

    /// When the samples request behind the `state` event just written arrived: once, for
    /// the first stream of the round that wrote it.
    mutating func takeSampleArrival() -> ContinuousClock.Instant? {
        defer { answer.sampleArrival = nil }
        return answer.sampleArrival
    }
}

/// The open streams of one event loop, for one session. Its member list is read by the
/// wake-up task, so it sits in its own lock, changed only under the session's.
final class LoopListeners: Sendable {
    let loop: any EventLoop
    let members = Mutex<[any EventListener]>([])
    /// A news wake-up is queued on `loop` and has not started: another can join it.
    let newsQueued = Atomic<Bool>(false)

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Wakes the current members on `loop`, in this call when already there.
    func wake(_ reason: Wakeup.Reason) {
        if loop.inEventLoop {
            wakeMembers(reason)
        } else if reason != .news || !newsQueued.exchange(true, ordering: .acquiringAndReleasing) {
            loop.execute { [self] in
                // Cleared before reading the log: news appended from here on queues a new wake.
                if reason == .news { newsQueued.store(false, ordering: .releasing) }
                wakeMembers(reason)
            }
        }
    }

    /// On `loop`: wakes the members now.
    func wakeMembers(_ reason: Wakeup.Reason) {
        var replay = ReplayCache()
        for member in members.withLock({ $0 }) { member.wake(reason, replay: &replay) }
    }
}

/// The open streams of one session, grouped by the event loop each lives on.
struct ListenerGroups: Sendable {
    private var groups: [LoopListeners] = []
    /// Each listener's index in its group's member list.
    private var positions: [ObjectIdentifier: Int] = [:]

    var count: Int { positions.count }

    /// Answers the listener's group when it is the first on its event loop.
    mutating func insert(_ listener: any EventListener) -> LoopListeners? {
        let loop = listener.eventLoop
        var created: LoopListeners?
        let group =
            groups.first { $0.loop === loop }
            ?? {
                let group = LoopListeners(loop: loop)
                groups.append(group)
                created = group
                return group
            }()
        positions[ObjectIdentifier(listener)] = group.members.withLock { members in
            members.append(listener)
            return members.count - 1
        }
        return created
    }

    /// Removes in O(1): the last member takes the leaver's place. Answers the listener's
    /// group when it was the last on its event loop.
    mutating func remove(_ listener: any EventListener) -> LoopListeners? {
        guard let position = positions.removeValue(forKey: ObjectIdentifier(listener)),
            let index = groups.firstIndex(where: { $0.loop === listener.eventLoop })
        else { return nil }
        let (moved, empty) = groups[index].members.withLock { members in
            let last = members.removeLast()
            guard position < members.count else { return (nil as (any EventListener)?, members.isEmpty) }
            members[position] = last
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

    /// The wake-up of every stream, to be fired once the session's lock is released.
    func wakeup(_ reason: Wakeup.Reason) -> Wakeup? {
        groups.isEmpty ? nil : Wakeup(reason: reason, groups: groups)
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
    }

    let reason: Reason
    let groups: [LoopListeners]

    /// Streams on the calling event loop are woken at once, before the caller goes on: a
    /// sample's state event is written before the POST that caused it is answered.
    func fire() {
        for group in groups { group.wake(reason) }
    }
}
