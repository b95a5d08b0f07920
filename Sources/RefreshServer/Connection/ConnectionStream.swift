import NIOCore
import RefreshHTTP

/// An open event stream on its connection, and the listener its session's log wakes.
///
/// The session holds it among its streams, and the connection holds it while the response
/// lasts; when the connection lets go of it (``released()``: the response ended, or the
/// connection closed, however it closed) it drops its ``EventStream``, and with it its
/// place among its session's streams. A round of wake-ups touches the stream's own object and
/// its connection's, nothing in between: no listener object, no weak reference.
///
/// `@unchecked Sendable`: `eventLoop` is a constant; everything else is only touched on it
/// (``wake(_:replay:)`` asserts so).
final class ConnectionStream: HTTPStream, EventListener, @unchecked Sendable {
    /// Set once the stream is open, before anything can wake it; `nil` again once released.
    var events: EventStream?
    let eventLoop: any EventLoop
    private let writer: StreamWriter
    private let metrics: ServerMetrics

    init(writer: StreamWriter, metrics: ServerMetrics) {
        self.writer = writer
        self.metrics = metrics
        eventLoop = writer.eventLoop
    }

    /// On the connection's event loop: writes what the log has for the stream, batch by batch
    /// while the socket takes them. A stream released meanwhile (a round already under way
    /// still names it) is told no by its connection and writes nothing.
    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        eventLoop.assertInEventLoop()
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
        wake(.news, replay: &replay)
    }

    func finish() -> ByteBuffer? {
        (try? events?.finish()) ?? nil
    }

    /// Leaves the session: the stream's ``EventStream`` (which holds the stream as the
    /// session's listener) goes, and as it goes it takes the stream out of the session's.
    func released() {
        events = nil
    }
}
