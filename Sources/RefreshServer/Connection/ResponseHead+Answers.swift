import NIOCore
import RefreshHTTP

extension ResponseHead {
    /// The answer to a samples POST, `{"state": …}`, written in one go: the hot path has no
    /// header fields to build, only a status line and lines known in advance. A state is a
    /// few hundred bytes, under the size worth compressing.
    static func stateAnswer(
        _ state: ByteBuffer, connection: Connection, cors: String?, variesByOrigin: Bool, allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 240 + state.readableBytes)
        buffer.writeStaticString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: ")
        buffer.writeString(String(state.readableBytes + 10))
        buffer.writeStaticString("\r\n")
        writeCORS(cors, variesByOrigin: variesByOrigin, into: &buffer)
        buffer.writeStaticString("X-Content-Type-Options: nosniff\r\nServer: refresh-server\r\nDate: ")
        buffer.writeString(HTTPDate.now())
        connection.write(into: &buffer)
        buffer.writeStaticString(#"\#r\#n\#r\#n{"state":"#)
        buffer.writeImmutableBuffer(state)
        buffer.writeStaticString("}")
        return buffer
    }
}
