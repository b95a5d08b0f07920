import NIOCore

/// An open event stream as a session's log sees it: an object that lives on one event loop
/// and is woken there, by a task the log schedules, when it has something to send.
///
/// Streams are woken per event loop, not one by one: an event for ten thousand streams
/// costs one task per loop, and each stream then writes the shared frames itself.
protocol EventListener: AnyObject, Sendable {
    var eventLoop: any EventLoop { get }
    /// On `eventLoop`. `replay` is shared by the streams woken together, so the events
    /// after a common cursor are looked up once for all of them.
    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache)
}

/// The last lookup of "events after this cursor" in one wake-up round.
struct ReplayCache {
    private var cursor: UInt64?
    private var answer: (events: [ServerEvent], cursor: UInt64) = ([], 0)

    mutating func events(
        after cursor: UInt64, lookup: (UInt64) -> (events: [ServerEvent], cursor: UInt64)
    ) -> (events: [ServerEvent], cursor: UInt64) {
        if cursor != self.cursor {
            answer = lookup(cursor)
            self.cursor = cursor
        }
        return answer
    }
}

/// The open streams of one session, grouped by the event loop each lives on.
struct ListenerGroups: Sendable {
    private struct Group: Sendable {
        let loop: any EventLoop
        var members: [any EventListener] = []
        var positions: [ObjectIdentifier: Int] = [:]
    }

    private var groups: [Group] = []
    private(set) var count = 0

    mutating func insert(_ listener: any EventListener) {
        let loop = listener.eventLoop
        let index = groups.firstIndex { $0.loop === loop } ?? {
            groups.append(Group(loop: loop))
            return groups.count - 1
        }()
        groups[index].positions[ObjectIdentifier(listener)] = groups[index].members.count
        groups[index].members.append(listener)
        count += 1
    }

    /// Removes in O(1): the last member takes the leaver's place.
    mutating func remove(_ listener: any EventListener) {
        let key = ObjectIdentifier(listener)
        guard let index = groups.firstIndex(where: { $0.loop === listener.eventLoop }),
            let position = groups[index].positions.removeValue(forKey: key)
        else { return }
        let last = groups[index].members.removeLast()
        if position < groups[index].members.count {
            groups[index].members[position] = last
            groups[index].positions[ObjectIdentifier(last)] = position
        }
        if groups[index].members.isEmpty { groups.remove(at: index) }
        count -= 1
    }

    mutating func removeAll() {
        groups.removeAll()
        count = 0
    }

    /// The wake-up of every stream, to be fired once the session's lock is released.
    func wakeup(_ reason: Wakeup.Reason) -> Wakeup? {
        groups.isEmpty ? nil : Wakeup(reason: reason, groups: groups.map { ($0.loop, $0.members) })
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
    let groups: [(loop: any EventLoop, members: [any EventListener])]

    func fire() {
        for group in groups {
            group.loop.execute { [reason] in
                var replay = ReplayCache()
                for member in group.members { member.wake(reason, replay: &replay) }
            }
        }
    }
}
