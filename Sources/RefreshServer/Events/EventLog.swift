import NIOCore

/// A session's events: numbered, kept in a ring bounded in events and in bytes for replay,
/// and announced to the open streams. The byte bound is what holds memory: a refresh's
/// `items` event can be hundreds of kilobytes, and every session keeps its own. An event
/// goes once the events after it fill the bound by themselves: a session holds less than the
/// bound and one event, and a reader is told it has a gap only when what it missed after
/// the first event it lacks fills the bound (a page of long items as large as the bound
/// stays for the reader whose socket was busy when the page and then its `done` came).
///
/// Only the newest `state` and the newest `news` event are kept (each supersedes every
/// earlier one of its kind), outside the ring, so a fast drag or a burst of publishes cannot
/// push `progress`, `items` or `done` out of the replay buffer, and a slow reader or a
/// replay gets only the latest of each. A reader that asks for events the ring no longer
/// has learns it has a gap.
struct EventLog: Sendable {
    private let capacity: Int
    private let maxBytes: Int
    private(set) var lastID: UInt64 = 0
    /// Non-`state` events, oldest first.
    private var ring = CircularBuffer<ServerEvent>()
    /// What the ring's events take, by their chunks' capacity.
    private(set) var bytes = 0
    /// The newest `state` event: the engine's current state, already encoded.
    private(set) var latestState: ServerEvent?
    /// The newest `news` event.
    private(set) var latestNews: ServerEvent?
    /// Newest id of an event dropped for room; a reader behind it has missed something.
    private var droppedThrough: UInt64 = 0
    /// The open streams: woken, not handed copies of the events.
    private var listeners = ListenerGroups()
    /// Events appended since the streams were last woken, oldest first.
    private var unannounced: [ServerEvent] = []
    /// The newest id the streams were woken for.
    private var announcedThrough: UInt64 = 0

    init(capacity: Int, maxBytes: Int = .max) {
        self.capacity = max(1, capacity)
        self.maxBytes = maxBytes
    }

    var openStreams: Int { listeners.count }

    @discardableResult
    mutating func append(_ kind: ServerEvent.Kind, _ data: ByteBuffer) -> ServerEvent {
        lastID += 1
        let event = ServerEvent(id: lastID, kind: kind, data: data)
        if kind == .state {
            latestState = event
        } else if kind == .news {
            latestNews = event
        } else {
            ring.append(event)
            bytes += event.chunk.capacity
            // The oldest go first, while the ring holds more events than its count or the
            // events after the oldest fill the byte bound without it (a `done` right after a
            // page as large as the bound does not take the page). A reader that keeps up does
            // not need the ring: the wake-up that follows an append carries the events
            // themselves (``Announcement``), so only a reader already behind by the bound's
            // worth reads past what is kept, and is told it has a gap.
            // An event a wake-up has yet to hand the streams stays too: one on its way to a
            // busy event loop is not taken from a stream that asks the log first.
            var woken: UInt64?
            while let oldest = ring.first, ring.count > 1, ring.count > capacity || bytes - oldest.chunk.capacity >= maxBytes {
                if woken == nil { woken = listeners.wokenThrough() }
                guard let woken, oldest.id <= woken else { break }
                ring.removeFirst()
                bytes -= oldest.chunk.capacity
                droppedThrough = oldest.id
            }
        }
        unannounced.append(event)
        return event
    }

    enum Replay {
        case events([ServerEvent])
        /// Events after the cursor are gone (or the cursor is not from this log).
        case gap
    }

