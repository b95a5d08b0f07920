import NIOCore
import NIOEmbedded
import NIOHTTP1
import RefreshHTTP
import Testing

/// ``ConnectionOptions`` against NIO's decoder: the server never keeps a connection alive
/// after a request the decoder reads as its last (the next request, perhaps another user's
/// through a proxy's pool, would be refused), and it reads the fields clients send as the
/// decoder does.
@Suite struct ConnectionOptionsTests {
    /// The decoder's reading of `head` followed by a second request in the same bytes: the
    /// first head, and whether the decoder read the second one.
    static func decode(_ head: String) -> (head: HTTPRequestHead, readsNext: Bool)? {
        let channel = EmbeddedChannel()
        try! channel.pipeline.syncOperations.addHandler(HTTPServer.makeDecoder(maxHeadBytes: 4096))
        defer { _ = try? channel.finish() }
        let refused = (try? channel.writeInbound(ByteBuffer(string: head + "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"))) == nil
        var heads: [HTTPRequestHead] = []
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
            if case .head(let head) = part { heads.append(head) }
        }
        guard let first = heads.first else { return nil }
        return (first, heads.count == 2 && !refused)
    }

    static let names = ["Connection", "Proxy-Connection", "connection", "PROXY-CONNECTION", "proxy-connection"]
    static let lists = [
        "close", "Close", "CLOSE", "keep-alive", "Keep-Alive", "keep-alive, close", "close, keep-alive", "close,", ",close",
        " close", "close ", "\tclose", "close\t", "clo se", "x, close", "close x", "closed", "x-close", "te, close", "keep-alive ",
        "keep-alive\t", "\tkeep-alive", "keep -alive", "keep-alive,x", "x y, keep-alive", "a/b, keep-alive", "upgrade", "", " ",
    ]
    static let versions = ["HTTP/1.1", "HTTP/1.0"]

    @Test(arguments: versions)
    func neverKeepsAliveWhatTheDecoderCloses(_ version: String) throws {
        for name in Self.names {
            for list in Self.lists {
                for second in ["", "Connection: keep-alive\r\n", "Proxy-Connection: close\r\n"] {
                    let head = "GET /a \(version)\r\nHost: h\r\n\(name): \(list)\r\n\(second)\r\n"
                    guard let decoded = Self.decode(head) else { continue }
                    let keeps = ConnectionOptions(decoded.head.headers).keepsAlive(decoded.head.version)
                    #expect(!keeps || decoded.readsNext, "\(head.debugDescription): kept alive, the decoder read no more")
                }
            }
        }
    }

    @Test(arguments: [
        ("HTTP/1.1", "Proxy-Connection: close\r\n", false), ("HTTP/1.1", "Connection: close\r\n", false),
        ("HTTP/1.1", "Proxy-Connection: keep-alive\r\n", true), ("HTTP/1.1", "", true),
        ("HTTP/1.0", "Connection: keep-alive\r\n", true), ("HTTP/1.0", "Proxy-Connection: keep-alive\r\n", true),
        ("HTTP/1.0", "", false), ("HTTP/1.0", "Connection: close\r\n", false),
    ])
    func readsWhatClientsSendAsTheDecoderDoes(_ version: String, _ fields: String, _ keepsAlive: Bool) throws {
        let decoded = try #require(Self.decode("GET /a \(version)\r\nHost: h\r\n\(fields)\r\n"))
        #expect(decoded.readsNext == keepsAlive)
        #expect(ConnectionOptions(decoded.head.headers).keepsAlive(decoded.head.version) == keepsAlive)
    }

    /// An HTTP/1.0 request that says both: the decoder reads on (it asks only for
    /// `keep-alive` there), the server closes, which costs the client a reconnect and never
    /// a refused request.
    @Test func bothKeepAliveAndCloseClose() throws {
        let decoded = try #require(Self.decode("GET /a HTTP/1.0\r\nHost: h\r\nConnection: keep-alive\r\nProxy-Connection: close\r\n\r\n"))
        #expect(!ConnectionOptions(decoded.head.headers).keepsAlive(decoded.head.version))
    }
}
