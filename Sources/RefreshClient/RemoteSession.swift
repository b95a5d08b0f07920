import Foundation
import OpenAPIRuntime
import RefreshAPI
import RefreshEngine
import Synchronization

/// One list's session on the server: post the scroll view's offsets, read what to draw from
/// ``events``, ask for a refresh or a load-more.
///
/// It rides out what a phone's network does to it, as the page does: a dropped or silent
/// stream comes back with `Last-Event-ID` (nothing missed, nothing twice), a busy server is
/// waited for as it asks, and a session the server lost (a restart, an instance gone) is
/// replaced by one that continues the list it shows (``SessionEvent/replaced(resumed:)``).
public actor RemoteSession {
    public nonisolated let feed: String
    /// The session's id on the server; a replacement has a new one.
    public private(set) var id: String
    /// The session's configuration as the server completed it: thresholds, held offsets,
    /// the rubber band's curve for the app's own motion.
    public private(set) var config: RefreshConfig
    /// The newest gesture state the stream brought.
    public private(set) var state: GestureState

    /// A stream that brings no byte for this long (three of the server's keepalives, 15 s by
    /// default) is taken for dead: a phone that changed networks can leave a socket that
    /// never says so. (Under a server whose `--keepalive` is longer, an idle stream is reopened
    /// this often: a cost, not a loss, as the new one replays from `Last-Event-ID`.)
    static let silenceLimit = Duration.seconds(45)

    private let client: RefreshClient
    private let request: RefreshClient.SessionRequest
    private let decoder = EventDecoder()
    /// What the list shows, as the events said: the next session continues it.
    private var shows = Shows()
    /// The id of the last event handed on; "0" for a new session (its stream then replays
    /// from its very first event, so nothing that happened before it connected is missed).
    private var lastEventID = "0"
    /// Counts replacements: events and answers that belong to an earlier session are dropped.
    private var generation = 0
    private var replacing: Task<Void, any Error>?
    /// Why the session cannot go on: a replacement the server refused for good.
    private var failure: RefreshError?
    private var queue: SampleQueue
    /// The queue's timers: the next paced request's turn, and the wait a busy server asked for.
    private var pacing: Task<Void, Never>?
    private var pause: Task<Void, Never>?
    private var sampleBackoff = Backoff()
    private var flushed: [Int: CheckedContinuation<Void, Never>] = [:]
    private var flushes = 0
    /// The queue's clock, and that of samples' `t` when the app gives none: the time since
    /// the session began.
    private let began = ContinuousClock.now
    /// Where ``events`` is being read, and what came while no one read it.
    private var listener: AsyncThrowingStream<SessionEvent, any Error>.Continuation?
    private var outbox: [SessionEvent] = []
    /// Which reader `listener` is: only the newest reader's stream hands events on.
    private var readers = 0
    /// Numbers readers as their iterators are made, so that the newest one wins however their
    /// tasks come to attach.
    private nonisolated let readerNumbers = Mutex(0)
    private var closed = false

    init(client: RefreshClient, request: RefreshClient.SessionRequest, created: Components.Schemas.Session) throws {
        self.client = client
        self.request = request
        feed = created.feed
        id = created.id
        config = try ConfigCoding.config(created.config)
        queue = SampleQueue(config: config)
        state = GestureState(created.state)
        if let page = created.firstPage {
            let update = ItemsUpdate(firstPage: page)
            shows.note(.items(update))
            outbox.append(.items(update))
        }
    }

    // MARK: Events

    /// The session's events, typed, in order. Reading them opens the stream; a dropped or
    /// silent stream is reopened by itself, the session replaced when the server lost it.
    /// It ends with an error only when the server refuses for good (the token lost the right
    /// to the feed, twice in a row for an expired one) or an event breaks the API's document;
    /// cancelling the task that reads it closes the stream.
    ///
    /// One reader at a time: a second one takes the stream over, and the first one's
    /// sequence ends (as after ``close()``). Events that come while no one reads wait for the
    /// next reader; those already handed to a reader that stops reading (a `break` out of its
    /// loop) went with it.
    public nonisolated var events: SessionEvents { SessionEvents(session: self) }

    private struct Target {
        var id: String
        var lastEventID: String
        var generation: Int
    }

    private enum Next {
        case read(Target)
        case waitForReplacement
        case stop
    }

    /// The stream ended because another reader or a replacement took its place.
    private struct Superseded: Error {}

    /// The stream brought nothing for ``silenceLimit``.
    private struct Silent: Error {}

    nonisolated func nextReader() -> Int {
        readerNumbers.withLock { number in
            number += 1
            return number
        }
    }

    nonisolated func listen(_ continuation: AsyncThrowingStream<SessionEvent, any Error>.Continuation, reader: Int) async {
        guard await attach(continuation, reader: reader) else { return }
        var backoff = Backoff()
        // A 401 is asked again once: an app's token provider may have renewed the token just
        // after the server closed the stream in the last minute of the old one.
        var refused = false
        var replacementsInARow = 0
        reading: while !Task.isCancelled {
            let target: Target
            switch await next(for: reader) {
            case .stop: break reading
            case .waitForReplacement:
                do { try await Task.sleep(for: .milliseconds(100)) } catch { break reading }
                continue
            case .read(let next): target = next
            }
            let activity = StreamActivity()
            var outcome: Result<Duration, any Error>
            do {
                outcome = .success(try await read(target, reader: reader, activity: activity))
            } catch {
                outcome = .failure(error)
            }
            if activity.events > 0 {
                backoff.reset()
                refused = false
                replacementsInARow = 0
            }
            var wait: Duration
            switch outcome {
            case .success(let retry):
                // The server ended the stream (it was too busy for it, the token expired, it
                // is going away): back after its `retry:`, as an EventSource comes back.
                wait = retry
            case .failure(is Superseded):
                continue
            case .failure(is CancellationError):
                break reading
            case .failure(let error as RefreshError) where error.isSessionGone:
                // A session that is lost again at once (a front that routes its stream
                // elsewhere) is not replaced in a tight loop.
                if replacementsInARow > 0 {
                    do { try await Task.sleep(for: backoff.delay()) } catch { break reading }
                }
                replacementsInARow += 1
                do {
                    try await replace(after: target.generation)
                } catch is CancellationError {
                    break reading
                } catch {
                    await detach(reader, continuation, error)
                    return
                }
                continue
            case .failure(let error as RefreshError) where error.status == 401 && !refused:
                refused = true
                wait = backoff.delay(retryAfter: error.retryAfter)
            case .failure(let error as RefreshError) where !error.isTransient && error.code != "undecodable":
                await detach(reader, continuation, error)
                return
            case .failure(is DecodingError):
                // An event the document does not allow: the server and the document disagree,
                // and asking again will not change it.
                let error = RefreshError(status: 200, code: "undecodable", message: "an event does not match the API's document")
                await detach(reader, continuation, error)
                return
            case .failure(let error):
                // Unreachable, cut off mid-stream, silent, busy, or a `200` that is not an
                // event stream (a captive portal): back with `Last-Event-ID` after a backoff.
                wait = backoff.delay(retryAfter: (error as? RefreshError)?.retryAfter)
            }
            do { try await Task.sleep(for: wait) } catch { break reading }
        }
        await detach(reader, continuation, nil)
    }

    /// Reads one stream until it ends (answering its last `retry:`), fails, goes silent, or
    /// is superseded by another reader or a replacement.
    private nonisolated func read(_ target: Target, reader: Int, activity: StreamActivity) async throws -> Duration {
        let body = try await client.stream(of: target.id, after: target.lastEventID)
        return try await withThrowingTaskGroup(of: Duration.self) { group in
            group.addTask {
                var retry = Duration.seconds(1)
                let chunks = body.map { @Sendable chunk in
                    activity.bytesArrived()
                    return chunk
                }
                for try await event in chunks.asDecodedServerSentEvents() {
                    if let milliseconds = event.retry { retry = .milliseconds(milliseconds) }
                    guard let typed = try self.decoder.decode(event) else { continue }
                    guard await self.deliver(typed, id: event.id, generation: target.generation, reader: reader) else {
                        throw Superseded()
                    }
                    activity.eventDelivered()
                }
                return retry
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: .seconds(1))
                    if activity.silence > Self.silenceLimit { throw Silent() }
                    if await !self.isCurrent(target.generation, reader: reader) { throw Superseded() }
                }
            }
            defer { group.cancelAll() }
            guard let retry = try await group.next() else { throw Superseded() }
            return retry
        }
    }

    private func attach(_ continuation: AsyncThrowingStream<SessionEvent, any Error>.Continuation, reader: Int) -> Bool {
        guard !closed else {
            continuation.finish(throwing: failure)
            return false
        }
        // A reader made before the one reading now comes too late: it ends at once.
        guard reader > readers else {
            continuation.finish()
            return false
        }
        listener?.finish()
        listener = continuation
        readers = reader
        let waiting = outbox
        outbox = []
        for event in waiting { hand(event) }
        return true
    }

    /// A reader ended: what comes next waits in the outbox for the next reader.
    private func detach(_ reader: Int, _ continuation: AsyncThrowingStream<SessionEvent, any Error>.Continuation, _ error: (any Error)?) {
        continuation.finish(throwing: error)
        if reader == readers { listener = nil }
    }

    /// The stream to read next: the current session's, from the last event handed on.
    private func next(for reader: Int) -> Next {
        guard !closed, reader == readers else { return .stop }
        return replacing == nil ? .read(Target(id: id, lastEventID: lastEventID, generation: generation)) : .waitForReplacement
    }

    private func isCurrent(_ generation: Int, reader: Int) -> Bool {
        generation == self.generation && reader == readers && !closed
    }

    /// Hands an event on; `false` when its stream was superseded (the event is then not
    /// counted as read: the stream that replaces it replays it).
    private func deliver(_ event: SessionEvent, id eventID: String?, generation: Int, reader: Int) -> Bool {
        guard isCurrent(generation, reader: reader) else { return false }
        if let eventID { lastEventID = eventID }
        if case .state(let state) = event { self.state = state }
        emit(event)
        return true
    }

    /// Notes what the event changes in the list, and hands it on.
    private func emit(_ event: SessionEvent) {
        shows.note(event)
        hand(event)
    }

    private func hand(_ event: SessionEvent) {
        if let listener, case .enqueued = listener.yield(event) { return }
        // No reader, or one whose task was cancelled: the next reader gets it.
        listener = nil
        outbox.append(event)
    }

    // MARK: Replacing a lost session

    /// The server forgot the session: a new one takes its place, continuing the list when the
    /// server can. Once per loss, however many requests found it gone. A replacement the
    /// server refuses for good (the token no longer valid for the feed) ends the session.
    private func replace(after generation: Int) async throws {
        if let failure { throw failure }
        guard generation == self.generation, !closed else { return }
        if let replacing { return try await replacing.value }
        let task = Task { try await self.createReplacement() }
        replacing = task
        defer { replacing = nil }
        do {
            try await task.value
        } catch let error as RefreshError {
            fail(error)
            throw error
        }
    }

    private func createReplacement() async throws {
        let created = try await client.create(request, resume: shows.resume, attempts: nil)
        guard !closed else {
            try? await client.delete(created.id)
            return
        }
        let config = try ConfigCoding.config(created.config)
        generation += 1
        id = created.id
        self.config = config
        state = GestureState(created.state)
        lastEventID = "0"
        queue.sessionReplaced(config: config)
        stopQueueTimers()
        resumeFlushed()
        let resumed = created.resumed ?? false
        if !resumed { shows = Shows() }
        emit(.replaced(resumed: resumed))
        if let page = created.firstPage {
            emit(.items(ItemsUpdate(firstPage: page)))
        } else if !resumed {
            // No room for its stream: its first page comes by a load-more, as a new session's.
            Task { _ = try? await self.loadMore() }
        }
    }

    private func fail(_ error: RefreshError) {
        failure = error
        queue.sessionReplaced(config: nil)
        stopQueueTimers()
        resumeFlushed()
        listener?.finish(throwing: error)
        listener = nil
    }

    // MARK: Samples

    /// Queues a sample of the scroll view's offset and answers the `seq` the queue gave it
    /// (the `seq` of the state that answers it, or of a later one); `nil` once the session
    /// is closed or has failed.
    ///
    /// The queue follows the page's rules: up to three requests of positions out at once,
    /// paced at frame rate (or the round trip divided by three when that is longer), and a
    /// newer drag or scroll sample replaces one still queued; a sample that crosses a
    /// threshold goes without waiting for its turn; a release replaces every queued position
    /// and goes out at once, and is never dropped: a busy server is waited for, and the
    /// release sent again. To send a release with where the list rests in one request, post
    /// both in one call (`post(_:)` with an array).
    /// The sample's own `seq` is not used; a `t` of `0` is stamped with the milliseconds
    /// since the session began.
    @discardableResult
    public func post(_ sample: Sample) -> Int? {
        guard let (seq, action) = push(sample) else { return nil }
        perform(action)
        return seq
    }

    /// Queues what one frame saw, in one turn of the queue: a release and the offset where
    /// the list rests after it leave in one request (rule 4 of `SampleQueue`), which two
    /// calls of `post(_:)` with one sample cannot promise, since the queue's turn may end between
    /// them. Answers each sample's `seq`; fewer (none) once the session is closed or has failed.
    @discardableResult
    public func post(_ samples: [Sample]) -> [Int] {
        var seqs: [Int] = []
        var turnEnds = false
        for sample in samples {
            guard let (seq, action) = push(sample) else { break }
            seqs.append(seq)
            if action == .sendSoon { turnEnds = true } else { perform(action) }
        }
        if turnEnds, !closed, failure == nil { perform(queue.turnEnded(now: elapsed)) }
        return seqs
    }

    /// Stamps `sample` and gives it to the queue: its `seq`, and what the queue asks for.
    private func push(_ sample: Sample) -> (Int, SampleQueue.Action)? {
        guard !closed, failure == nil else { return nil }
        var sample = sample
        let now = elapsed
        if sample.t == 0 {
            let parts = now.components
            sample.t = Double(parts.seconds) * 1000 + Double(parts.attoseconds) / 1e15
        }
        return queue.samplePushed(sample, now: now)
    }

    /// The queue's `now`.
    private var elapsed: Duration { ContinuousClock.now - began }

    /// Queues the scroll view's offset `y` (UIKit's `contentOffset.y`: negative when pulled
    /// down past the top), as `post(_:)` does for one sample. Heights and `input` (what moved
    /// the list, which the server's pull insights count by) may be left out while unchanged.
    @discardableResult
    public func post(
        y: Double, phase: Sample.Phase = .drag, contentHeight: Double? = nil, viewportHeight: Double? = nil, input: Sample.Input? = nil
    ) -> Int? {
        post(Sample(seq: 0, y: y, phase: phase, contentHeight: contentHeight, viewportHeight: viewportHeight, input: input))
    }

    /// Returns once every sample posted so far has been taken by the server (or dropped with
    /// its session), or when the waiting task is cancelled.
    public func flush() async {
        guard !queue.isEmpty, !closed, failure == nil else { return }
        flushes += 1
        let waiter = flushes
        await withTaskCancellationHandler {
            await withCheckedContinuation { flushed[waiter] = $0 }
        } onCancel: {
            Task { await self.flushCancelled(waiter) }
        }
    }

    private func flushCancelled(_ waiter: Int) {
        flushed.removeValue(forKey: waiter)?.resume()
    }

    private func perform(_ action: SampleQueue.Action) {
        let generation = generation
        switch action {
        case .send(let request):
            let id = id
            Task { await self.send(request, to: id, generation: generation) }
        case .sendSoon:
            // At the end of this turn of the queue: what is posted before it comes goes in the
            // same request (`post(_:)` of several samples ends the turn itself).
            Task { self.turnEnded(generation: generation) }
        case .wake(let wait):
            pacing?.cancel()
            pacing = Task {
                do { try await Task.sleep(for: wait) } catch { return }
                self.timerFired(generation: generation)
            }
        case .pause(let wait):
            pause?.cancel()
            pause = Task {
                do { try await Task.sleep(for: wait) } catch { return }
                self.pauseEnded(generation: generation)
            }
        case .none:
            if queue.isEmpty { resumeFlushed() }
        }
    }

    private func stopQueueTimers() {
        pacing?.cancel()
        pacing = nil
        pause?.cancel()
        pause = nil
    }

    private func send(_ request: SampleQueue.Request, to id: String, generation: Int) async {
        var answer = SampleQueue.Answer.taken
        var gone = false
        do {
            try await client.post(request.samples, to: id)
            sampleBackoff.reset()
        } catch let error as RefreshError where error.isSessionGone {
            gone = true
        } catch let error as RefreshError where error.isTransient {
            answer = .notNow(retryAfter: sampleBackoff.delay(retryAfter: error.retryAfter))
        } catch is RefreshError {
            // Refused for good: a bad sample is not better the second time.
        } catch {
            answer = .notNow(retryAfter: sampleBackoff.delay())
        }
        guard generation == self.generation, !closed else { return }
        if gone {
            // The queue starts afresh with the replacement (or stops with the session).
            try? await replace(after: generation)
            return
        }
        perform(queue.requestFinished(request.id, answer, now: elapsed))
    }

    private func turnEnded(generation: Int) {
        guard generation == self.generation, !closed else { return }
        perform(queue.turnEnded(now: elapsed))
    }

    private func timerFired(generation: Int) {
        guard generation == self.generation, !closed else { return }
        perform(queue.timerFired(now: elapsed))
    }

    private func pauseEnded(generation: Int) {
        guard generation == self.generation, !closed else { return }
        perform(queue.pauseEnded(now: elapsed))
    }

    private func resumeFlushed() {
        let waiting = flushed
        flushed = [:]
        for continuation in waiting.values { continuation.resume() }
    }

    // MARK: Actions

    /// Starts a refresh without a gesture (a button, a keyboard shortcut, a program), or joins
    /// the one running. Answers its action id, which its events carry. A session the server
    /// lost is replaced first and the refresh asked of the new one; `nil` only when that one
    /// is lost too.
    @discardableResult
    public func refresh() async throws -> String? {
        try await act { try await self.client.startRefresh($0) }
    }

    /// Cancels the refresh in flight (a `done` event with `cancelled` follows); answers
    /// whether one was running.
    @discardableResult
    public func cancelRefresh() async throws -> Bool {
        try await act { try await self.client.cancelRefresh($0) } ?? false
    }

    /// Loads older items without a gesture. Answers the action id; `nil` while a refresh runs
    /// (it resets paging, and brings the newest items itself).
    @discardableResult
    public func loadMore() async throws -> String? {
        do {
            return try await act { try await self.client.loadMore($0) }
        } catch let error as RefreshError where error.status == 409 {
            return nil
        }
    }

    /// Ends the session: its stream, its queued samples, and the session on the server.
    public func close() async {
        guard !closed else { return }
        closed = true
        listener?.finish()
        listener = nil
        replacing?.cancel()
        queue.sessionReplaced(config: nil)
        stopQueueTimers()
        resumeFlushed()
        try? await client.delete(id)
    }

    /// One action: asked once more after the wait a busy server gave, and of the replacement
    /// when the server lost the session.
    private func act<Answer: Sendable>(_ operation: @Sendable (String) async throws -> Answer) async throws -> Answer? {
        var backoff = Backoff()
        var busy = 0
        var lost = 0
        while true {
            if let failure { throw failure }
            guard !closed else { throw RefreshError.closed }
            let generation = generation
            do {
                return try await operation(id)
            } catch let error as RefreshError where error.isSessionGone && lost == 0 {
                lost += 1
                do {
                    try await replace(after: generation)
                } catch is CancellationError where closed {
                    throw RefreshError.closed
                }
            } catch let error as RefreshError where error.isSessionGone {
                return nil
            } catch let error as RefreshError where error.isTransient && busy == 0 {
                busy += 1
                try await Task.sleep(for: backoff.delay(retryAfter: error.retryAfter))
            }
        }
    }
}

