import Hummingbird
import NIOCore
import NIOHTTP1
import RefreshHTTP

/// The server as the connection's application: samples answered on the event loop, event
/// streams fed from the session's log, everything else through the Hummingbird router.
extension HotRoutes: HTTPApplication {
    typealias Stream = EventStream
    typealias Wake = Wakeup.Reason
    typealias Shared = ReplayCache

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

    func openStream(
        _ request: ConnectionRequest, parameter session: String, waker: StreamWaker<HotRoutes>, channel: any Channel
    )
        -> StreamOpening<EventStream>
    {
        openStream(request.head, session: session, cors: request.cors, listener: StreamListener(waker), channel: channel)
    }

    func nextBatch(of stream: inout EventStream, after wake: Wakeup.Reason, shared: inout ReplayCache) throws -> StreamBatch? {
        try stream.woken(wake, replay: &shared).map { StreamBatch(parts: $0.parts, more: $0.more) }
    }

    func batchWritten(shared: inout ReplayCache) {
        if let arrived = shared.takeSampleArrival() { metrics.sampleWritten(arrived: arrived) }
    }

    var moreToWrite: Wakeup.Reason { .news }

    func makeShared() -> ReplayCache { ReplayCache() }

    func ends(_ wake: Wakeup.Reason) -> Bool { wake == .sessionEnded || wake == .accessExpired }

    func finish(_ stream: inout EventStream) -> ByteBuffer? {
        (try? stream.finish()) ?? nil
    }

    func respond(to request: ConnectionRequest, body: ByteBuffer, channel: any Channel, writer: RoutedResponseWriter<HotRoutes>) async {
        let response = await route(request.head, body: body, channel: channel)
        await writer.send(response.head, length: response.body.contentLength) { writer in try await response.body.write(writer) }
    }

    func refusal(_ refusal: HTTPRefusal, head: HTTPRequestHead?) -> HTTPAnswer {
        self.refusal(APIError(refusal), head)
    }
}

/// The router's body writes straight to the connection.
extension RoutedResponseWriter: ResponseBodyWriter {}

/// How a session's log reaches a stream: its connection, woken on its event loop.
private final class StreamListener: EventListener {
    let waker: StreamWaker<HotRoutes>
    var eventLoop: any EventLoop { waker.eventLoop }

    init(_ waker: StreamWaker<HotRoutes>) {
        self.waker = waker
    }

    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        waker.wake(reason, shared: &replay)
    }
}
