import HTTPTypes
import NIOCore
import RefreshHTTP

/// One open `text/event-stream` response: its place in the session's log, its gzip stream,
/// and when it last wrote. It lives on its connection's event loop and turns wake-ups into
/// HTTP chunks ready for the socket: the chunk of the log's frames that every plain stream
/// at the same place shares, a per-connection gzip block, or a keepalive comment.
struct EventStream {
    private let subscription: Subscription
    private var cursor: UInt64
    private let gzip: GzipStream?
    private var lastWrite: ContinuousClock.Instant
    /// How long a stream stays quiet before the keepalive tick writes a comment.
    let quietEnough: Duration

    /// The response head and the first chunk (the `retry:` line and the catch-up), or
    /// `nil` when the session ended meanwhile.
    ///
    /// On `listener`'s event loop. `closesAfter`: how long the stream may stay open (its
    /// token's life), after which it ends cleanly, so its reader comes back with a renewed
    /// token and resumes where it was.
    static func open(
        session: Session, listener: any EventListener, ticket: StreamGate.Ticket, lastEventID: UInt64?, gzip: Bool,
        closesAfter: TimeAmount? = nil, settings: SessionSettings
    ) throws -> (stream: EventStream, head: HTTPResponse, opening: ByteBuffer)? {
        let gzip = try gzip ? GzipStream() : nil
        guard let (initial, cursor) = session.subscribe(listener, lastEventID: lastEventID, now: .now) else { return nil }
        let subscription = Subscription(session: session, listener: listener, ticket: ticket)
        if let closesAfter { subscription.close(after: closesAfter) }
        let headers = responseFields(gzip: gzip != nil)
        var stream = EventStream(
            subscription: subscription, cursor: cursor, gzip: gzip,
            // A wake with nothing new is the keepalive tick; only a stream quiet for at
            // least half the interval needs a comment.
            lastWrite: .now, quietEnough: settings.keepaliveInterval / 2)
        let retry = ByteBuffer(string: "retry: \(Self.jitteredRetry(settings, overloaded: false))\n\n")
        let opening = try stream.chunk([retry] + initial.map(\.frame), at: .now)
        return (stream, HTTPResponse(status: .ok, headerFields: headers), opening)
    }