/// What a list shows, as its session's events said, so that a session replacing a lost one
/// can continue it: the feed position its items are up to date with (`head` of the last
/// `items` that brought it up to date), the first such position (paging down stays below
/// it), the id of its last item, and the feed's version its rows are as of (that of the last
/// `items` or `changes`).
struct Shows: Equatable {
    var head: Int?
    var pagedThrough: Int?
    var oldest: String?
    var version: Int?

    var resume: RefreshClient.Resume? {
        guard let head, let oldest else { return nil }
        return RefreshClient.Resume(head: head, pagedThrough: pagedThrough ?? head, oldest: oldest, version: version)
    }

    mutating func note(_ event: SessionEvent) {
        switch event {
        case .items(let update):
            if let head = update.head {
                self.head = head
                pagedThrough = pagedThrough ?? head
            }
            if let last = update.items.last, update.operation == .append || oldest == nil { oldest = last.id }
            if let version = update.version { self.version = version }
        case .changes(let changes):
            version = changes.version
        case .reset:
            self = Shows()
        default:
            break
        }
    }
}

/// ``RemoteSession/events``: reading it opens the session's stream, and ending the read (or
/// cancelling its task) closes it.
public struct SessionEvents: AsyncSequence, Sendable {
    public typealias Element = SessionEvent
    public typealias AsyncIterator = AsyncThrowingStream<SessionEvent, any Error>.Iterator

    let session: RemoteSession

    public func makeAsyncIterator() -> AsyncIterator {
        // Unbounded: the server already coalesces superseded states and news for a slow
        // reader, and what remains (progress, items, done) must not be dropped.
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: SessionEvent.self)
        let reader = session.nextReader()
        let task = Task { [session] in await session.listen(continuation, reader: reader) }
        continuation.onTermination = { _ in task.cancel() }
        return stream.makeAsyncIterator()
    }
}
