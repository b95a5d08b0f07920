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
package final class PlainRequestReader: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    private let maxHeadBytes: Int
    private let handler: ConnectionHandler
    /// Whether the decoder reads this connection's bytes from now on.
    package private(set) var decoderReads = false

    /// `handler`: the connection's handler, behind the decoder; `maxHeadBytes`: the
    /// decoder's limit, which a head this reader reads stays within.
    package init(maxHeadBytes: Int, feeding handler: ConnectionHandler) {
        self.maxHeadBytes = maxHeadBytes
        self.handler = handler
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if decoderReads { return context.fireChannelRead(data) }
        var buffer = unwrapInboundIn(data)
        while buffer.readableBytes > 0 {
            guard let request = PlainRequest.read(&buffer, maxHeadBytes: maxHeadBytes) else {
                decoderReads = true
                return context.fireChannelRead(wrapInboundOut(buffer))
            }
            handler.plainRequestRead(request.head, body: request.body)
        }
    }
}

/// A request in the plainest shape HTTP/1.1 has, which NIO's decoder reads the same way (a
/// test holds the two to that). Anything else is not one, and is left to the decoder:
///
/// - the request line: `GET`, `HEAD`, `POST`, `PUT`, `DELETE`, `OPTIONS` or `PATCH`, one
///   space, an origin-form target (`/` and then letters, digits and `-._~!$&'()*+,;=:@/?%`),
///   one space, `HTTP/1.1` or `HTTP/1.0`, CRLF;
/// - each field: a token, a colon, optional spaces or tabs, then a value of visible ASCII
///   with spaces or tabs between its bytes but not at its end, CRLF;
/// - no `Transfer-Encoding` and no `Upgrade`; at most one `Content-Length`, of at most 15
///   digits; at most 64 fields; not `Connection: close`, nor HTTP/1.0 without
///   `Connection: keep-alive`;
/// - the whole head within the decoder's limit, and the body all there.
package struct PlainRequest {
    package var head: HTTPRequestHead
    package var body: ByteBuffer?

    /// Reads one plain request from the start of `buffer`, moving past it; when the bytes do
    /// not start with a whole plain request, nil, and `buffer` is left as it was.
    package static func read(_ buffer: inout ByteBuffer, maxHeadBytes: Int) -> PlainRequest? {
        let found = buffer.withUnsafeReadableBytes { bytes in
            var reader = HeadReader(bytes: bytes, limit: min(bytes.count, maxHeadBytes))
            return reader.read()
        }
        guard let found, buffer.readableBytes - found.length >= found.bodyLength else { return nil }
        buffer.moveReaderIndex(forwardBy: found.length)
        let body = found.bodyLength > 0 ? buffer.readSlice(length: found.bodyLength) : nil
        return PlainRequest(head: found.head, body: body)
    }
}

/// One pass over a head's bytes, up to `limit`.
private struct HeadReader {
    let bytes: UnsafeRawBufferPointer
    let limit: Int
    var index = 0

    init(bytes: UnsafeRawBufferPointer, limit: Int) {
        self.bytes = bytes
        self.limit = limit
    }

    /// The head, its length with the empty line that ends it, and the length its
    /// `Content-Length` gives the body.
    mutating func read() -> (head: HTTPRequestHead, length: Int, bodyLength: Int)? {
        guard let method = method(), let uri = target(), let version = version() else { return nil }
        var fields: [(String, String)] = []
        fields.reserveCapacity(8)
        var bodyLength: Int?
        while true {
            guard index + 1 < limit else { return nil }
            if bytes[index] == .cr {
                guard bytes[index + 1] == .lf else { return nil }
                index += 2
                break
            }
            guard fields.count < Self.maxFields, let field = field() else { return nil }
            switch special(field.name) {
            case .contentLength:
                guard bodyLength == nil, let length = length(field.value) else { return nil }
                bodyLength = length
            case .framing:
                return nil
            case nil:
                break
            }
            fields.append((string(field.name), string(field.value)))
        }
        let head = HTTPRequestHead(version: version, method: method, uri: uri, headers: HTTPHeaders(fields))
        // The decoder reads nothing after a request that closes the connection: what follows
        // one is left to it, the request included.
        guard head.isKeepAlive else { return nil }
        return (head, index, bodyLength ?? 0)
    }

    /// More fields than a page sends; the decoder has a limit of its own on their count.
    private static let maxFields = 64

