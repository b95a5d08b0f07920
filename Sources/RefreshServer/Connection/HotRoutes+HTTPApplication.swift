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
        switch samples(request.head, session: session, body: request.body, match: request.match) {
        case .state(let state):
            ResponseHead.stateAnswer(state, connection: connection, cors: request.cors, variesByOrigin: policy.variesByOrigin, allocator: allocator)
        case .refused(let payload):
            ResponseHead.answer(
                payload, connection: connection, cors: request.cors, variesByOrigin: policy.variesByOrigin, headOnly: request.head.method == .HEAD,
                allocator: allocator)
        }
    }

    func preflightAnswered(_ request: ConnectionRequest) {
        metrics.requestAnswered(route: RouteTable.label(request.match, head: request.head, status: 204), status: 204)
    }

    /// A session's stream names it in its path; the shared stream (no parameter) in its query.
    func openStream(_ request: ConnectionRequest, parameter session: String, writer: StreamWriter, channel: any Channel) -> StreamOpening {
        if session.isEmpty { return openSharedStream(request.head, match: request.match, cors: request.cors, writer: writer, channel: channel) }
        return openStream(request.head, session: session, match: request.match, cors: request.cors, writer: writer, channel: channel)
    }

    func respond(to request: ConnectionRequest, body: ByteBuffer, channel: any Channel, writer: RoutedResponseWriter) async {
        let response = await route(request.head, match: request.match, body: body, channel: channel)
        await writer.send(response.head, length: response.body.contentLength) { writer in try await response.body.write(writer) }
    }

    func refusal(_ refusal: HTTPRefusal, head: HTTPRequestHead?, match: RouteMatch?) -> HTTPAnswer {
        self.refusal(APIError(refusal), head, match: match)
    }
}

/// The router's body writes straight to the connection.
extension RoutedResponseWriter: ResponseBodyWriter {}
