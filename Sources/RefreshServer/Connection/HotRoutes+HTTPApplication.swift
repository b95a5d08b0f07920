import Hummingbird
import NIOCore
import NIOHTTP1
import RefreshHTTP

/// The server as the connection's application: samples answered on the event loop, event
/// streams fed from the session's log, everything else through the Hummingbird router.
extension HotRoutes: HTTPApplication {
    var routing: HTTPRouting { RouteTable.routing }

    /// The samples POST.
    func answer(
        _ request: ConnectionRequest, parameter session: String, connection: ResponseHead.Connection, allocator: ByteBufferAllocator
    )
        -> ByteBuffer
    {
        switch samples(request.head, session: session, body: request.body) {
        case .state(let state):
            ResponseHead.stateAnswer(state, connection: connection, cors: request.cors, allocator: allocator)
        case .refused(let payload):
            ResponseHead.answer(payload, connection: connection, cors: request.cors, headOnly: request.head.method == .HEAD, allocator: allocator)
        }
    }

    func preflightAnswered(_ head: HTTPRequestHead) {
        metrics.requestAnswered(route: RouteTable.pattern(head.uri, status: 204), status: 204)
    }

    func openStream(_ request: ConnectionRequest, parameter session: String, writer: StreamWriter, channel: any Channel) -> StreamOpening {
        openStream(request.head, session: session, cors: request.cors, stream: ConnectionStream(writer: writer, metrics: metrics), channel: channel)
    }

    func respond(to request: ConnectionRequest, body: ByteBuffer, channel: any Channel, writer: RoutedResponseWriter) async {
        let response = await route(request.head, body: body, channel: channel)
        await writer.send(response.head, length: response.body.contentLength) { writer in try await response.body.write(writer) }
    }

    func refusal(_ refusal: HTTPRefusal, head: HTTPRequestHead?) -> HTTPAnswer {
        self.refusal(APIError(refusal), head)
    }
}

/// The router's body writes straight to the connection.
extension RoutedResponseWriter: ResponseBodyWriter {}

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

    /// On the connection's event loop.
    func woken(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        if reason == .sessionEnded || reason == .accessExpired { return writer.end() }
        var reason = reason
        while writer.mayWrite() {
            let batch: EventStream.Batch?
            do {
                batch = try events?.woken(reason, replay: &replay)
            } catch {
                return writer.fail()
            }
            guard let batch else { return }
            writer.write(batch.parts)
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
/// `@unchecked Sendable`: its one stored reference never changes after `init`, and the
/// stream it names is only touched in ``wake(_:replay:)``, which runs on `eventLoop`, the
/// stream's connection's.
final class StreamListener: EventListener, @unchecked Sendable {
    let eventLoop: any EventLoop
    private weak var stream: ConnectionStream?

    init(_ stream: ConnectionStream) {
        self.stream = stream
        eventLoop = stream.eventLoop
    }

    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        stream?.woken(reason, replay: &replay)
    }
}

extension ConnectionStream {
    fileprivate var eventLoop: any EventLoop { writer.eventLoop }
}
