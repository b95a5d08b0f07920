import HTTPTypes
import NIOCore

/// An HTTP/1.1 response head written straight into bytes. The connection writes whole
/// answers as one buffer to the socket: no response encoder in the pipeline, no
/// conversion between header types on the way.
enum ResponseHead {
    /// Writes the status line, `fields`, `Server`, `Date` and, when the connection closes
    /// after this answer, `Connection: close`; then the blank line.
    static func write(
        status: HTTPResponse.Status, fields: HTTPFields, close: Bool, into buffer: inout ByteBuffer
    ) {
        buffer.writeStaticString("HTTP/1.1 ")
        buffer.writeString(String(status.code))
        buffer.writeStaticString(" ")
        buffer.writeString(status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        for field in fields where field.name != .connection && field.name != .server && field.name != .date {
            buffer.writeString(field.name.rawName)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("Server: refresh-server\r\nDate: ")
        buffer.writeString(HTTPDate.now())
        if close { buffer.writeStaticString("\r\nConnection: close") }
        buffer.writeStaticString("\r\n\r\n")
    }

    /// A complete answer with a body of known length: one buffer, one write.
    static func answer(_ payload: JSONPayload, close: Bool, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 160 + payload.body.readableBytes)
        write(status: payload.status, fields: payload.headers, close: close, into: &buffer)
        buffer.writeImmutableBuffer(payload.body)
        return buffer
    }

    /// The interim answer a client sending `Expect: 100-continue` waits for.
    static let continueResponse = ByteBuffer(string: "HTTP/1.1 100 Continue\r\n\r\n")

    /// The last chunk of a chunked body, with no trailers.
    static let lastChunk = ByteBuffer(string: "0\r\n\r\n")
}
