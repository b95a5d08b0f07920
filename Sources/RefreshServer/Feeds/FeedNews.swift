import NIOCore
import RefreshFeed
import Synchronization

/// What the hub reports of its work, to whoever counts it.
protocol NewsObserver: Sendable {
    /// A new head reached every stream of the feed here, `duration` after it was known.
    func newsFannedOut(in duration: Duration)
}

/// What the hub tells a session with open streams, known to the hub only by this.
protocol NewsListener: AnyObject, Sendable {
    /// On the event loop of the streams the listener was registered with: the head moved.
    func headAdvanced(_ payloads: NewsPayloads)
    /// On the same loop: the feed's change log moved on (items edited or removed), or the
    /// news counts changed with a removal. Called only when ``mayBeChanged(by:)`` said so.
    func feedChanged(_ changes: ChangePayloads)
    /// Whether the move can concern the listener: a change inside what its page shows, or a
    /// removal above it (which its news may count). Answered without the listener's lock, so
    /// that a change outside every window wakes no session.
    func mayBeChanged(by changes: ChangePayloads) -> Bool
}

/// One feed's head, version and recent changes as this server knows them, and the fan-out
/// that tells every open page of that feed (and no other: each feed with sessions here has
/// its own, from ``FeedRegistry``).
///
/// The head moves when a publish commits, when a refresh stores items it pulled upstream,
/// and (with a shared store) when another instance says so. It only ever moves forward: a
/// report at or below the known head changes nothing, so the same news arriving by two
/// paths is told once. So does the version: each change (a publish, an edit, a removal)
/// takes the feed's next one, and the change log (``ChangeLog``) holds the newest changes in
/// order, net, each encoded once, for the sessions to read what changed in their windows.
/// A report whose changes do not follow on from the log (another instance's, or one too long
/// to travel) makes the hub read what changed since the version it knows, once for all its
/// sessions.
///
/// A move is one task per event loop. In it, each session with a stream on that loop
/// appends its `news` or `changes` (each distinct payload encoded once, in that task) and its
/// streams there write at once: the loops work in parallel, and nothing is queued per session
/// (only a session with streams on several loops queues a wake-up for the others). A session
/// with no open stream is told when a stream opens.
final class FeedNews: Sendable {
    private struct State {
        var head: FeedHead?
        /// `nil` until the feed's version is first known.
        var log: ChangeLog?
        /// Positions of the items the hub heard were removed, ascending: what `news` no
        /// longer counts.
        var removed: [FeedPosition] = []
        /// Reads of "what came after p" for live sessions since the head last moved.
        var reads: [FeedPosition: Task<LiveRead?, Never>] = [:]
        /// A read of what changed since the log's version, running.
        var catchingUp = false
        /// Reads of what changed in a window since a version, for sessions behind the log.
        var changeReads: [ChangeReadKey: Task<FeedChanges?, Never>] = [:]
        /// Sessions with open streams, by the event loop the streams live on.
        var loops: [ObjectIdentifier: LoopStreams] = [:]
    }

    struct ChangeReadKey: Hashable {
        var since: FeedVersion
        var low: FeedPosition
        var high: FeedPosition
    }

    private let state = Mutex(State())
    /// The head's position alone, read on every sample of a live session without a lock.
    private let knownPosition = Atomic<FeedPosition>(0)
    /// The feed's version alone, for the listener's notices.
    private let knownVersion = Atomic<FeedVersion>(0)
    /// The feed whose head this is, read by every catch-up and live read.
    let feed: any FeedSource
    /// Where the fan-out's latency goes.
    /// Told how long each fan-out took (the metrics observe it).
    let observer: any NewsObserver

    /// The most removed positions kept for news counts.
    static let removalsKept = 4096
    /// The most changes one read of the store brings; past them, sessions read their own.
    static let changesRead = ChangeLog.capacity

    init(feed: any FeedSource, observer: any NewsObserver) {
        self.feed = feed
        self.observer = observer
    }

    /// The newest head reported so far.
    var head: FeedHead? { state.withLock { $0.head } }

    /// Where the head is; 0 before any news.
    var position: FeedPosition { knownPosition.load(ordering: .acquiring) }

