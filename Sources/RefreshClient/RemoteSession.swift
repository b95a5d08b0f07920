import Foundation
import OpenAPIRuntime
import RefreshAPI
import RefreshEngine

/// One list's session on the server: post the scroll view's offsets, read what to draw from
/// ``events``, ask for a refresh or a load-more.
///
/// It rides out what a phone's network does to it, as the page does: a dropped stream comes
/// back with `Last-Event-ID` (nothing missed, nothing twice), a busy server is waited for as
/// it asks, and a session the server lost (a restart, an instance gone) is replaced by one
/// that continues the list it shows (``SessionEvent/replaced(resumed:)``).
public actor RemoteSession {
    public nonisolated let feed: String
    /// The session's id on the server; a replacement has a new one.
    public private(set) var id: String
    /// The session's configuration as the server completed it: thresholds, held offsets,
    /// the rubber band's curve for the app's own motion.
    public private(set) var config: RefreshConfig
    /// The newest gesture state the stream brought.
    public private(set) var state: GestureState

    private let client: RefreshClient
    private let request: RefreshClient.SessionRequest
    private let decoder = EventDecoder()
    /// What the list shows, as the events said: the next session continues it.
    private var shows = Shows()
    /// The id of the last event read; "0" for a new session (its stream then replays from its
    /// very first event, so nothing that happened before it connected is missed).
    private var lastEventID = "0"
    /// Counts replacements: events and answers that belong to an earlier session are dropped.
    private var generation = 0
    private var replacing: Task<Void, any Error>?
    private var queue = SampleQueue()
    private var sampleBackoff = Backoff()
    private var flushed: [CheckedContinuation<Void, Never>] = []
    /// The clock of samples' `t` when the app gives none: milliseconds since the session began.
    private let began = ContinuousClock.now
    /// Where ``events`` is being read, and what came before anyone read it.
    private var listener: AsyncThrowingStream<SessionEvent, any Error>.Continuation?
    /// Which reader `listener` is: a reader that ends clears it only if it is still its own.
    private var readers = 0
    private var outbox: [SessionEvent] = []
    private var closed = false

    init(client: RefreshClient, request: RefreshClient.SessionRequest, created: Components.Schemas.Session) throws {
        self.client = client
        self.request = request
        feed = created.feed
        id = created.id
        config = try ConfigCoding.config(created.config)
        state = GestureState(created.state)
        if let page = created.firstPage {
            let update = ItemsUpdate(firstPage: page)
            shows.note(.items(update))
            outbox.append(.items(update))
        }
    }

    // MARK: Events

    /// The session's events, typed, in order. Reading them opens the stream; a dropped stream
    /// is reopened by itself, the session replaced when the server lost it. It ends with an
    /// error only when the server refuses for good (the token lost the right to the feed) or
    /// an event breaks the API's document; cancelling the task that reads it closes the
    /// stream. One reader at a time: a new one ends the one before.
    public nonisolated var events: SessionEvents { SessionEvents(session: self) }

    nonisolated func listen(_ continuation: AsyncThrowingStream<SessionEvent, any Error>.Continuation) async {
        guard let reader = await attach(continuation) else { return }
        var backoff = Backoff()
        while !Task.isCancelled {
            guard let target = await streamTarget() else { break }
            do {
                let body = try await client.stream(of: target.id, after: target.lastEventID)
                var retry = Duration.seconds(1)
                for try await event in body.asDecodedServerSentEvents() {
                    if let milliseconds = event.retry { retry = .milliseconds(milliseconds) }
                    guard let typed = try decoder.decode(event) else { continue }
                    backoff.reset()
                    await deliver(typed, id: event.id, generation: target.generation)
                }
                // The server ended the stream (it was too busy for it, the token expired, it
                // is going away): back after its `retry:`, as an EventSource comes back.
                try await Task.sleep(for: retry)
            } catch let error as RefreshError where error.isSessionGone {
                do {
                    try await replace(after: target.generation)
                } catch {
                    await detach(reader, continuation, error)
                    return
                }
            } catch let error as RefreshError where !error.isTransient {
                await detach(reader, continuation, error)
                return
            } catch is DecodingError {
                // The server said something the document does not allow: not for a retry.
                await detach(
                    reader, continuation, RefreshError(status: 200, code: "undecodable", message: "an event does not match the API's document"))
                return
            } catch is CancellationError {
                break
            } catch {
                // Unreachable, cut off mid-stream, busy: come back with `Last-Event-ID`.
                let wait = backoff.delay(retryAfter: (error as? RefreshError)?.retryAfter)
                do { try await Task.sleep(for: wait) } catch { break }
            }
        }
        await detach(reader, continuation, nil)
    }

    private func attach(_ continuation: AsyncThrowingStream<SessionEvent, any Error>.Continuation) -> Int? {
        guard !closed else {
            continuation.finish()
            return nil
        }
        listener?.finish()
        listener = continuation
        readers += 1
        for event in outbox { continuation.yield(event) }
        outbox = []
        return readers
    }

    /// A reader ended: what comes next waits in the outbox for the next reader.
    private func detach(_ reader: Int, _ continuation: AsyncThrowingStream<SessionEvent, any Error>.Continuation, _ error: (any Error)?) {
        continuation.finish(throwing: error)
        if reader == readers { listener = nil }
    }

    /// The stream to read next: the current session's, from the last event read. Waits for a
    /// replacement under way; `nil` once closed.
    private func streamTarget() async -> (id: String, lastEventID: String, generation: Int)? {
        if let replacing { _ = try? await replacing.value }
        return closed ? nil : (id, lastEventID, generation)
    }

    private func deliver(_ event: SessionEvent, id eventID: String?, generation: Int) {
        guard generation == self.generation, !closed else { return }
        if let eventID { lastEventID = eventID }
        if case .state(let state) = event { self.state = state }
        emit(event)
    }

    private func emit(_ event: SessionEvent) {
        shows.note(event)
        if let listener { listener.yield(event) } else { outbox.append(event) }
    }

    // MARK: Replacing a lost session

    /// The server forgot the session: a new one takes its place, continuing the list when the
    /// server can. Once per loss, however many requests found it gone.
    private func replace(after generation: Int) async throws {
        guard generation == self.generation, !closed else { return }
        if let replacing { return try await replacing.value }
        let task = Task { try await self.createReplacement() }
        replacing = task
        defer { replacing = nil }
        try await task.value
    }

    private func createReplacement() async throws {
        let created = try await client.create(request, resume: shows.resume, attempts: nil)
        guard !closed else {
            try? await client.delete(created.id)
            return
        }
        generation += 1
        id = created.id
        config = try ConfigCoding.config(created.config)
        state = GestureState(created.state)
        lastEventID = "0"
        queue.sessionReplaced()
        resumeFlushed()
        let resumed = created.resumed ?? false
        if !resumed { shows = Shows() }
        emit(.replaced(resumed: resumed))
        if let page = created.firstPage { emit(.items(ItemsUpdate(firstPage: page))) }
    }

    // MARK: Samples

    /// Queues a sample of the scroll view's offset and answers the `seq` the queue gave it
    /// (the `seq` of the state that answers it, or of a later one).
    ///
    /// Samples go out one request at a time; a newer drag or scroll sample replaces one still
    /// queued; a release replaces every queued position and is never dropped: a busy server
    /// is waited for, and the release sent again. The sample's own `seq` is not used; a `t`
    /// of `0` is stamped with the milliseconds since the session began.
    @discardableResult
    public func post(_ sample: Sample) -> Int {
        guard !closed else { return 0 }
        var sample = sample
        if sample.t == 0 {
            let elapsed = (ContinuousClock.now - began).components
            sample.t = Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15
        }
        let (seq, action) = queue.samplePushed(sample)
        perform(action)
        return seq
    }

    /// Returns once every sample posted so far has been taken by the server (or dropped with
    /// its session).
    public func flush() async {
        guard !queue.isEmpty, !closed else { return }
        await withCheckedContinuation { flushed.append($0) }
    }

    private func perform(_ action: SampleQueue.Action) {
        switch action {
        case .send(let batch):
            let target = (id, generation)
            Task { await self.send(batch, to: target.0, generation: target.1) }
        case .pause(let wait):
            let generation = generation
            Task {
                try? await Task.sleep(for: wait)
                await self.pauseEnded(generation: generation)
            }
        case .none:
            if queue.isEmpty { resumeFlushed() }
        }
    }

    private func send(_ batch: [Sample], to id: String, generation: Int) async {
        var answer = SampleQueue.Answer.taken
        var gone = false
        do {
            try await client.post(batch, to: id)
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
            try? await replace(after: generation)
            return
        }
        perform(queue.requestFinished(answer))
    }

    private func pauseEnded(generation: Int) {
        guard generation == self.generation, !closed else { return }
        perform(queue.pauseEnded())
    }

    private func resumeFlushed() {
        let waiting = flushed
        flushed = []
        for continuation in waiting { continuation.resume() }
    }

    // MARK: Actions

    /// Starts a refresh without a gesture (a button, a keyboard shortcut, a program), or joins
    /// the one running. Answers its action id, which its events carry; `nil` when the session
    /// had to be replaced first (the new one starts with the feed's newest items).
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
    /// (it resets paging) or when the session had to be replaced.
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
        queue.sessionReplaced()
        resumeFlushed()
        try? await client.delete(id)
    }

    /// One action, asked once more after the wait a busy server gave.
    private func act<Answer: Sendable>(_ operation: @Sendable (String) async throws -> Answer) async throws -> Answer? {
        var backoff = Backoff()
        for attempt in 1... {
            guard !closed else { throw RefreshError(status: 0, code: "closed", message: "the session was closed") }
            let generation = generation
            do {
                return try await operation(id)
            } catch let error as RefreshError where error.isSessionGone {
                try await replace(after: generation)
                return nil
            } catch let error as RefreshError where error.isTransient && attempt == 1 {
                try await Task.sleep(for: backoff.delay(retryAfter: error.retryAfter))
            }
        }
        preconditionFailure("the loop returns or throws")
    }
}

/// What a list shows, as its session's events said, so that a session replacing a lost one
/// can continue it: the feed position its items are up to date with (`head` of the last
/// `items` that brought it up to date), the first such position (paging down stays below
/// it) and the id of its last item.
struct Shows: Equatable {
    var head: Int?
    var pagedThrough: Int?
    var oldest: String?

    var resume: RefreshClient.Resume? {
        guard let head, let oldest else { return nil }
        return RefreshClient.Resume(head: head, pagedThrough: pagedThrough ?? head, oldest: oldest)
    }

    mutating func note(_ event: SessionEvent) {
        switch event {
        case .items(let update):
            if let head = update.head {
                self.head = head
                pagedThrough = pagedThrough ?? head
            }
            if let last = update.items.last, update.operation == .append || oldest == nil { oldest = last.id }
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
        let task = Task { [session] in await session.listen(continuation) }
        continuation.onTermination = { _ in task.cancel() }
        return stream.makeAsyncIterator()
    }
}
