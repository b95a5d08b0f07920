import CompressNIO
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1

enum Gzip {
    /// Whether the request's `Accept-Encoding` allows gzip (and does not refuse it with q=0).
    static func accepted(by request: HTTPRequest) -> Bool {
        request.headerFields[.acceptEncoding].map(accepted(encodings:)) ?? false
    }

    /// Every `Accept-Encoding` field, as one list: RFC 9110 §5.3 lets a client split a list
    /// over repeated fields.
    static func accepted(by headers: HTTPHeaders) -> Bool {
        let fields = headers["accept-encoding"]
        guard let first = fields.first else { return false }
        return accepted(encodings: fields.count == 1 ? first : fields.joined(separator: ","))
    }

    private static func accepted(encodings header: String) -> Bool {
        for part in header.split(separator: ",") {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = pieces.first, coding == "gzip" || coding == "x-gzip" || coding == "*" else { continue }
            let quality = pieces.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
        return false
    }

    /// A whole body, compressed once.
    static func compress(_ buffer: ByteBuffer) -> ByteBuffer? {
        var input = buffer
        return try? input.compress(with: .gzip())
    }
}

/// A gzip stream over one connection, flushed after every write so each event reaches the
/// client at once while later events still share the compression window.
/// Not `Sendable`: one stream's writer task owns it.
final class GzipStream {
    private let compressor: ZlibCompressor

    init() throws {
        // A small window and memory level keep an open stream's cost to a few KiB: events
        // are short and repetitive, so a 4 KiB window loses little ratio.
        compressor = try ZlibCompressor(
            algorithm: .gzip, configuration: .init(windowSize: .window4k, compressionLevel: .compressionLevel6, memoryLevel: .memory4K))
    }

    func compress(_ buffer: ByteBuffer) throws -> ByteBuffer {
        var input = buffer
        var output = ByteBufferAllocator().buffer(capacity: compressor.maxSize(from: input))
        try compressor.deflate(from: &input, to: &output, flush: .sync)
        return output
    }

    /// The gzip trailer, ending the stream cleanly.
    func finish() throws -> ByteBuffer {
        var input = ByteBuffer()
        var output = ByteBufferAllocator().buffer(capacity: 64)
        try compressor.deflate(from: &input, to: &output, flush: .finish)
        return output
    }
}
