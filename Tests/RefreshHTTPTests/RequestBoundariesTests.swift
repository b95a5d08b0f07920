import NIOCore
import RefreshHTTP
import Testing

/// ``RequestBoundaries`` follows requests of every framing the decoder takes, cut anywhere:
/// after any prefix of a run of requests it says whether that prefix ends inside one.
@Suite struct RequestBoundariesTests {
    static let requests = [
        "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
        "POST /api/items HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n{\"a\"}",
        "POST /a HTTP/1.1\r\nHost: h\r\ncontent-length:  12 \r\n\r\nhello, world",
        "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1a;name=value\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n",
        "POST /a HTTP/1.1\r\nHost: h\r\ntransfer-encoding: chunked\r\n\r\nA \r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n",
        "GET /upgrade HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n",
        "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
        "\r\nGET /after-an-empty-line HTTP/1.1\r\nHost: h\r\n\r\n",
    ]

    /// Whether `text` cut after `prefix` bytes ends inside a request, given where requests end.
    static func inside(_ prefix: Int, ends: [Int], leading: [Range<Int>]) -> Bool {
        if prefix == 0 || ends.contains(prefix) { return false }
        return !leading.contains { $0.contains(prefix) || $0.upperBound == prefix }
    }

    @Test func saysWhetherEveryPrefixEndsInsideARequest() {
        for first in Self.requests.indices {
            for second in Self.requests.indices {
                let parts = [Self.requests[first], Self.requests[second]]
                let bytes = Array(parts.joined().utf8)
                var ends: [Int] = []
                var leading: [Range<Int>] = []
                var offset = 0
                for part in parts {
                    let blank = part.hasPrefix("\r\n") ? 2 : 0
                    if blank > 0 { leading.append(offset..<(offset + blank)) }
                    offset += part.utf8.count
                    ends.append(offset)
                }
                for cut in 0...bytes.count {
                    var boundaries = RequestBoundaries(maxHeadBytes: 4096)
                    // In two reads, cut where this prefix ends, and the rest after.
                    bytes[..<cut].withUnsafeBytes { boundaries.consume($0) }
                    #expect(
                        boundaries.insideRequest == Self.inside(cut, ends: ends, leading: leading),
                        "\(String(decoding: bytes[..<cut], as: UTF8.self).debugDescription)")
                    bytes[cut...].withUnsafeBytes { boundaries.consume($0) }
                    #expect(!boundaries.insideRequest, "\(parts) cut at \(cut)")
                }
            }
        }
    }

    @Test func aFramingItCannotFollowCountsAsInsideARequest() {
        for text in [
            "POST /a HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
            "POST /a HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
        ] {
            var boundaries = RequestBoundaries(maxHeadBytes: 4096)
            Array((text + "GET / HTTP/1.1\r\nHost: h\r\n\r\n").utf8).withUnsafeBytes { boundaries.consume($0) }
            #expect(boundaries.insideRequest, "\(text.debugDescription)")
        }
    }
}