    private mutating func method() -> HTTPMethod? {
        guard index < limit else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "P"):
            if skip("POST ") { return .POST }
            if skip("PUT ") { return .PUT }
            return skip("PATCH ") ? .PATCH : nil
        case UInt8(ascii: "G"): return skip("GET ") ? .GET : nil
        case UInt8(ascii: "H"): return skip("HEAD ") ? .HEAD : nil
        case UInt8(ascii: "O"): return skip("OPTIONS ") ? .OPTIONS : nil
        case UInt8(ascii: "D"): return skip("DELETE ") ? .DELETE : nil
        default: return nil
        }
    }

    private mutating func target() -> String? {
        let start = index
        guard index < limit, bytes[index] == UInt8(ascii: "/") else { return nil }
        while index < limit, Self.isTargetByte(bytes[index]) { index += 1 }
        guard index < limit, bytes[index] == .space else { return nil }
        defer { index += 1 }
        return string(start..<index)
    }

    private mutating func version() -> HTTPVersion? {
        if skip("HTTP/1.1\r\n") { return .http1_1 }
        if skip("HTTP/1.0\r\n") { return .http1_0 }
        return nil
    }

    /// A field's name and value, past its CRLF.
    private mutating func field() -> (name: Range<Int>, value: Range<Int>)? {
        let nameStart = index
        while index < limit, Self.isTokenByte(bytes[index]) { index += 1 }
        guard index > nameStart, index < limit, bytes[index] == UInt8(ascii: ":") else { return nil }
        let name = nameStart..<index
        index += 1
        while index < limit, bytes[index] == .space || bytes[index] == .tab { index += 1 }
        let valueStart = index
        while index < limit, Self.isVisible(bytes[index]) || ((bytes[index] == .space || bytes[index] == .tab) && index > valueStart) {
            index += 1
        }
        guard index + 1 < limit, bytes[index] == .cr, bytes[index + 1] == .lf else { return nil }
        // White space at a value's end: the decoder's reading of it is left to the decoder.
        if index > valueStart, bytes[index - 1] == .space || bytes[index - 1] == .tab { return nil }
        let value = valueStart..<index
        index += 2
        return (name, value)
    }

    /// Moves past `text` if the bytes go on with it.
    private mutating func skip(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard limit - index >= count else { return false }
        for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
        index += count
        return true
    }

    private func string(_ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// A `Content-Length` of 1 to 15 digits.
    private func length(_ range: Range<Int>) -> Int? {
        guard (1...15).contains(range.count) else { return nil }
        var length = 0
        for index in range {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            length = length * 10 + Int(digit)
        }
        return length
    }

    /// The fields that decide how a request's bytes are read: a plain request has one
    /// length at most, and none of the others.
    private enum Special {
        case contentLength
        /// `Transfer-Encoding`, `Upgrade`.
        case framing
    }

    private func special(_ name: Range<Int>) -> Special? {
        switch name.count {
        case 14 where equalIgnoringCase(name, Self.contentLength): .contentLength
        case 17 where equalIgnoringCase(name, Self.transferEncoding): .framing
        case 7 where equalIgnoringCase(name, Self.upgrade): .framing
        default: nil
        }
    }

    private static let contentLength = Array("content-length".utf8)
    private static let transferEncoding = Array("transfer-encoding".utf8)
    private static let upgrade = Array("upgrade".utf8)

    /// `lowercase` is lower-case ASCII letters and '-', and as long as `range`.
    private func equalIgnoringCase(_ range: Range<Int>, _ lowercase: [UInt8]) -> Bool {
        for (offset, byte) in lowercase.enumerated() where bytes[range.lowerBound + offset] | 0x20 != byte { return false }
        return true
    }

    /// RFC 9110 §5.6.2: `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// RFC 3986's `pchar` without percent-decoding, and `/`, `?`: what an origin-form target
    /// holds when nothing in it is out of the ordinary.
    private static func isTargetByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "!"), UInt8(ascii: "$"),
            UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"),
            UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"),
            UInt8(ascii: "?"), UInt8(ascii: "%"):
            true
        default: false
        }
    }

    /// Visible ASCII: a field value's bytes besides the spaces and tabs between them.
    private static func isVisible(_ byte: UInt8) -> Bool {
        (0x21...0x7E).contains(byte)
    }
}

extension UInt8 {
    fileprivate static let cr = UInt8(ascii: "\r")
    fileprivate static let lf = UInt8(ascii: "\n")
    fileprivate static let space = UInt8(ascii: " ")
    fileprivate static let tab = UInt8(ascii: "\t")
}