    /// Everything after `cursor`, in order, with superseded states left out. Every open
    /// stream asks this on every wake-up, so it finds its place by binary search, not a scan.
    func events(after cursor: UInt64) -> Replay {
        guard cursor >= droppedThrough, cursor <= lastID else { return .gap }
        if cursor == lastID { return .events([]) }
        var low = 0
        var high = ring.count
        while low < high {
            let middle = (low + high) / 2
            if ring[ring.index(ring.startIndex, offsetBy: middle)].id <= cursor { low = middle + 1 } else { high = middle }
        }
        // The kept `state` and `news` go where their ids put them among the ring's events;
        // every stream asks this on every wake-up, so without building a list of them.
        var first = latestState.flatMap { $0.id > cursor ? $0 : nil }
        var second = latestNews.flatMap { $0.id > cursor ? $0 : nil }
        if first == nil || (second != nil && second!.id < first!.id) { swap(&first, &second) }
        var result: [ServerEvent] = []
        result.reserveCapacity(ring.count - low + 2)
        for event in ring[ring.index(ring.startIndex, offsetBy: low)...] {
            while let kept = first, kept.id < event.id {
                result.append(kept)
                first = second
                second = nil
            }
            result.append(event)
        }
        if let first { result.append(first) }
        if let second { result.append(second) }
        return .events(result)
    }

    /// Answers the listener's group when it is the first on its event loop.
    mutating func addListener(_ listener: any EventListener) -> LoopListeners? {
        listeners.insert(listener, announced: announcedThrough)
    }

    /// Answers the listener's group when it was the last on its event loop.
    mutating func removeListener(_ listener: any EventListener) -> LoopListeners? {
        listeners.remove(listener)
    }

    /// The wake-up for everything appended since the last call, to fire once the lock is
    /// released: a refresh's items, done and state wake each stream once, not three times.
    /// It carries those events, so a stream that was up to date writes them without coming
    /// back to the log. `sampleArrival`: when the samples request behind the newest `state`
    /// among them arrived.
    mutating func takeAnnouncement(sampleArrival: ContinuousClock.Instant? = nil) -> Wakeup? {
        guard !unannounced.isEmpty else { return nil }
        let news = Announcement(
            from: announcedThrough, through: lastID, events: Announcement.superseding(unannounced), sampleArrival: sampleArrival)
        unannounced.removeAll(keepingCapacity: true)
        announcedThrough = lastID
        return listeners.wakeup(.news, news)
    }

    /// Wakes every stream with nothing new: the keepalive tick.
    func tick() -> Wakeup? {
        listeners.wakeup(.tick)
    }

    /// Ends every stream (session ended, server stopping).
    mutating func closeAll() -> Wakeup? {
        let groups = listeners.removeAll()
        return groups.isEmpty ? nil : Wakeup(reason: .sessionEnded, groups: groups)
    }
}

/// The events a wake-up hands its streams: every id after `from` up to `through`, with
/// superseded `state` and `news` events left out as the log's replay leaves them out. A
/// stream whose cursor is `from` writes them as they are; any other asks the log.
struct Announcement: Sendable {
    var from: UInt64
    var through: UInt64
    var events: [ServerEvent]
    /// When the samples request behind the `state` event among them arrived.
    var sampleArrival: ContinuousClock.Instant?

    /// Superseded events left out.
    var coalesced: Int { Int(through - from) - events.count }

    /// `events` with each `state` and `news` but the last of its kind left out.
    static func superseding(_ events: [ServerEvent]) -> [ServerEvent] {
        let lastState = events.lastIndex { $0.kind == .state }
        let lastNews = events.lastIndex { $0.kind == .news }
        var kept: [ServerEvent] = []
        kept.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            if event.kind == .state, index != lastState { continue }
            if event.kind == .news, index != lastNews { continue }
            kept.append(event)
        }
        return kept
    }

    /// The most events a queued wake-up carries. Joining is a copy under the loop's lock, so a
    /// loop that stalls while an action appends progress (never dropped) would make each join
    /// longer than the last; past this its streams read the log, which bounds itself.
    static let maxCarried = 64

    /// This announcement and `other`, when they follow on from each other (in either order,
    /// as two wake-ups fired from two threads may come) and carry no more than
    /// ``maxCarried`` events together; otherwise the one that reaches further, and streams
    /// behind it ask the log.
    func merged(with other: Announcement) -> Announcement {
        guard events.count + other.events.count <= Self.maxCarried else { return other.through > through ? other : self }
        if through == other.from {
            return Announcement(
                from: from, through: other.through, events: Self.superseding(events + other.events),
                sampleArrival: other.sampleArrival ?? sampleArrival)
        }
        if other.through == from { return other.merged(with: self) }
        return other.through > through ? other : self
    }
}
