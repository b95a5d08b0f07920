import NIOCore
import NIOHTTP1

/// What a connection asks of the application it serves. The connection owns the lifecycle
/// (framing, admission, order, deadlines, backpressure, closing); the application owns what
/// the answers say. Every requirement but ``respond(to:body:channel:writer:)`` is called on
/// the connection's event loop.
package protocol HTTPApplication: AnyObject, Sendable {
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
    func preflightAnswered(_ request: ConnectionRequest)
    /// A request routed ``HTTPRoute/stream(parameter:)``: the stream and its opening bytes, or
    /// the answer instead. `writer` is how the stream writes later.
    func openStream(_ request: ConnectionRequest, parameter: String, writer: StreamWriter, channel: any Channel) -> StreamOpening
    /// A request routed ``HTTPRoute/router``, answered on a task: the answer goes out
    /// through `writer`, once.
    func respond(to request: ConnectionRequest, body: ByteBuffer, channel: any Channel, writer: RoutedResponseWriter) async
    /// The answer to a request the connection refused by itself, logged and counted as the
    /// application does any refusal. `head` is `nil` when no request got that far, `match`
    /// when its route was not found yet.
    func refusal(_ refusal: HTTPRefusal, head: HTTPRequestHead?, match: RouteMatch?) -> HTTPAnswer
}

/// An open stream: the application's, on its connection's event loop. The connection holds
/// it while the response lasts (and lets go of it when the connection ends, however it
/// ends); the stream writes through its ``StreamWriter`` whenever it has something to send.
///
/// Nothing here is generic: the connection layer is compiled once, for any application, and
/// a sample's path through it costs no look-ups of the application's types.
package protocol HTTPStream: AnyObject {
    /// The socket was full when the stream last asked (``StreamWriter/mayWrite(_:)``) and takes
    /// bytes again: the stream writes what waits.
    func socketDrained()
    /// The response ends cleanly (what the stream follows ended, its client left, the server
    /// stops): its last bytes before the final chunk (a compressor's trailer), if any.
    func finish() -> ByteBuffer?
    /// The connection lets go of the stream and never asks it anything again: its response
    /// ended (after ``finish()``), or the connection closed, however it closed. Called once.
    func released()
}

/// How a request for a stream is answered.
package enum StreamOpening {
    /// The stream, and the bytes that open it (its response head included).
    case opened(any HTTPStream, ByteBuffer)
    /// Not now: the answer that tells the client to come back later; the connection then closes.
    case overloaded(HTTPAnswer)
    /// Not at all.
    case refused(HTTPAnswer)
    /// A `HEAD` request: the head a `GET` would open the stream with, and no stream.
    case headOnly(HTTPAnswer)
}

/// How an open stream writes: its connection, only ever touched on its event loop. The
/// stream asks before it makes a batch, so what the socket cannot take yet stays where it
/// was (in the application's log), not in a buffer per connection. Each call names the stream
/// it comes from: one that has ended (the connection may serve another by then) is ignored.
package struct StreamWriter: Sendable {
    let handler: NIOLoopBound<ConnectionHandler>

    package var eventLoop: any EventLoop { handler.eventLoop }

    /// On `eventLoop`: whether the socket takes a batch of `stream` now. When it does not,
    /// the stream is told (``HTTPStream/socketDrained()``) once it does; a client that never
    /// reads meets the send deadline.
    package func mayWrite(_ stream: any HTTPStream) -> Bool {
        handler.value.streamMayWrite(stream)
    }

    /// On `eventLoop`, after ``mayWrite(_:)`` said yes: the buffers of one batch, written in
    /// order and flushed together.
    package func write(_ parts: [ByteBuffer], of stream: any HTTPStream) {
        handler.value.writeStream(parts, of: stream)
    }

    /// On `eventLoop`: what `stream` follows has ended, and so does its response
    /// (``HTTPStream/finish()``); the connection then serves on or closes.
    package func end(_ stream: any HTTPStream) {
        handler.value.streamEnded(stream, failed: false)
    }

    /// On `eventLoop`: `stream` could not make its bytes and cannot go on; the connection closes.
    package func fail(_ stream: any HTTPStream) {
        handler.value.streamEnded(stream, failed: true)
    }
}
