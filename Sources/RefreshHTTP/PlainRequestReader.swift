import NIOCore
import NIOHTTP1

/// Reads requests of the plainest shape itself, in front of NIO's request decoder, and hands
/// the connection every other byte to decode.
///
/// Nearly every request a page sends is plain (``PlainRequest``): a sample's `POST` is one
/// read holding a short head and its small body. On its way through NIO's decoder to the
/// ``ConnectionHandler`` such a request costs the C parser's callbacks, a
/// `ByteToMessageHandler` and three parts boxed and passed along the pipeline, about a
/// seventh of the server's user time per sample; this reader gives the handler the same
/// head and body directly.
///
/// It reads only what it is sure the decoder would read the same way, and only requests that
/// arrive whole in one read. The first read that does not start with one goes to the
/// decoder, and so does everything after it on that connection: the decoder then starts at a
/// request's first byte, as it would have, and refuses, frames and limits as it always has. A
/// connection so never has two parsers' views of one request, and what the server refuses
/// and how stays the decoder's.
///
/// The decoder joins the pipeline, behind this reader, when it is first needed: a connection
/// whose requests are all plain (a page's samples, an open stream) never holds one, nor its
/// parser's state.
package final class PlainRequestReader: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    private let maxHeadBytes: Int
    private let handler: ConnectionHandler
    /// Whether the decoder reads this connection's bytes from now on.
    private var decoderReads = false
    /// Whether a read is being read, and what arrived meanwhile.
    private var reading = false
    private var arrived: [ByteBuffer] = []
    /// Where the bytes given to the decoder stand between requests, told to the connection
    /// at the end of each read: a request started in a read that also brought a whole one
    /// is held to the request head's deadline.
    private var boundaries: RequestBoundaries

    /// `handler`: the connection's handler, next in the pipeline; `maxHeadBytes`: the
    /// decoder's limit, which a head this reader reads stays within.
    package init(maxHeadBytes: Int, feeding handler: ConnectionHandler) {
        self.maxHeadBytes = maxHeadBytes
        self.handler = handler
        boundaries = RequestBoundaries(maxHeadBytes: maxHeadBytes)
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if decoderReads {
            unwrapInboundIn(data).withUnsafeReadableBytes { boundaries.consume($0) }
            return context.fireChannelRead(data)
        }
        let buffer = unwrapInboundIn(data)
        if reading {
            // A read inside this one: NIO reads at once when a write made while answering
            // fails. Its bytes follow this read's, after them.
            arrived.append(buffer)
            return
        }
        reading = true
        defer { reading = false }
        var next: ByteBuffer? = buffer
        while var buffer = next {
            while buffer.readableBytes > 0 {
                guard let request = PlainRequest.read(&buffer, maxHeadBytes: maxHeadBytes) else {
                    return handOver(buffer, context: context)
                }
                handler.plainRequestRead(request.head, body: request.body)
            }
            next = arrived.isEmpty ? nil : arrived.removeFirst()
        }
    }

    /// Brings in the decoder behind this reader and gives it `buffer`, then whatever arrived
    /// during this read, in order.
    private func handOver(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        decoderReads = true
        do {
            try context.pipeline.syncOperations.addHandler(HTTPServer.makeDecoder(maxHeadBytes: maxHeadBytes), position: .after(self))
        } catch {
            // The pipeline is being torn down: nothing more will be read.
            return
        }
        // One buffer: a read inside this one would otherwise reach the decoder before them.
        var bytes = buffer
        for later in arrived { bytes.writeImmutableBuffer(later) }
        arrived = []
        bytes.withUnsafeReadableBytes { boundaries.consume($0) }
        context.fireChannelRead(wrapInboundOut(bytes))
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        handler.requestStarted = boundaries.insideRequest
        context.fireChannelReadComplete()
    }
}
