import NIOCore
import NIOEmbedded
import NIOHTTP1
import RefreshHTTP
import Testing

/// `ConnectionStateMachine.decoderStops(after:)` against NIO's decoder: it never says a
/// decoder stops that goes on (the connection would hand the rest of the read to a fresh
/// decoder as parts, not bytes), and it says so for the upgrades clients send.
@Suite struct DecoderStopTests {
    /// The decoder's reading of `head` followed by a second request in the same bytes:
    /// the first head, and whether the decoder stopped after it (it read no second request
    /// and refused nothing).
    static func decode(_ head: String) -> (head: HTTPRequestHead, stopped: Bool)? {
        let channel = EmbeddedChannel()
        try! channel.pipeline.syncOperations.addHandler(HTTPServer.makeDecoder(maxHeadBytes: 4096))
        defer { _ = try? channel.finish() }
        let refused = (try? channel.writeInbound(ByteBuffer(string: head + "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"))) == nil
        var heads: [HTTPRequestHead] = []
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
            if case .head(let head) = part { heads.append(head) }
        }
        guard let first = heads.first, !refused else { return nil }
        return (first, heads.count == 1)
    }

    static let upgrades = ["h2c", "websocket", "", " ", "\t", "a b"]
    static let names = ["Connection", "Proxy-Connection", "connection", "PROXY-CONNECTION"]
    static let lists = [
        "upgrade", "Upgrade", "UPGRADE", "upgrade,", ",upgrade", "keep-alive,upgrade", "keep-alive, upgrade", "keep-alive ,upgrade",
        "te,upgrade", "Upgrade, HTTP2-Settings", "close, upgrade", "upgrade ,close", "upgrade\t,x", "up grade", "x y, upgrade",
        "a/b, upgrade", "\tupgrade", "upgrade\t", "keep-alive,\tupgrade", "upgrade  ", "upgradex", "x-upgrade", "keep-alive",
    ]

    @Test(arguments: upgrades)
    func neverSaysTheDecoderStoppedWhenItGoesOn(_ upgrade: String) throws {
        for name in Self.names {
            for list in Self.lists {
                for body in ["", "Content-Length: 2\r\n\r\n{}"] {
                    let fields = "\(name): \(list)\r\nUpgrade: \(upgrade)\r\n"
                    let head = body.isEmpty ? "GET /a HTTP/1.1\r\nHost: h\r\n\(fields)\r\n" : "POST /a HTTP/1.1\r\nHost: h\r\n\(fields)\(body)"
                    guard let decoded = Self.decode(head) else { continue }
                    let says = ConnectionStateMachine<Never>.decoderStops(after: decoded.head)
                    #expect(!says || decoded.stopped, "\(head.debugDescription): said stopped, the decoder went on")
                }
            }
        }
    }

    @Test(arguments: [
        "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n",
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n",
        "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n",
        "Proxy-Connection: upgrade\r\nUpgrade: websocket\r\n",
    ])
    func saysSoForTheUpgradesClientsSend(_ fields: String) throws {
        let decoded = try #require(Self.decode("GET /a HTTP/1.1\r\nHost: h\r\n\(fields)\r\n"))
        #expect(decoded.stopped)
        #expect(ConnectionStateMachine<Never>.decoderStops(after: decoded.head))
    }
}