    /// The head's fields of a stream's answer; a `HEAD` request gets the same.
    static func responseFields(gzip: Bool) -> HTTPFields {
        var headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8",
            .cacheControl: "no-store",
            .accelBuffering: "no",
            .vary: "Accept-Encoding",
            // The body is written as ready-made chunks, so say so rather than rely on a default.
            .transferEncoding: "chunked",
        ]
        if gzip { headers[.contentEncoding] = "gzip" }
        return headers
    }

    /// What a wake-up writes: the buffers of one HTTP chunk, in order. `more`: events are
    /// left for the next batch, to be written once the socket has taken this one.
    struct Batch {
        var parts: [ByteBuffer]
        var more = false
        /// Only a keepalive comment: nothing of the session's.
        var keepalive = false
    }

    /// The batch a wake-up has to write, if any.
    mutating func woken(_ reason: Wakeup.Reason, replay: inout ReplayCache) throws -> Batch? {
        // The session is read only when the log is asked or a count told: a round writes to
        // thousands of streams, and for most the stream's own object is all it touches.
        let now = replay.instant()
        // A stream that kept up writes what the wake-up brought; only one behind asks the log.
        let answer =
            replay.announced(after: cursor)
            ?? replay.events(after: cursor, lookup: { subscription.session.delivery(after: $0, unlessThrough: $1) })
        if let shared = answer.parts {
            cursor = answer.cursor
            if answer.coalesced > 0 { subscription.session.metrics.eventsCoalesced(answer.coalesced) }
            guard gzip != nil else {
                lastWrite = now
                return Batch(parts: shared)
            }
            return Batch(parts: [try chunk(answer.events.map(\.frame), at: now)])
        }
        if !answer.events.isEmpty {
            let metrics = subscription.session.metrics
            return try batch(of: answer, at: now, coalesced: { metrics.eventsCoalesced($0) })
        }
        cursor = answer.cursor
        if reason == .tick, now - lastWrite >= quietEnough {
            lastWrite = now
            return Batch(parts: [gzip == nil ? Self.keepaliveChunk : try chunk([Self.keepalive], at: now)], keepalive: true)
        }
        return nil
    }

    /// The first events of an answer too large for one write: as many as fit
    /// ``ReplayCache/maxBatchBytes``, at least one, and never some of the events that share an
    /// id (a reset and its snapshot), which one cursor could not tell apart.
    private mutating func batch(of answer: ReplayCache.Answer, at now: ContinuousClock.Instant, coalesced: (Int) -> Void) throws -> Batch {
        let events = answer.events
        var taken = 0
        var bytes = 0
        while taken < events.count {
            let size = events[taken].frameBytes
            if taken > 0, bytes + size > ReplayCache.maxBatchBytes, events[taken].id != events[taken - 1].id { break }
            bytes += size
            taken += 1
        }
        let more = taken < events.count
        let from = cursor
        cursor = more ? events[taken - 1].id : answer.cursor
        // Ids are dense: those up to the new cursor that are not sent were superseded.
        let left = more ? Int(cursor - from) - taken : answer.coalesced
        if left > 0 { coalesced(left) }
        let frames = events[..<taken].map(\.frame)
        guard gzip == nil else { return Batch(parts: [try chunk(frames, at: now)], more: more) }
        lastWrite = now
        return Batch(parts: HTTPChunk.parts(frames), more: more)
    }

    /// The gzip trailer, ending the compressed body cleanly, as a chunk.
    func finish() throws -> ByteBuffer? {
        try gzip.map { HTTPChunk.frame([try $0.finish()]) }
    }

    private mutating func chunk(_ frames: [ByteBuffer], at now: ContinuousClock.Instant) throws -> ByteBuffer {
        lastWrite = now
        guard let gzip else { return HTTPChunk.frame(frames) }
        if frames.count == 1 { return HTTPChunk.frame([try gzip.compress(frames[0])]) }
        var joined = ByteBufferAllocator().buffer(capacity: frames.reduce(0) { $0 + $1.readableBytes })
        for var frame in frames { joined.writeBuffer(&frame) }
        return HTTPChunk.frame([try gzip.compress(joined)])
    }

    static let keepalive = ByteBuffer(string: ": keepalive\n\n")
    static let keepaliveChunk = HTTPChunk.frame([keepalive])

    /// The `retry:` a stream is told: between the configured delay and twice it, so pages
    /// that lose the server at the same instant come back spread out; a stream refused for
    /// overload waits longer, between twice and six times it.
    static func jitteredRetry(_ settings: SessionSettings, overloaded: Bool) -> Int {
        let base = max(1, settings.reconnectDelayMilliseconds)
        return overloaded ? Int.random(in: 2 * base...6 * base) : Int.random(in: base...2 * base)
    }

    /// The complete answer to a stream the server cannot take now: `200` (any other status
    /// would close a browser's `EventSource` for good), a jittered `retry:` and nothing else;
    /// then the connection closes and the browser comes back later by itself.
    static func overloadAnswer(_ settings: SessionSettings) -> JSONPayload {
        let body = ByteBuffer(string: ": the server is busy; come back later\nretry: \(jitteredRetry(settings, overloaded: true))\n\n")
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8",
            .cacheControl: "no-store",
            .accelBuffering: "no",
            .contentLength: String(body.readableBytes),
        ]
        return JSONPayload(status: .ok, headers: headers, body: body)
    }
}

/// A stream's hold on its session and on its place among the open streams: both are let go
/// exactly once, when the stream is dropped, however its connection ended. So is its timer,
/// if its token gave it one: a stream that ended first is not woken later, and the next
/// stream of its connection is not ended by it.
private final class Subscription {
    let session: Session
    let listener: any EventListener
    let ticket: StreamGate.Ticket
    private var closing: Scheduled<Void>?

    init(session: Session, listener: any EventListener, ticket: StreamGate.Ticket) {
        self.session = session
        self.listener = listener
        self.ticket = ticket
    }

    /// On the listener's event loop: ends the stream after `delay`.
    func close(after delay: TimeAmount) {
        let listener = listener
        closing = listener.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            var replay = ReplayCache()
            listener.wake(.accessExpired, replay: &replay)
        }
    }

    deinit {
        closing?.cancel()
        session.unsubscribe(listener, now: .now)
    }
}
