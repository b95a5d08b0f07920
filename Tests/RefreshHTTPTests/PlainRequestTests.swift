import NIOCore
import NIOEmbedded
import NIOHTTP1
import RefreshHTTP
import Testing

/// The reader of plain requests against NIO's decoder: whatever it reads, the decoder reads
/// the same way, and what it leaves, it leaves untouched.
@Suite struct PlainRequestTests {
    /// What the decoder makes of some bytes: each request's head, body and whether it ended,
    /// in order, up to the first error.
    struct Decoded: Equatable, CustomStringConvertible {
        var method: HTTPMethod
        var uri: String
        var version: HTTPVersion
        var fields: [String]
        var keepAlive: Bool
        var body: [UInt8]

        init(_ head: HTTPRequestHead, body: [UInt8]) {
            method = head.method
            uri = head.uri
            version = head.version
            // Names and values with the boundary between them kept, in order.
            fields = head.headers.map { "\($0.name)\u{0}\($0.value)" }
            keepAlive = head.isKeepAlive
            self.body = body
        }

        var description: String { "\(method) \(uri) \(version) \(fields) keepAlive=\(keepAlive) body=\(body.count)" }
    }

    /// The decoder's requests, and whether it refused the bytes after them.
    static func decoded(_ bytes: [UInt8], maxHeadBytes: Int = 4096) -> (requests: [Decoded], refused: Bool) {
        let channel = EmbeddedChannel()
        try! channel.pipeline.syncOperations.addHandler(HTTPServer.makeDecoder(maxHeadBytes: maxHeadBytes))
        let refused = (try? channel.writeInbound(ByteBuffer(bytes: bytes))) == nil
        var requests: [Decoded] = []
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
            switch part {
            case .head(let started):
                head = started
                body = []
            case .body(let buffer):
                body += buffer.readableBytesView
            case .end:
                if let head { requests.append(Decoded(head, body: body)) }
                head = nil
            }
        }
        _ = try? channel.finish()
        return (requests, refused)
    }

    /// What the reader reads from the start of `bytes`, request by request, and the bytes
    /// it leaves.
    static func read(_ bytes: [UInt8], maxHeadBytes: Int = 4096) -> (requests: [Decoded], left: [UInt8]) {
        var buffer = ByteBuffer(bytes: bytes)
        var requests: [Decoded] = []
        while buffer.readableBytes > 0, let request = PlainRequest.read(&buffer, maxHeadBytes: maxHeadBytes) {
            requests.append(Decoded(request.head, body: request.body.map { Array($0.readableBytesView) } ?? []))
        }
        return (requests, Array(buffer.readableBytesView))
    }

    /// The reader's requests are the decoder's first ones, and a fresh decoder given what the
    /// reader leaves (as the connection gives it) reads the rest as the decoder that read
    /// everything did. Returns how many requests the reader read.
    @discardableResult
    static func agree(_ bytes: [UInt8], maxHeadBytes: Int = 4096, sourceLocation: SourceLocation = #_sourceLocation) -> Int? {
        let plain = read(bytes, maxHeadBytes: maxHeadBytes)
        let whole = decoded(bytes, maxHeadBytes: maxHeadBytes)
        let rest = decoded(plain.left, maxHeadBytes: maxHeadBytes)
        guard whole.requests.starts(with: plain.requests), rest.requests == Array(whole.requests.dropFirst(plain.requests.count)),
            rest.refused == whole.refused
        else {
            let input = String(decoding: bytes, as: UTF8.self).debugDescription
            Issue.record(
                "\(input) (head limit \(maxHeadBytes)): read \(plain.requests), decoded \(whole), decoded after the reader \(rest)",
                sourceLocation: sourceLocation)
            return nil
        }
        return plain.requests.count
    }

    @Test func aSamplesPostIsReadWithItsBody() throws {
        let body = #"{"samples":[{"t":1,"y":-12.5}]}"#
        let text =
            "POST /api/sessions/0123/samples HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nOrigin: http://127.0.0.1:8080\r\n\r\n\(body)"
        var buffer = ByteBuffer(string: text)
        let request = try #require(PlainRequest.read(&buffer, maxHeadBytes: 4096))
        #expect(request.head.method == .POST)
        #expect(request.head.uri == "/api/sessions/0123/samples")
        #expect(request.head.version == .http1_1)
        #expect(request.head.headers["content-type"] == ["application/json"])
        #expect(request.head.headers["origin"] == ["http://127.0.0.1:8080"])
        #expect(request.body.map { String(buffer: $0) } == body)
        #expect(buffer.readableBytes == 0)
        #expect(Self.agree(Array(text.utf8)) == 1)
    }

    @Test func pipelinedRequestsAreReadOneAfterAnother() {
        let text =
            "GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"
            + "HEAD /c?d=e HTTP/1.1\r\n\r\n"
        let plain = Self.read(Array(text.utf8))
        #expect(plain.requests.map(\.uri) == ["/a", "/b", "/c?d=e"])
        #expect(plain.requests.map(\.body) == [[], Array("ok".utf8), []])
        #expect(plain.left.isEmpty)
        #expect(Self.agree(Array(text.utf8)) == 3)
    }

    /// Each of these is left to the decoder whole, with nothing read from it.
    @Test(arguments: [
        "get / HTTP/1.1\r\n\r\n",  // a method the decoder refuses
        "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n",  // a tunnel
        "PROPFIND / HTTP/1.1\r\n\r\n",  // a method beyond the plain ones
        "\r\nGET / HTTP/1.1\r\n\r\n",  // an empty line first
        "GET http://h/ HTTP/1.1\r\n\r\n",  // absolute form
        "GET * HTTP/1.1\r\n\r\n",
        "GET /a#b HTTP/1.1\r\n\r\n",
        "GET /a b HTTP/1.1\r\n\r\n",
        "GET /\u{e9} HTTP/1.1\r\n\r\n",
        "GET /  HTTP/1.1\r\n\r\n",
        "GET / HTTP/2.0\r\n\r\n",
        "GET / HTTP/1.1\n\n",  // bare LF
        "GET / HTTP/1.1\r\nA : b\r\n\r\n",  // white space before the colon
        "GET / HTTP/1.1\r\nA: b \r\n\r\n",  // white space after the value
        "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n",  // a folded line
        "GET / HTTP/1.1\r\nA: \u{e9}\r\n\r\n",  // not ASCII
        "GET / HTTP/1.1\r\nA: b\u{1}\r\n\r\n",  // a control byte
        "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",  // a bare CR
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nab",
        "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\na",
        "POST / HTTP/1.1\r\nContent-Length: 1,1\r\n\r\na",
        "POST / HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc",  // the body not all there
        "GET / HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\n",  // the head not all there
        "GET / HTTP/1.1\r\nConnection: close\r\n\r\n",  // nothing is read after it
        "GET / HTTP/1.0\r\n\r\n",
        "GET / HTTP/1.0\r\nConnection: keep-alive\t,x\r\n\r\n",  // the decoder reads no keep-alive in it
        "GET / HTTP/1.1\r\nConnection: keep-alive, te\r\n\r\n",
        "GET / HTTP/1.1\r\nProxy-Connection: close\r\n\r\n",  // the decoder reads it as Connection
    ])
    func notPlainIsLeftWhole(_ text: String) {
        var buffer = ByteBuffer(string: text)
        #expect(PlainRequest.read(&buffer, maxHeadBytes: 4096)?.head == nil)
        #expect(buffer.readableBytes == text.utf8.count)
        #expect(Self.agree(Array(text.utf8)) == 0)
    }

    @Test func aHeadBeyondTheLimitIsLeftToTheDecoder() {
        let head = "GET / HTTP/1.1\r\nA: \(String(repeating: "b", count: 200))\r\n\r\n"
        var buffer = ByteBuffer(string: head)
        #expect(PlainRequest.read(&buffer, maxHeadBytes: head.utf8.count - 1)?.head == nil)
        #expect(PlainRequest.read(&buffer, maxHeadBytes: head.utf8.count)?.head != nil)
    }

    /// Generated requests, plain and not, and random damage to them: the reader and the
    /// decoder never differ on a request the reader reads.
    @Test func theReaderAndTheDecoderAgreeOnGeneratedRequests() {
        var random = Xorshift(seed: 0x5EED_0F_2026)
        var plain = 0
        for _ in 0..<40_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) { bytes += Self.request(using: &random) }
            if Bool.random(using: &random) {
                for _ in 0..<Int.random(in: 1...2, using: &random) { Self.damage(&bytes, using: &random) }
            }
            guard let read = Self.agree(bytes, maxHeadBytes: Int.random(in: 64...512, using: &random)) else { return }
            plain += read
        }
        // The generator makes plain requests often enough for the comparison to mean something.
        #expect(plain > 6_000)
    }

    /// A request: half of them built of plain parts only (the first of each list).
    static func request(using random: inout Xorshift) -> [UInt8] {
        let plain = Bool.random(using: &random)
        func pick(_ choices: [String], plainOnes: Int) -> String {
            choices[Int.random(in: 0..<(plain ? plainOnes : choices.count), using: &random)]
        }
        let method = pick(["GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "get", "POS", "TRACE", "PURGE"], plainOnes: 7)
        let target = pick(
            ["/", "/api/sessions/ab12/samples", "/a?b=c&d=%20", "//x", "/(x)@:;,+*$!'~", "/a#f", "http://h/x", "*", "/\u{e9}", "/a b"],
            plainOnes: 5)
        let version = pick(["HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.2", "http/1.1", "HTTP/1.1 "], plainOnes: 3)
        var text = "\(method) \(target) \(version)\r\n"
        var length = 0
        for _ in 0..<Int.random(in: 0...5, using: &random) {
            let name = pick(
                [
                    "Host", "Content-Type", "Content-Length", "content-length", "Connection", "Origin", "X-A", "Expect",
                    "Accept!#$%&'*+-.^_`|~", "CONTENT-LENGTH", "Transfer-Encoding", "Upgrade", "Proxy-Connection", "A b", "",
                ], plainOnes: 10)
            var value = pick(
                [
                    "127.0.0.1", "application/json", "0", "2", "05", "keep-alive", "Keep-Alive", "close", "close, Upgrade",
                    "keep-alive, close", "100-continue", "", "a\tb", "a  b", "keep-alive\t,x", "keep-alive ,x", "x,keep-alive", "7", "-1",
                    "1 2", "chunked", "Upgrade", " a", "a ", "\u{e9}", "a\u{7f}", "a\rb", "a\nb",
                ], plainOnes: 18)
            if name.lowercased() == "content-length", Bool.random(using: &random) {
                length = Int.random(in: 0...12, using: &random)
                value = String(length)
            }
            text += "\(name)\(pick([": ", ":", ":\t", ":  ", " : "], plainOnes: 4))\(value)\r\n"
        }
        text += "\r\n"
        // A body of the length given, or around it.
        text += String(repeating: "x", count: max(0, length + (plain ? 0 : Int.random(in: -1...1, using: &random))))
        return Array(text.utf8)
    }

    /// One byte changed, added or dropped.
    static func damage(_ bytes: inout [UInt8], using random: inout Xorshift) {
        let index = Int.random(in: 0..<bytes.count, using: &random)
        let bytePool: [UInt8] = [0, 9, 10, 13, 32, 34, 35, 43, 44, 45, 48, 58, 59, 65, 97, 127, 128, 255]
        switch Int.random(in: 0..<3, using: &random) {
        case 0: bytes[index] = bytePool.randomElement(using: &random)!
        case 1: bytes.insert(bytePool.randomElement(using: &random)!, at: index)
        default: bytes.remove(at: index)
        }
    }
}

/// xorshift64*: reproducible, so a failing seed replays.
struct Xorshift: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
}

extension Array where Element == UInt8 {
    fileprivate func hasSuffix(_ suffix: [UInt8]) -> Bool {
        count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix)
    }
}
