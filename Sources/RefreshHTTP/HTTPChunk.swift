import NIOCore

/// HTTP/1.1 chunked framing, done once for bytes many streams send.
package enum HTTPChunk {
    /// One chunk as buffers to write in order: its size line, the parts as they are (their
    /// storage shared, not copied), its end.
    package static func parts(_ parts: [ByteBuffer]) -> [ByteBuffer] {
        let size = parts.reduce(0) { $0 + $1.readableBytes }
        return [ByteBuffer(string: String(size, radix: 16) + "\r\n")] + parts + [ByteBuffer(string: "\r\n")]
    }

    package static func frame(_ parts: [ByteBuffer]) -> ByteBuffer {
        let size = parts.reduce(0) { $0 + $1.readableBytes }
        let header = String(size, radix: 16)
        var chunk = ByteBufferAllocator().buffer(capacity: header.utf8.count + size + 4)
        chunk.writeString(header)
        chunk.writeStaticString("\r\n")
        for part in parts { chunk.writeImmutableBuffer(part) }
        chunk.writeStaticString("\r\n")
        return chunk
    }
}
