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

    /// RFC 9110 §12.5.3: the quality `gzip` (or its alias `x-gzip`) is given, else the one
    /// `*` is given, else none: gzip is used when that quality is above 0. A coding named
    /// outright overrides `*`, so `*, gzip;q=0` refuses gzip; a quality that is not one
    /// (`q=high`, `q=2`) is read as 0, as the refusal is the safe reading.
    private static func accepted(encodings header: String) -> Bool {
        var named: Double?
        var wildcard: Double?
        for part in header.split(separator: ",") {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = pieces.first else { continue }
            var quality = 1.0
            for parameter in pieces.dropFirst() where parameter.hasPrefix("q=") {
                quality = Self.quality(parameter.dropFirst(2)) ?? 0
            }
            switch coding {
            case "gzip", "x-gzip": named = max(named ?? 0, quality)
            case "*": wildcard = max(wildcard ?? 0, quality)
            default: continue
            }
        }
        return (named ?? wildcard ?? 0) > 0
    }

    /// A `qvalue`: `0` to `1` with at most three decimals.
    private static func quality(_ text: Substring) -> Double? {
        guard text.count <= 5, text.first == "0" || text.first == "1", let value = Double(text), value <= 1,
            text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") })
        else { return nil }
        return value
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
