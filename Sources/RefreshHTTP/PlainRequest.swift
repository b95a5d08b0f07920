import NIOCore
import NIOHTTP1

/// A request in the plainest shape HTTP/1.1 has, which NIO's decoder reads the same way
/// (`PlainRequestTests` and the `fuzz-framing` target hold the two to that). Anything else is
/// not one, and is left to the decoder:
///
/// - the request line: `GET`, `HEAD`, `POST`, `PUT`, `DELETE`, `OPTIONS` or `PATCH`, one
///   space, an origin-form target (`/` and then letters, digits and `-._~!$&'()*+,;=:@/?%`),
///   one space, `HTTP/1.1` or `HTTP/1.0`, CRLF;
/// - each field: a token, a colon, optional spaces or tabs, then a value of visible ASCII
///   with spaces or tabs between its bytes but not at its end, CRLF;
/// - no `Transfer-Encoding`, `Upgrade` or `Proxy-Connection`; at most one `Content-Length`,
///   of at most 15 digits; one `Connection` at most, and only `keep-alive`; at most 64 fields;
/// - kept alive: HTTP/1.1, or HTTP/1.0 with `Connection: keep-alive` (the decoder reads
///   nothing after a request that closes the connection);
/// - the whole head, request line and line ends included, within the decoder's limit (which
///   counts only the target, names and values), and the body all there.
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
        var asksKeepAlive = false
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
            case .connection:
                // The decoder's reading of anything else (`close`, a list, `upgrade`, white
                // space between tokens, the field twice) is the decoder's.
                guard !asksKeepAlive, RequestPolicy.equalIgnoringCase(slice(field.value), "keep-alive".utf8) else { return nil }
                asksKeepAlive = true
            case .notPlain:
                return nil
            case nil:
                break
            }
            fields.append((string(field.name), string(field.value)))
        }
        // The decoder reads nothing after a request that closes the connection: what follows
        // one is left to it, the request included.
        guard version == .http1_1 || asksKeepAlive else { return nil }
        let head = HTTPRequestHead(version: version, method: method, uri: uri, headers: HTTPHeaders(fields))
        return (head, index, bodyLength ?? 0)
    }

    /// Twice the fields a browser's `fetch` sends with everything it can add; the decoder's
    /// own limit on their count is far above it.
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
        while index < limit, bytes[index].isTokenByte { index += 1 }
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

    private func slice(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[range])
    }

    private func string(_ range: Range<Int>) -> String {
        String(decoding: slice(range), as: UTF8.self)
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

    /// The fields that decide how a request's bytes are read, or whether the connection is
    /// kept after it.
    private enum Special {
        case contentLength
        case connection
        /// `Transfer-Encoding`, `Upgrade`, and `Proxy-Connection`, which the decoder reads
        /// as `Connection`.
        case notPlain
    }

    private func special(_ name: Range<Int>) -> Special? {
        let name = slice(name)
        return switch name.count {
        case 14 where RequestPolicy.equalIgnoringCase(name, "content-length".utf8): .contentLength
        case 10 where RequestPolicy.equalIgnoringCase(name, "connection".utf8): .connection
        case 17 where RequestPolicy.equalIgnoringCase(name, "transfer-encoding".utf8): .notPlain
        case 7 where RequestPolicy.equalIgnoringCase(name, "upgrade".utf8): .notPlain
        case 16 where RequestPolicy.equalIgnoringCase(name, "proxy-connection".utf8): .notPlain
        default: nil
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
    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
    fileprivate static let space = UInt8(ascii: " ")
    fileprivate static let tab = UInt8(ascii: "\t")
}

extension UInt8 {
    /// RFC 9110 §5.6.2: `tchar`.
    package var isTokenByte: Bool {
        switch self {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}
