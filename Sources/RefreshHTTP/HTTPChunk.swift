import NIOCore

/// HTTP/1.1 chunked framing, done once for bytes many streams send.
package enum HTTPChunk {
    /// One chunk as buffers to write in order: its size line, the parts as they are (their
    /// storage shared, not copied), its end.
    package static func parts(_ parts: [ByteBuffer]) -> [ByteBuffer] {
        var line = ByteBuffer()
        writeSizeLine(parts.reduce(0) { $0 + $1.readableBytes }, into: &line)
        return [line] + parts + [ByteBuffer(string: "\r\n")]
    }

    /// The parts as one chunk in one buffer: its size line, their bytes, its end. `parts`
    /// may be a lazy view (a round's events' frames): no array of them is made.
    @inlinable
    package static func frame<Parts: Collection<ByteBuffer>>(_ parts: Parts) -> ByteBuffer {
        let size = parts.reduce(0) { $0 + $1.readableBytes }
        var chunk = ByteBufferAllocator().buffer(capacity: Self.size(ofChunkOf: size))
        writeSizeLine(size, into: &chunk)
        for part in parts { chunk.writeImmutableBuffer(part) }
        chunk.writeStaticString("\r\n")
        return chunk
    }

    /// How many bytes the chunk of `size` bytes takes: its size line, the bytes, its end.
    package static func size(ofChunkOf size: Int) -> Int {
        let digits = max(1, (Int.bitWidth - size.leadingZeroBitCount + 3) / 4)
        return digits + 2 + size + 2
    }

    /// A chunk's size line: the size in lowercase hexadecimal, then CRLF, written straight
    /// into `buffer` (every event a stream sends starts with one).
    package static func writeSizeLine(_ size: Int, into buffer: inout ByteBuffer) {
        precondition(size >= 0, "a chunk of negative size")
        var shift = 0
        while size >> (shift + 4) > 0 { shift += 4 }
        while shift >= 0 {
            let digit = UInt8((size >> shift) & 0xF)
            buffer.writeInteger(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
            shift -= 4
        }
        buffer.writeStaticString("\r\n")
    }
}
