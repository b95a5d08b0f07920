import NIOCore
import RefreshHTTP

/// An open event stream on its connection, which holds it while the response lasts: woken
/// by its session's log (through its ``StreamListener``), it writes what the log has for it
/// batch by batch while the socket takes them. Dropping it (the connection ended) drops its
/// ``EventStream``, and with it the stream's place among its session's streams.
final class ConnectionStream: HTTPStream {
    /// Set once the stream is open, before anything can wake it.
    var events: EventStream?
    private let writer: StreamWriter
    private let metrics: ServerMetrics

    init(writer: StreamWriter, metrics: ServerMetrics) {
        self.writer = writer
        self.metrics = metrics
    }

    var eventLoop: any EventLoop { writer.eventLoop }

    /// On the connection's event loop.
    func woken(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        if reason == .sessionEnded || reason == .accessExpired { return writer.end(self) }
        var reason = reason
        while writer.mayWrite(self) {
            let batch: EventStream.Batch?
            do {
                batch = try events?.woken(reason, replay: &replay)
            } catch {
                return writer.fail(self)
            }
            guard let batch else { return }
            writer.write(batch.parts, of: self)
            if let arrived = replay.takeSampleArrival() { metrics.sampleWritten(arrived: arrived) }
            guard batch.more else { return }
            // What is left of a long catch-up goes as the socket takes it.
            reason = .news
        }
    }

    func socketDrained() {
        var replay = ReplayCache()
        woken(.news, replay: &replay)
    }

    func finish() -> ByteBuffer? {
        (try? events?.finish()) ?? nil
    }
}

/// How a session's log reaches a stream. The session holds its listeners until they leave,
/// and a stream leaves when its connection drops it, so the listener only names the stream
/// (weakly) and does not keep it.
///
/// `@unchecked Sendable`: both properties are constants, and the runtime reads and clears a
/// weak reference atomically; the stream it names is only touched in ``wake(_:replay:)``,
/// which runs on `eventLoop`, the stream's connection's (asserted there).
final class StreamListener: EventListener, @unchecked Sendable {
    let eventLoop: any EventLoop
    private weak let stream: ConnectionStream?

    init(_ stream: ConnectionStream) {
        self.stream = stream
        eventLoop = stream.eventLoop
    }

    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        eventLoop.assertInEventLoop()
        stream?.woken(reason, replay: &replay)
    }
}
