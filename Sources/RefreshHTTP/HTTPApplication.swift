import NIOCore
import NIOHTTP1

/// What a connection asks of the application it serves. The connection owns the lifecycle
/// (framing, admission, order, deadlines, backpressure, closing); the application owns what
/// the answers say. Every requirement but ``respond(to:body:channel:writer:)`` is called on
/// the connection's event loop.
package protocol HTTPApplication: AnyObject, Sendable {
    /// What an open stream keeps (its place in the application's log).
    associatedtype Stream
    /// Why a stream is woken: there is something to write, or what it follows has ended.
    associatedtype Wake
    /// What one round of wake-ups shares among the streams it reaches.
    associatedtype Shared

    /// The limits, deadlines and names of the connection.
    var http: HTTPConfiguration { get }
    /// Which hosts are answered, which requests may change state, which origins get CORS.
    var policy: RequestPolicy { get }
    /// The application's route table, as admission asks it.
    var routing: HTTPRouting { get }

    /// A request routed ``HTTPRoute/answer(parameter:)``: its whole answer, as bytes, now.
    func answer(
        _ request: ConnectionRequest, parameter: String, connection: ResponseHead.Connection, allocator: ByteBufferAllocator
    ) -> ByteBuffer
    /// A CORS preflight the connection answered by itself, to be counted.
    func preflightAnswered(_ head: HTTPRequestHead)
    /// A request routed ``HTTPRoute/stream(parameter:)``: the stream and its opening bytes, or
    /// the answer instead. `waker` is how the application wakes the stream later.
    func openStream(_ request: ConnectionRequest, parameter: String, waker: StreamWaker<Self>, channel: any Channel) -> StreamOpening<Stream>
    /// The next bytes an open stream has to write after `wake`, if any.
    func nextBatch(of stream: inout Stream, after wake: Wake, shared: inout Shared) throws -> StreamBatch?
    /// A batch of the stream went to the socket (not called for a wake-up that wrote nothing).
    func batchWritten(shared: inout Shared)
    /// What a stream is woken with when the socket drains, or a batch said more follows.
    var moreToWrite: Wake { get }
    /// What a round of wake-ups starts with.
    func makeShared() -> Shared
    /// Whether `wake` says what the stream follows has ended (the stream then ends too).
    func ends(_ wake: Wake) -> Bool
    /// The last bytes of a stream that ends cleanly (a compressor's trailer), if any.
    func finish(_ stream: inout Stream) -> ByteBuffer?
    /// A request routed ``HTTPRoute/router``, answered on a task: the answer goes out
    /// through `writer`, once.
    func respond(to request: ConnectionRequest, body: ByteBuffer, channel: any Channel, writer: RoutedResponseWriter<Self>) async
    /// The answer to a request the connection refused by itself, logged and counted as the
    /// application does any refusal. `head` is `nil` when no request got that far.
    func refusal(_ refusal: HTTPRefusal, head: HTTPRequestHead?) -> HTTPAnswer
}

/// How a request for a stream is answered.
package enum StreamOpening<Stream> {
    /// The stream, and the bytes that open it (its response head included).
    case opened(Stream, ByteBuffer)
    /// Not now: the answer that tells the client to come back later; the connection then closes.
    case overloaded(HTTPAnswer)
    /// Not at all.
    case refused(HTTPAnswer)
    /// A `HEAD` request: the head a `GET` would open the stream with, and no stream.
    case headOnly(HTTPAnswer)
}

/// Bytes of a stream for one write; `more`: another batch follows as soon as the socket takes it.
package struct StreamBatch {
    package var parts: [ByteBuffer]
    package var more: Bool

    package init(parts: [ByteBuffer], more: Bool) {
        self.parts = parts
        self.more = more
    }
}

/// How the application wakes an open stream: the connection, only ever touched on its event
/// loop.
package struct StreamWaker<Application: HTTPApplication>: Sendable {
    package let eventLoop: any EventLoop
    let handler: NIOLoopBound<ConnectionHandler<Application>>

    /// On `eventLoop`. `shared` is shared by the streams woken together.
    package func wake(_ wake: Application.Wake, shared: inout Application.Shared) {
        handler.value.streamWoken(wake, shared: &shared)
    }
}