    /// The feed's newest version known here; 0 before it is known.
    var version: FeedVersion { knownVersion.load(ordering: .acquiring) }

    /// The change log as it is now; `nil` before the feed's version is known.
    var changeLog: ChangeLog? { state.withLock { $0.log } }

    /// How many items the page that shows the feed up to `shown` does not show yet, as far
    /// as this hub knows: the positions after it, less those removed.
    func count(after shown: FeedPosition, through head: FeedPosition) -> FeedPosition {
        state.withLock { Self.count(after: shown, through: head, removed: $0.removed) }
    }

    fileprivate static func count(after shown: FeedPosition, through head: FeedPosition, removed: [FeedPosition]) -> FeedPosition {
        guard head > shown else { return 0 }
        let gone = removed.lazy.filter { $0 > shown && $0 <= head }.count
        return head - shown - FeedPosition(gone)
    }

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
        let removed = state.withLock { $0.removed }
        // Each loop says when its streams have written; the latency is the last of them, over
        // the loops that had a session to tell.
        let told = loops.map { streams in
            streams.loop.submit {
                let sessions = streams.announce(NewsPayloads(head: head, removed: removed))
                return sessions > 0 ? ContinuousClock.now : nil
            }
        }
        var last: ContinuousClock.Instant?
        for loop in told {
            if let written = (try? await loop.get()) ?? nil { last = max(last ?? written, written) }
        }
        if let last { observer.newsFannedOut(in: last - moved) }
    }

    /// What a write made here did: its head moved the feed forward, its edits and removals
    /// go to the pages that show them. Returns once every open page was told, or, when the
    /// write does not follow on from the log here (another instance's write came between), once
    /// the read of what changed meanwhile is under way: the writer's answer does not wait for
    /// the store a second time, which, while PostgreSQL loses connections, could take as long
    /// as the write did.
    func written(_ write: FeedWrite) async {
        let from = write.version - FeedVersion(write.added + write.changes.count)
        if write.version > 0 { await changed(from: from, to: write.version, changes: write.changes, awaitingRead: false) }
        if let head = write.head { await advance(to: head) } else if write.added > 0 { await catchUp() }
    }

    /// Commits took the feed from `from` to `version` with these edits and removals (`nil`:
    /// not known, read them). Changes that follow on from the log are told at once; others
    /// make the hub read what changed since the log's version, once; `awaitingRead` says
    /// whether to return only when that read was told.
    func changed(from: FeedVersion?, to version: FeedVersion, changes: [FeedChange]?, awaitingRead: Bool = true) async {
        enum Next {
            case nothing
            case tell(ChangeLog, [FeedChange], headGone: Bool, [LoopStreams])
            case read
        }
        let next = state.withLock { state -> Next in
            // The first version heard: the log starts there (before these changes, when they
            // are known), and what came before is read by whoever shows it.
            guard var log = state.log ?? from.flatMap({ from in changes.map { _ in ChangeLog(version: from) } }) else {
                state.log = ChangeLog(version: version)
                knownVersion.store(version, ordering: .releasing)
                return .nothing
            }
            guard version > log.version else { return .nothing }
            guard let changes, from == log.version else { return .read }
            log.append(changes, through: version)
            state.log = log
            knownVersion.store(version, ordering: .releasing)
            let headGone = Self.noteRemovals(changes, in: &state)
            return .tell(log, changes, headGone: headGone, Array(state.loops.values))
        }
        switch next {
        case .nothing: return
        case .read:
            let reading = catchUpChanges()
            if awaitingRead { await reading?.value }
        case .tell(let log, let changes, let headGone, let loops):
            if headGone { await readHead() }
            await tell(log, changes, loops: loops)
        }
    }

    /// Keeps the positions of removals for the news counts; whether the head's item went.
    private static func noteRemovals(_ changes: [FeedChange], in state: inout State) -> Bool {
        var headGone = false
        for case .remove(let id, let position, _) in changes {
            let index = state.removed.firstIndex { $0 >= position } ?? state.removed.endIndex
            if index == state.removed.endIndex || state.removed[index] != position { state.removed.insert(position, at: index) }
            if let head = state.head, head.item.id.utf8.elementsEqual(id.utf8) { headGone = true }
        }
        if state.removed.count > removalsKept { state.removed.removeFirst(state.removed.count - removalsKept) }
        return headGone
    }

    /// The positions removed in `range` the store knows of (a session resumed from a page
    /// that was away while they went), kept for the news counts.
    func learnRemovals(_ positions: [FeedPosition]) {
        guard !positions.isEmpty else { return }
        state.withLock { state in
            state.removed = Array(Set(state.removed + positions)).sorted()
            if state.removed.count > Self.removalsKept { state.removed.removeFirst(state.removed.count - Self.removalsKept) }
        }
    }

    /// Starts reading what changed since the log's version, to tell it; one read at a time
    /// (`nil` while one runs: what it misses, the next change or the periodic catch-up reads).
    private func catchUpChanges() -> Task<Void, Never>? {
        let start = state.withLock { state -> FeedVersion? in
            guard !state.catchingUp, let log = state.log else { return nil }
            state.catchingUp = true
            return log.version
        }
        guard let since = start else { return nil }
        return Task { [feed] in
            let read = try? await feed.changes(since: since, within: 1...FeedPosition.max, limit: Self.changesRead)
            let (log, headGone, loops) = self.state.withLock { state -> (ChangeLog?, Bool, [LoopStreams]) in
                state.catchingUp = false
                guard var log = state.log else { return (nil, false, []) }
                var headGone = false
                if let read {
                    guard read.version > log.version else { return (nil, false, []) }
                    log.append(read.changes, through: read.version)
                    headGone = Self.noteRemovals(read.changes, in: &state)
                } else {
                    // Too many to read at once, or forgotten: the log starts again at the head's
                    // version, and each session behind it reads its own window's.
                    guard let version = state.head?.version, version > log.version else { return (nil, false, []) }
                    log.restart(at: version)
                }
                state.log = log
                knownVersion.store(log.version, ordering: .releasing)
                return (log, headGone, Array(state.loops.values))
            }
            guard let log else { return }
            if headGone { await self.readHead() }
            // Without the read's changes, every session is told (each reads its own window's).
            await self.tell(log, read?.changes, loops: loops)
        }
    }

    /// Tells every loop's sessions the log moved on with `changes` (`nil`: not known, which
    /// concerns every session); returns once each has.
    private func tell(_ log: ChangeLog, _ changes: [FeedChange]?, loops: [LoopStreams]) async {
        let removed = state.withLock { $0.removed }
        let told = loops.map { streams in
            streams.loop.submit { streams.change(ChangePayloads(log: log, changes: changes, head: self.head, removed: removed)) }
        }
        for loop in told { _ = try? await loop.get() }
    }

    /// The head's item was removed: the newest item the feed still holds takes its place in
    /// the news, and the pages are told the corrected count.
    private func readHead() async {
        guard let read = try? await feed.head() else { return }
        state.withLock { state in
            if read.position >= state.head?.position ?? 0 { state.head = read }
        }
    }

    /// Reads the head from the feed and moves to it: after a commit, everything up to the head
    /// read is visible to every reader. It runs to the end even when the caller is cancelled
    /// (a client that hangs up once its publish committed): the news must not go with it. A
    /// store that fails here is read again by the next catch-up, at the latest the periodic one.
    func catchUp() async {
        await Task { [feed] in
            guard let head = try? await feed.head() else { return }
            await changed(from: nil, to: head.version, changes: nil)
            await advance(to: head)
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

    /// What changed within `positions` since `version`, for a session behind the log: read
    /// once for every session that asks the same; `nil` when it cannot be told (a `reset`).
    func changes(since version: FeedVersion, within positions: ClosedRange<FeedPosition>) async -> FeedChanges? {
        let key = ChangeReadKey(since: version, low: positions.lowerBound, high: positions.upperBound)
        let read = state.withLock { state in
            if let read = state.changeReads[key] { return read }
            let read = Task { [feed] in try? await feed.changes(since: version, within: positions, limit: Self.changesRead) }
            state.changeReads[key] = read
            return read
        }
        let answer = await read.value
        _ = state.withLock { $0.changeReads.removeValue(forKey: key) }
        return answer
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
    func announce(_ payloads: NewsPayloads) -> Int {
        let listeners = members.withLock { Array($0.values) }
        for listener in listeners {
            listener.headAdvanced(payloads)
        }
        return listeners.count
    }

    /// On `loop`: every session whose window the change may concern takes what changed in it.
    func change(_ payloads: ChangePayloads) {
        let listeners = members.withLock { Array($0.values) }
        for listener in listeners where listener.mayBeChanged(by: payloads) {
            listener.feedChanged(payloads)
        }
    }
}

/// New items for live pages, with their `items` payload encoded once for all of them.
struct LiveRead: Sendable {
    let page: FeedPage
    private let more: ByteBuffer
    private let noMore: ByteBuffer

    init(page: FeedPage) {
        self.page = page
        let op = ItemsOperation.prepend.rawValue
        more = EventData.items(action: nil, op: op, items: page.items, hasMore: true, head: page.head, version: page.version)
        noMore = EventData.items(action: nil, op: op, items: page.items, hasMore: false, head: page.head, version: page.version)
    }

    /// The payload for a page that has older items to load or not.
    func data(hasMore: Bool) -> ByteBuffer { hasMore ? more : noMore }
}

/// The `news` payloads of one head, built once for each position a session shows: ten
/// thousand sessions that show the same items share one encoding, and only their event's
/// `id:` line differs.
final class NewsPayloads {
    let head: FeedHead
    /// Removed positions, ascending: not counted.
    let removed: [FeedPosition]
    private var byShown: [FeedPosition: ByteBuffer] = [:]

    init(head: FeedHead, removed: [FeedPosition] = []) {
        self.head = head
        self.removed = removed
    }

    /// How many new items a page that shows the feed up to `shown` does not show.
    func count(shown: FeedPosition) -> FeedPosition {
        FeedNews.count(after: shown, through: head.position, removed: removed)
    }

    func data(shown: FeedPosition) -> ByteBuffer {
        if let data = byShown[shown] { return data }
        let data = EventData.news(count: count(shown: shown), head: head)
        byShown[shown] = data
        return data
    }
}

/// What a move of the change log tells the sessions of one loop: the log, and each distinct
/// `changes` payload encoded once (sessions that show the same window share it).
final class ChangePayloads {
    let log: ChangeLog
    /// The head and removals, to correct the news a page was told.
    let news: NewsPayloads?
    /// The lowest and highest positions this move changed (`nil`: not known, any), and the
    /// highest it removed: what tells a session whose window it leaves alone.
    let changed: ClosedRange<FeedPosition>?
    let highestRemoved: FeedPosition?
    private var encoded: [[FeedVersion]: ByteBuffer] = [:]

    init(log: ChangeLog, changes: [FeedChange]?, head: FeedHead?, removed: [FeedPosition]) {
        self.log = log
        news = head.map { NewsPayloads(head: $0, removed: removed) }
        if let changes {
            let positions = changes.map(\.position)
            changed = positions.min().map { $0...positions.max()! } ?? (0...0)
            highestRemoved = changes.lazy.compactMap { change -> FeedPosition? in
                if case .remove(_, let position, _) = change { return position }
                return nil
            }.max()
        } else {
            changed = nil
            highestRemoved = .max
        }
    }

    /// Whether a page that shows `shown` may be concerned: a change inside it, or a removal
    /// above it (its news may count the item).
    func mayConcern(_ shown: ClosedRange<FeedPosition>?) -> Bool {
        guard let changed else { return true }
        if let highestRemoved, highestRemoved > shown?.upperBound ?? 0 { return true }
        guard let shown else { return false }
        return changed.overlaps(shown)
    }

    /// The `changes` payload of these log entries, once per distinct list.
    func data(_ entries: [ChangeLog.Entry]) -> ByteBuffer {
        let key = entries.map(\.change.version)
        if let data = encoded[key] { return data }
        let data = EventData.changes(version: log.version, entries.map(\.json))
        encoded[key] = data
        return data
    }
}
