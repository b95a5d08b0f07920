import HTTPTypes
import NIOCore

/// One open `text/event-stream` response: its place in the session's log, its gzip stream,
/// and when it last wrote. It lives on its connection's event loop and turns wake-ups
/// into the bytes to write: the log's shared frames (compressed per connection if asked),
/// or a keepalive comment on a quiet stream.
struct EventStream {
    let session: Session
    let listener: any EventListener
    private var cursor: UInt64
    private let gzip: GzipStream?
    private var lastWrite: ContinuousClock.Instant
    private let quietEnough: Duration

    /// The response head and first bytes (the `retry:` line and the catch-up), or `nil`
    /// when the session ended meanwhile.
    static func open(
        session: Session, listener: any EventListener, lastEventID: UInt64?, gzip: Bool, configuration: ServerConfiguration
    ) throws -> (stream: EventStream, head: HTTPResponse, opening: [ByteBuffer])? {
        let gzip = try gzip ? GzipStream() : nil
        guard let (initial, cursor) = session.subscribe(listener, lastEventID: lastEventID, now: .now) else { return nil }
        var headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8",
            .cacheControl: "no-store",
            .accelBuffering: "no",
            .vary: "Accept-Encoding",
        ]
        if gzip != nil { headers[.contentEncoding] = "gzip" }
        var stream = EventStream(
            session: session, listener: listener, cursor: cursor, gzip: gzip,
            // A wake with nothing new is the keepalive tick; only a stream quiet for at
            // least half the interval needs a comment.
            lastWrite: .now, quietEnough: configuration.keepaliveInterval / 2)
        let retry = ByteBuffer(string: "retry: \(configuration.reconnectDelayMilliseconds)\n\n")
        let opening = try stream.encode([retry] + initial.map(\.frame))
        return (stream, HTTPResponse(status: .ok, headerFields: headers), opening)
    }

    /// What a wake-up has to write; empty when there is nothing.
    mutating func woken(_ reason: Wakeup.Reason, replay: inout ReplayCache) throws -> [ByteBuffer] {
        let (events, next) = replay.events(after: cursor) { [session] in session.events(after: $0) }
        cursor = next
        if !events.isEmpty { return try encode(events.map(\.frame)) }
        if reason == .tick, ContinuousClock.now - lastWrite >= quietEnough { return try encode([Self.keepalive]) }
        return []
    }

    /// The last bytes of the response body: the gzip trailer, if any.
    func finish() throws -> ByteBuffer? {
        try gzip?.finish()
    }

    /// Plain frames go out as they are, shared with every other stream; gzip compresses
    /// them together into one flushed block.
    private mutating func encode(_ frames: [ByteBuffer]) throws -> [ByteBuffer] {
        lastWrite = .now
        guard let gzip else { return frames }
        if frames.count == 1 { return [try gzip.compress(frames[0])] }
        var joined = ByteBufferAllocator().buffer(capacity: frames.reduce(0) { $0 + $1.readableBytes })
        for var frame in frames { joined.writeBuffer(&frame) }
        return [try gzip.compress(joined)]
    }

    static let keepalive = ByteBuffer(string: ": keepalive\n\n")
}
