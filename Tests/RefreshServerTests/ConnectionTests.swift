import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import RefreshEngine
import Testing

@testable import RefreshFeed
@testable import RefreshHTTP
@testable import RefreshServer

/// The connection layer, bytes in and bytes out: NIO's decoder and ``ConnectionHandler`` on
/// a testing channel whose clock only moves when told, so deadlines are tested without
/// sleeping. Every answer is checked on the wire, in order.
@Suite struct ConnectionTests {
    /// Counts the reads the handler lets through to the socket.
    final class ReadCounter: ChannelOutboundHandler, @unchecked Sendable {
        // Only touched on the testing channel's event loop, and read there by the test.
        typealias OutboundIn = Any
        var reads = 0

        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    /// A socket's send buffer, as NIO sees it: the channel stops being writable once more
    /// than `highWater` bytes are queued, and is again when the client has read them all
    /// (``drain()``).
    final class SocketBuffer: ChannelOutboundHandler, @unchecked Sendable {
        // Only touched on the testing channel's event loop.
        typealias OutboundIn = ByteBuffer
        let highWater: Int
        var queued = 0
        /// The bytes written since the last drain, and the largest write.
        var written = 0
        var largestWrite = 0
        private var context: ChannelHandlerContext?

        init(highWater: Int) {
            self.highWater = highWater
        }

        func handlerAdded(context: ChannelHandlerContext) {
            self.context = context
        }

        /// Bytes the client sends as the next write is made: NIO reads at once when a write
        /// fails, so a read can arrive inside the one being answered.
        var readDuringNextWrite: ByteBuffer?

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            let bytes = unwrapOutboundIn(data).readableBytes
            queued += bytes
            written += bytes
            largestWrite = max(largestWrite, bytes)
            context.write(data, promise: promise)
            if let read = readDuringNextWrite {
                readDuringNextWrite = nil
                context.fireChannelRead(NIOAny(read))
            }
            if queued > highWater, let channel = context.channel as? NIOAsyncTestingChannel, channel.isWritable {
                channel.isWritable = false
                context.fireChannelWritabilityChanged()
            }
        }

        /// The client stops reading: the socket is full.
        func fill() {
            queued = highWater + 1
            (context?.channel as? NIOAsyncTestingChannel)?.isWritable = false
            context?.fireChannelWritabilityChanged()
        }

        /// The client has read everything queued.
        func drain() {
            queued = 0
            written = 0
            (context?.channel as? NIOAsyncTestingChannel)?.isWritable = true
            context?.fireChannelWritabilityChanged()
        }
    }

    /// A connection with a live session store behind it. The router answers every routed
    /// request with `200` and the path, after `routerDelay` and once `routerGate` is open.
    struct Connection {
        let channel: NIOAsyncTestingChannel
        let routes: HotRoutes
        let reads: ReadCounter
        let socket: SocketBuffer
        let configuration: ServerConfiguration

        init(
            _ adjust: (inout ServerConfiguration) -> Void = { _ in }, routerDelay: Duration = .zero, routerGate: Gate? = nil,
            routerBody: (@Sendable (String) -> ResponseBody)? = nil, feed: any FeedSource = MemoryFeed()
        ) async throws {
            var configuration = ServerConfiguration()
            configuration.maxBodyBytes = 256
            configuration.maxHeadBytes = 1024
            configuration.requestHeadTimeout = .seconds(10)
            configuration.idleTimeout = .seconds(60)
            configuration.lingerTimeout = .milliseconds(500)
            adjust(&configuration)
            self.configuration = configuration
            routes = ServerParts.forTest(feed: feed, configuration: configuration).application { request, _, _ in
                if routerDelay > .zero { try await Task.sleep(for: routerDelay) }
                try await routerGate?.wait()
                let path = request.uri.path
                return Response(
                    status: .ok, headers: [.contentType: "text/plain"], body: routerBody?(path) ?? ResponseBody(byteBuffer: ByteBuffer(string: path)))
            }
            reads = ReadCounter()
            socket = SocketBuffer(highWater: 64 * 1024)
            channel = NIOAsyncTestingChannel()
            let maxHeadBytes = configuration.maxHeadBytes
            try await channel.testingEventLoop.executeInContext { [channel, reads, socket, routes] in
                let handler = ConnectionHandler(application: routes)
                let pipeline = channel.pipeline.syncOperations
                try pipeline.addHandler(socket)
                try pipeline.addHandler(reads)
                try HTTPServer.addHandlers(handler, maxHeadBytes: maxHeadBytes, to: pipeline)
            }
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.9", port: 5000)).get()
        }

        func send(_ text: String) async throws {
            try await channel.writeInbound(ByteBuffer(string: text))
        }

        /// Everything written so far, as text.
        func written() async throws -> String {
            var text = ""
            while let buffer = try await channel.readOutbound(as: ByteBuffer.self) {
                text += String(buffer: buffer)
            }
            return text
        }

        /// Waits until the written text contains `count` responses (status lines), for half a
        /// minute at most: routed answers come from a task, as soon as the machine runs it.
        func answers(_ count: Int, seconds: Double = 30) async throws -> String {
            var text = ""
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            while text.components(separatedBy: "HTTP/1.1 ").count - 1 < count {
                if ContinuousClock.now > deadline { throw TestFailure("only: \(text)") }
                if let buffer = try await channel.readOutbound(as: ByteBuffer.self) {
                    text += String(buffer: buffer)
                } else {
                    try await Task.sleep(for: .milliseconds(5))
                    await channel.testingEventLoop.run()
                }
            }
            return text + (try await written())
        }

        /// The client stops reading: the socket fills, and the channel says so, as NIO does.
        func stopReading() async throws {
            channel.isWritable = false
            try await channel.testingEventLoop.executeInContext { [channel] in
                channel.pipeline.syncOperations.fireChannelWritabilityChanged()
            }
        }

        func fire(_ event: Any & Sendable) async throws {
            try await channel.testingEventLoop.executeInContext { [channel] in
                channel.pipeline.syncOperations.fireUserInboundEventTriggered(event)
            }
        }

        var isOpen: Bool { channel.isActive }

        /// `text` arrives while the next write is made (``SocketBuffer/readDuringNextWrite``).
        func readDuringNextWrite(_ text: String) async throws {
            try await channel.testingEventLoop.executeInContext { [socket] in
                socket.readDuringNextWrite = ByteBuffer(string: text)
            }
        }

        /// Whether NIO's decoder reads this connection's bytes now: the reader of plain
        /// requests brings it in when a request is not plain.
        func decoderReads() async throws -> Bool {
            try await channel.testingEventLoop.executeInContext { [channel] in
                (try? channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)) != nil
            }
        }

        /// Whether the connection is closed once what is pending has run: its event loop, and
        /// the router's task that ends an answer there (up to half a minute of it).
        func isClosedOnceSettled() async -> Bool {
            let deadline = ContinuousClock.now + .seconds(30)
            repeat {
                await channel.testingEventLoop.run()
                if !channel.isActive { return true }
                try? await Task.sleep(for: .milliseconds(5))
            } while ContinuousClock.now < deadline
            return false
        }

        func session() throws -> Session {
            try routes.sessions.create(config: Preset.standard.config, client: "test")
        }
    }

    static func get(_ path: String, _ extra: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\(extra)\r\n"
    }

    static func post(_ path: String, _ body: String, _ extra: String = "") -> String {
        "POST \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)"
    }

    static func statuses(_ text: String) -> [Int] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }

    // MARK: - Answers and order

    @Test func aRoutedRequestIsAnsweredAndTheConnectionStaysOpen() async throws {
        let connection = try await Connection()
        try await connection.send(Self.get("/healthz"))
        let reply = try await connection.answers(1)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(reply.contains("Content-Length: 8\r\n"))
        #expect(reply.contains("Server: refresh-server\r\n"))
        #expect(reply.hasSuffix("\r\n\r\n/healthz"))
        #expect(!reply.contains("Connection: close"))
        #expect(connection.isOpen)
    }

    @Test func aSampleIsAnsweredOnTheEventLoopWithItsState() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send(Self.post("/api/sessions/\(session.id)/samples", #"{"seq":1,"y":-30}"#))
        let reply = try await connection.written()
        #expect(Self.statuses(reply) == [200])
        #expect(reply.contains(#"{"state":{"edge":"top","phase":"pulling""#))
        #expect(connection.isOpen)
    }

    @Test func pipelinedRequestsAreAnsweredInTheOrderAsked() async throws {
        let connection = try await Connection(routerDelay: .milliseconds(20))
        let session = try connection.session()
        let sample = Self.post("/api/sessions/\(session.id)/samples", #"{"seq":1,"y":-30}"#)
        try await connection.send(Self.get("/first") + sample + Self.get("/third"))
        let replies = try await connection.answers(3)
        let first = try #require(replies.range(of: "/first"))
        let second = try #require(replies.range(of: #"{"state""#))
        let third = try #require(replies.range(of: "/third"))
        #expect(first.lowerBound < second.lowerBound && second.lowerBound < third.lowerBound)
        #expect(Self.statuses(replies) == [200, 200, 200])
    }

    @Test func plainRequestsAreReadBeforeTheDecoderAndTheFirstOtherOneHandsItTheConnection() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        let sample = Self.post("/api/sessions/\(session.id)/samples", #"{"seq":1,"y":-30}"#)
        try await connection.send(sample + Self.get("/plain"))
        #expect(Self.statuses(try await connection.answers(2)) == [200, 200])
        #expect(try await !connection.decoderReads())
        // A chunked body is the decoder's to read, and so is everything after it.
        let chunked =
            "POST /api/sessions/\(session.id)/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + "Transfer-Encoding: chunked\r\n\r\n11\r\n{\"seq\":2,\"y\":-40}\r\n0\r\n\r\n"
        try await connection.send(chunked)
        let chunkedReply = try await connection.answers(1)
        #expect(Self.statuses(chunkedReply) == [200])
        #expect(chunkedReply.contains(#"{"state":{"#))
        #expect(try await connection.decoderReads())
        try await connection.send(Self.post("/api/sessions/\(session.id)/samples", #"{"seq":3,"y":-50}"#) + Self.get("/after"))
        let after = try await connection.answers(2)
        #expect(Self.statuses(after) == [200, 200])
        #expect(after.hasSuffix("/after"))
    }

    /// The reader of plain requests meets a read inside the one it reads (its sample's
    /// answer is written during the read): the inner read's bytes follow the outer read's,
    /// and reach the decoder after them once it is brought in.
    @Test func aReadThatArrivesWhileAReadIsAnsweredFollowsIt() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.readDuringNextWrite(Self.get("/inner"))
        let notPlain = "GET /outer HTTP/1.1\r\nHost: localhost\r\nX-A: \u{e9}\r\n\r\n"
        try await connection.send(Self.post("/api/sessions/\(session.id)/samples", #"{"seq":1,"y":-30}"#) + notPlain)
        let replies = try await connection.answers(3)
        #expect(Self.statuses(replies) == [200, 200, 200])
        let outer = try #require(replies.range(of: "/outer"))
        let inner = try #require(replies.range(of: "/inner"))
        #expect(outer.lowerBound < inner.lowerBound)
        #expect(connection.isOpen)
    }

    @Test func aHeadCutByTheReadAfterAPlainRequestIsFinishedByTheDecoder() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        let next = Self.get("/second")
        let cut = next.index(next.startIndex, offsetBy: 9)
        try await connection.send(Self.post("/api/sessions/\(session.id)/samples", #"{"seq":1,"y":-30}"#) + next[..<cut])
        #expect(Self.statuses(try await connection.answers(1)) == [200])
        #expect(try await connection.decoderReads())
        try await connection.send(String(next[cut...]))
        let second = try await connection.answers(1)
        #expect(Self.statuses(second) == [200])
        #expect(second.hasSuffix("/second"))
    }

    @Test func whileTheRouterAnswersNothingMoreIsRead() async throws {
        // The router answers once the test opens the gate: the checks below run while it answers.
        let gate = Gate()
        let connection = try await Connection(routerGate: gate)
        let before = connection.reads.reads
        try await connection.send(Self.get("/slow"))
        // The socket asks to read again after the bytes; the pending answer withholds it.
        try await connection.channel.testingEventLoop.executeInContext { [channel = connection.channel] in
            channel.pipeline.read()
        }
        #expect(connection.reads.reads == before)
        gate.open()
        _ = try await connection.answers(1)
        // Once the answer is complete (just after its last byte is written), reading resumes.
        let deadline = ContinuousClock.now + .seconds(30)
        while connection.reads.reads == before, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
            await connection.channel.testingEventLoop.run()
        }
        #expect(connection.reads.reads > before)
    }

    /// The refusal of a malformed head says what is wrong in words that hold for every head
    /// the parser's reason covers: two lengths are not a length beside a coding, and a line
    /// ending in a bare LF is not a bad version.
    @Test(arguments: [
        (
            "POST /api/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
            "its Content-Length is not one length, or comes with Transfer-Encoding"
        ),
        (
            "POST /api/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\n{}",
            "its Content-Length is not one length, or comes with Transfer-Encoding"
        ),
        ("GET /healthz HTTP/1.1\nHost: localhost\n\n", "its request line does not end in HTTP/1.0 or HTTP/1.1 and CRLF"),
    ])
    func aMalformedHeadIsRefusedInWordsThatFitIt(request: String, message: String) async throws {
        let connection = try await Connection()
        try await connection.send(request)
        let reply = try await connection.answers(1)
        #expect(Self.statuses(reply) == [400])
        #expect(reply.contains(#""error":"malformed_request""#))
        #expect(reply.contains(message), "\(reply)")
    }

    @Test func aMalformedRequestIsRefusedAfterTheAnswersBeforeItThenTheConnectionCloses() async throws {
        let connection = try await Connection(routerDelay: .milliseconds(20))
        try await connection.send(Self.get("/before") + "NOT HTTP AT ALL\r\n\r\n")
        let replies = try await connection.answers(2)
        #expect(Self.statuses(replies) == [200, 400])
        let first = try #require(replies.range(of: "/before"))
        let refusal = try #require(replies.range(of: "HTTP/1.1 400"))
        #expect(first.lowerBound < refusal.lowerBound)
        #expect(replies.contains(#""error":"malformed_request""#))
        #expect(replies.contains("Connection: close"))
        #expect(await connection.isClosedOnceSettled())
    }

    @Test func connectionCloseIsHonouredAndSaid() async throws {
        let connection = try await Connection()
        try await connection.send(Self.get("/bye", "Connection: close\r\n"))
        let reply = try await connection.answers(1)
        #expect(reply.contains("Connection: close\r\n"))
        #expect(await connection.isClosedOnceSettled())
    }

    @Test func anHTTP10RequestClosesUnlessItAsksToBeKeptAlive() async throws {
        let connection = try await Connection()
        try await connection.send("GET /old HTTP/1.0\r\n\r\n")
        let reply = try await connection.answers(1)
        #expect(reply.contains("Connection: close\r\n"))
        #expect(await connection.isClosedOnceSettled())
    }

    @Test func aChunkedBodyOverTheLimitIs413AndTheNextRequestIsStillAnswered() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        let big = String(repeating: "x", count: 300)
        let chunked =
            "POST /api/sessions/\(session.id)/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            + String(big.utf8.count, radix: 16) + "\r\n" + big + "\r\n0\r\n\r\n"
        try await connection.send(chunked + Self.get("/next"))
        let replies = try await connection.answers(2)
        #expect(Self.statuses(replies) == [413, 200])
        #expect(replies.contains(#""error":"body_too_large""#))
        #expect(replies.hasSuffix("/next"))
        #expect(connection.isOpen)
    }

    @Test func aContentLengthOverTheLimitIsRefusedBeforeTheBody() async throws {
        let connection = try await Connection()
        try await connection.send("POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        let reply = try await connection.written()
        #expect(Self.statuses(reply) == [413])
    }

    // MARK: - HTTP/1.1 conformance

    @Test(arguments: [
        ("GET / HTTP/1.1\r\n\r\n", 400, "bad_host", true),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "bad_host", true),
        (
            "POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501,
            "unsupported_transfer_encoding", false
        ),
        ("POST /api/items HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501, "unsupported_transfer_encoding", false),
        (
            "POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400, "malformed_request", false
        ),
        ("GET / HTTP/1.1\r\nHost: localhost\r\nExpect: teapot\r\n\r\n", 417, "unsupported_expectation", true),
        ("PUT /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n", 405, "method_not_allowed", true),
        ("GET /api/sessions/abc/samples HTTP/1.1\r\nHost: localhost\r\n\r\n", 405, "method_not_allowed", true),
        ("GET /\(String(repeating: "a", count: 1100)) HTTP/1.1\r\nHost: localhost\r\n\r\n", 431, "head_too_large", false),
        ("GET / HTTP/1.1\r\nHost: localhost\r\nX-Pad: \(String(repeating: "p", count: 1100))\r\n\r\n", 431, "head_too_large", false),
        // What follows a CONNECT is a tunnel's bytes: nothing more is answered.
        ("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 405, "method_not_allowed", false),
        ("GET / HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost\r\nOrigin: http://evil.example\r\n\r\n", 400, "bad_origin", true),
        // A refused request that asked to upgrade: the connection goes on all the same.
        ("GET /api/sessions/abc/samples HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", 405, "method_not_allowed", true),
        // The authority of an absolute-form target is the host asked for, not `Host`.
        ("GET http://evil.example/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", 421, "unknown_host", true),
    ])
    func aNonConformingRequestIsRefusedWithAJSONError(request: String, status: Int, code: String, staysOpen: Bool) async throws {
        let connection = try await Connection()
        try await connection.send(request)
        let reply = try await connection.answers(1)
        #expect(Self.statuses(reply) == [status])
        #expect(reply.contains(#""error":"\#(code)""#))
        if staysOpen {
            await connection.channel.testingEventLoop.run()
            #expect(connection.isOpen)
            try await connection.send(Self.get("/after"))
            #expect(Self.statuses(try await connection.answers(1)) == [200])
        } else {
            #expect(await connection.isClosedOnceSettled())
            #expect(reply.contains("Connection: close"))
        }
    }

    @Test func aMethodNotAllowedNamesTheMethodsThePathHas() async throws {
        let connection = try await Connection()
        try await connection.send("DELETE /api/items HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let reply = try await connection.answers(1)
        #expect(reply.contains("Allow: GET, HEAD, POST\r\n"))
    }

    @Test func expect100ContinueGetsAContinueThenTheAnswer() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        let body = #"{"seq":1,"y":-10}"#
        try await connection.send(
            "POST /api/sessions/\(session.id)/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\n\r\n"
        )
        #expect(try await connection.written() == "HTTP/1.1 100 Continue\r\n\r\n")
        try await connection.send(body)
        #expect(Self.statuses(try await connection.written()) == [200])
    }

    @Test func expect100ContinueWithABodyOverTheLimitIsRefusedWithoutAContinue() async throws {
        let connection = try await Connection()
        try await connection.send(
            "POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
        let reply = try await connection.written()
        #expect(Self.statuses(reply) == [413])
        #expect(!reply.contains("100 Continue"))
        #expect(await connection.isClosedOnceSettled())
    }

    /// A request that waits for `100 Continue` and is refused instead may send its body or
    /// not: the connection closes after the refusal rather than read that body as the next
    /// request.
    @Test(arguments: [
        ("POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n", 415),
        ("POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nOrigin: https://evil.example\r\n", 403),
        ("PATCH /api/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n", 405),
        ("POST /api/items HTTP/1.1\r\nHost: elsewhere.example\r\nContent-Type: application/json\r\n", 421),
    ])
    func expect100ContinueRefusedBeforeItsBodyClosesTheConnection(_ head: String, _ status: Int) async throws {
        let connection = try await Connection()
        let body = #"{"title":"x"}"#
        try await connection.send(head + "Content-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\n\r\n")
        let reply = try await connection.answers(1)
        #expect(Self.statuses(reply) == [status])
        #expect(!reply.contains("100 Continue"))
        #expect(reply.contains("\r\nConnection: close\r\n"))
        try? await connection.send(body)
        #expect(await connection.isClosedOnceSettled())
        #expect(!(try await connection.written()).contains("HTTP/1.1 400"))
    }

    /// A request continued and then answered `404` has sent its body: the connection goes on.
    @Test func expect100ContinueForAnUnknownSessionGetsItsBodyReadThenA404() async throws {
        let connection = try await Connection()
        let body = #"{"seq":1,"y":-10}"#
        try await connection.send(
            "POST /api/sessions/nobody/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\n\r\n"
        )
        #expect(try await connection.written() == "HTTP/1.1 100 Continue\r\n\r\n")
        try await connection.send(body + Self.get("/after"))
        let replies = try await connection.answers(2)
        #expect(Self.statuses(replies) == [404, 200])
        #expect(replies.hasSuffix("/after"))
    }

    @Test func aHeadRequestGetsTheHeadOnlyWithTheLengthTheBodyWouldHave() async throws {
        let connection = try await Connection()
        try await connection.send("HEAD /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n" + Self.get("/after"))
        let replies = try await connection.answers(2)
        let first = try #require(replies.components(separatedBy: "HTTP/1.1 ").dropFirst().first)
        #expect(first.contains("Content-Length: 8\r\n"))
        #expect(first.hasSuffix("\r\n\r\n"))
        #expect(replies.hasSuffix("/after"))
    }

    @Test func aRefusedHeadRequestGetsNoBodyEither() async throws {
        let connection = try await Connection()
        try await connection.send("HEAD /api/sessions/abc/samples HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let reply = try await connection.answers(1)
        #expect(Self.statuses(reply) == [405])
        #expect(reply.contains("Allow: POST\r\n"))
        #expect(reply.hasSuffix("\r\n\r\n"))
        #expect(connection.isOpen)
    }

    @Test func headOnAStreamGetsTheStreamsHeadWithoutOpeningIt() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send(
            "HEAD /api/sessions/\(session.id)/events HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\n\r\n"
                + "HEAD /api/sessions/nobody/events HTTP/1.1\r\nHost: localhost\r\n\r\n" + Self.get("/after"))
        let replies = try await connection.answers(3)
        #expect(Self.statuses(replies) == [200, 404, 200])
        let heads = replies.components(separatedBy: "HTTP/1.1 ").dropFirst()
        let first = try #require(heads.first)
        #expect(first.contains("Content-Type: text/event-stream; charset=utf-8\r\n"))
        #expect(first.contains("Content-Encoding: gzip\r\n"))
        #expect(first.hasSuffix("\r\n\r\n"), "no body: \(first)")
        #expect(try #require(heads.dropFirst().first).hasSuffix("\r\n\r\n"))
        #expect(replies.hasSuffix("/after"))
        #expect(session.openStreams == 0)
        #expect(connection.isOpen)
    }

    // MARK: - Upgrade, CONNECT, absolute targets, repeated fields

    /// What `curl --http2 http://…/a http://…/b` sends: an `h2c` upgrade on the first request.
    static let upgradeFields = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"

    @Test func anUpgradeIsAnsweredAsIfAbsentAndTheConnectionGoesOn() async throws {
        let connection = try await Connection()
        // Pipelined behind it in the same read, and then in a read of its own.
        try await connection.send(Self.get("/a", Self.upgradeFields) + Self.get("/b"))
        let replies = try await connection.answers(2)
        #expect(Self.statuses(replies) == [200, 200])
        #expect(!replies.contains("Connection: close") && !replies.contains("101"))
        #expect(replies.hasSuffix("/b"))
        try await connection.send(Self.get("/c", Self.upgradeFields))
        #expect(try await connection.answers(1).hasSuffix("/c"))
        try await connection.send(Self.get("/d"))
        #expect(try await connection.answers(1).hasSuffix("/d"))
        #expect(connection.isOpen)
    }

    /// The decoder reads `Proxy-Connection` as `Connection`: an upgrade it names stops the
    /// decoder too, and the connection goes on with a fresh one.
    @Test func anUpgradeNamedInProxyConnectionIsAnsweredAndTheConnectionGoesOn() async throws {
        let connection = try await Connection()
        try await connection.send(Self.get("/a", "Proxy-Connection: upgrade\r\nUpgrade: h2c\r\n") + Self.get("/b"))
        let replies = try await connection.answers(2)
        #expect(Self.statuses(replies) == [200, 200])
        #expect(replies.hasSuffix("/b"))
        #expect(connection.isOpen)
    }

    /// An `Upgrade` left blank, or a `Connection` whose tokens llhttp does not read as a list
    /// of `upgrade`, does not stop the decoder: the request after it in the same read is
    /// read by the same decoder (a fresh one put in front of it would be handed parts).
    @Test(arguments: [
        "Connection: upgrade\r\nUpgrade: \r\n", "Proxy-Connection: upgrade\r\nUpgrade: \t\r\n",
        "Connection: upgrade\t,x\r\nUpgrade: websocket\r\n", "Connection: up grade\r\nUpgrade: websocket\r\n",
    ])
    func anUpgradeTheDecoderDoesNotTakeLeavesTheNextRequestToIt(_ fields: String) async throws {
        let connection = try await Connection()
        try await connection.send(Self.get("/a", fields) + Self.get("/b"))
        let replies = try await connection.answers(2)
        #expect(Self.statuses(replies) == [200, 200])
        #expect(replies.hasSuffix("/b"))
        #expect(connection.isOpen)
    }

    /// Nor is a request answered after one whose `Proxy-Connection` says `close`, as the
    /// decoder reads it: the reader of plain requests leaves such a request to the decoder,
    /// and the answer says `Connection: close`, so a proxy that pooled the connection does
    /// not send another user's request down it to be refused.
    @Test(arguments: [
        "Proxy-Connection: close\r\n", "Proxy-Connection: keep-alive, close\r\n", "Connection: keep-alive\r\nProxy-Connection: Close\r\n",
    ])
    func nothingIsAnsweredAfterARequestWhoseProxyConnectionSaysClose(_ fields: String) async throws {
        let connection = try await Connection()
        try await connection.send(Self.get("/a", fields) + Self.get("/b"))
        let replies = try await connection.answers(1)
        #expect(Self.statuses(replies) == [200])
        #expect(replies.contains("\r\nConnection: close\r\n"))
        #expect(await connection.isClosedOnceSettled())
        let all = replies + (try await connection.written())
        #expect(!all.contains("/b"))
        #expect(!all.contains("400"))
    }

    @Test func upgradesInARowAnsweredOnTheEventLoopAreEachFollowedByTheNext() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        let samples = (1...3).map { seq in
            Self.post("/api/sessions/\(session.id)/samples", #"{"seq":\#(seq),"y":-10}"#, "Connection: upgrade\r\nUpgrade: websocket\r\n")
        }
        try await connection.send(samples.joined() + Self.get("/after"))
        let replies = try await connection.answers(4)
        #expect(Self.statuses(replies) == [200, 200, 200, 200])
        #expect(replies.contains(#""seq":3"#))
        #expect(replies.hasSuffix("/after"))
    }

    @Test func aCORSPreflightWithTwoOriginsIsRefusedAtOnce() async throws {
        let connection = try await Connection { $0.corsOrigins = ["https://app.example"] }
        try await connection.send(
            "OPTIONS /api/sessions HTTP/1.1\r\nHost: localhost\r\nOrigin: https://evil.example\r\nOrigin: https://app.example\r\n"
                + "Access-Control-Request-Method: POST\r\n\r\n")
        let reply = try await connection.answers(1)
        #expect(Self.statuses(reply) == [400])
        #expect(reply.contains(#""error":"bad_origin""#))
        #expect(!reply.contains("Access-Control-Allow-Origin"))
        try await connection.send(Self.get("/after"))
        #expect(try await connection.answers(1).hasSuffix("/after"))
    }

    /// Every kind of answer the connection writes carries the listed origin with credentials
    /// allowed (a page sends its cookie and may read the answer), and nothing for another
    /// origin: the preflight, a sample's state, a routed answer, a refusal, a stream's head.
    @Test func everyAnswerToAListedOriginAllowsCredentialsAndNoOtherDoes() async throws {
        let connection = try await Connection { $0.corsOrigins = ["https://app.example"] }
        let session = try connection.session()
        let listed = "Origin: https://app.example\r\n"
        let stranger = "Origin: https://evil.example\r\n"
        try await connection.send(
            "OPTIONS /api/sessions HTTP/1.1\r\nHost: localhost\r\n\(listed)Access-Control-Request-Method: POST\r\n\r\n"
                + Self.post("/api/sessions/\(session.id)/samples", #"{"seq":1,"y":-30}"#, listed) + Self.get("/healthz", listed)
                + "DELETE /api/items HTTP/1.1\r\nHost: localhost\r\n\(listed)\r\n"
                + "OPTIONS /api/sessions HTTP/1.1\r\nHost: localhost\r\n\(stranger)Access-Control-Request-Method: POST\r\n\r\n"
                + Self.get("/healthz", stranger) + Self.post("/api/sessions/\(session.id)/samples", #"{"seq":2,"y":-30}"#, stranger))
        let replies = try await connection.answers(7)
        #expect(Self.statuses(replies) == [204, 200, 200, 405, 405, 200, 403])
        let heads = replies.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.components(separatedBy: "\r\n\r\n")[0] }
        for head in heads.prefix(4) {
            #expect(head.contains("\r\nAccess-Control-Allow-Origin: https://app.example\r\n"), "\(head)")
            #expect(head.contains("\r\nAccess-Control-Allow-Credentials: true\r\n"), "\(head)")
            #expect(head.contains("\r\nVary: Origin\r\n"), "\(head)")
        }
        for head in heads.dropFirst(4) {
            #expect(!head.contains("Access-Control-"), "\(head)")
        }

        try await connection.send(Self.get("/api/sessions/\(session.id)/events", listed))
        let stream = try await connection.written()
        #expect(stream.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(stream.contains("\r\nAccess-Control-Allow-Origin: https://app.example\r\nAccess-Control-Allow-Credentials: true\r\n"))
        #expect(connection.routes.sessions.end(session.id))
    }

    @Test func anAbsoluteFormTargetIsRoutedByItsPathAndCheckedByItsAuthority() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send(
            "GET http://localhost:8080/healthz?x=1 HTTP/1.1\r\nHost: evil.example\r\n\r\n"
                + "POST HTTP://127.0.0.1/api/sessions/\(session.id)/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n"
                + #"{"seq":1,"y":-30}"#)
        let replies = try await connection.answers(2)
        #expect(Self.statuses(replies) == [200, 200])
        #expect(replies.contains("\r\n\r\n/healthz"))
        #expect(replies.contains(#"{"state":{"edge":"top""#))
    }

    @Test func repeatedAcceptEncodingFieldsAreOneList() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(session.id)/events", "Accept-Encoding: br\r\nAccept-Encoding: gzip\r\n"))
        let opening = try await connection.answers(1)
        #expect(opening.contains("Content-Encoding: gzip\r\n"))
    }

    @Test func anHTTP10ClientThatAsksToKeepTheConnectionIsToldItIsKept() async throws {
        let connection = try await Connection()
        try await connection.send("GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let reply = try await connection.answers(1)
        #expect(reply.contains("Connection: keep-alive\r\n"))
        #expect(connection.isOpen)
    }

    @Test func nothingMoreIsReadWhileTheClientLeavesAnswersUnread() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.stopReading()
        try await connection.send(Self.post("/api/sessions/\(session.id)/samples", #"{"seq":1,"y":-30}"#))
        let before = connection.reads.reads
        try await connection.channel.testingEventLoop.executeInContext { [channel = connection.channel] in
            channel.pipeline.read()
        }
        #expect(connection.reads.reads == before)
        connection.channel.isWritable = true
        try await connection.channel.testingEventLoop.executeInContext { [channel = connection.channel] in
            channel.pipeline.syncOperations.fireChannelWritabilityChanged()
        }
        #expect(connection.reads.reads > before)
    }

    @Test func anAnswerTheClientNeverReadsIsDroppedAtTheSendDeadline() async throws {
        let connection = try await Connection(routerDelay: .seconds(30))
        try await connection.send(Self.get("/never"))
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(119))
        #expect(connection.isOpen)
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(2))
        #expect(!connection.isOpen)
    }

    // MARK: - Half-close and quiescing

    @Test func aHalfCloseWhileIdleClosesTheConnection() async throws {
        let connection = try await Connection()
        try await connection.fire(ChannelEvent.inputClosed)
        #expect(!connection.isOpen)
    }

    @Test func aRequestThenAHalfCloseIsAnsweredThenClosed() async throws {
        let gate = Gate()
        let connection = try await Connection(routerGate: gate)
        try await connection.send(Self.get("/last"))
        try await connection.fire(ChannelEvent.inputClosed)
        #expect(connection.isOpen)
        gate.open()
        let reply = try await connection.answers(1)
        #expect(reply.hasSuffix("/last"))
        #expect(await connection.isClosedOnceSettled())
    }

    @Test func quiescingClosesAnIdleConnection() async throws {
        let connection = try await Connection()
        try await connection.send(Self.get("/one"))
        _ = try await connection.answers(1)
        try await connection.fire(ChannelShouldQuiesceEvent())
        #expect(await connection.isClosedOnceSettled())
    }

    @Test func quiescingAnswersTheRequestInProgressWithConnectionClose() async throws {
        let gate = Gate()
        let connection = try await Connection(routerGate: gate)
        try await connection.send(Self.get("/in-progress") + Self.get("/unread"))
        try await connection.fire(ChannelShouldQuiesceEvent())
        gate.open()
        let reply = try await connection.answers(1)
        #expect(reply.contains("Connection: close\r\n"))
        #expect(reply.hasSuffix("/in-progress"))
        #expect(await connection.isClosedOnceSettled())
        #expect(!reply.contains("/unread"))
    }

    @Test func quiescingMidBodyAnswersOnceTheBodyIsInThenCloses() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        let body = #"{"seq":1,"y":-10}"#
        try await connection.send(
            "POST /api/sessions/\(session.id)/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
        )
        try await connection.fire(ChannelShouldQuiesceEvent())
        try await connection.send(body)
        let reply = try await connection.written()
        #expect(Self.statuses(reply) == [200])
        #expect(reply.contains("Connection: close\r\n"))
        #expect(await connection.isClosedOnceSettled())
    }

    // MARK: - Deadlines

    @Test func anIdleConnectionClosesAtTheIdleDeadline() async throws {
        let connection = try await Connection()
        try await connection.send(Self.get("/one"))
        _ = try await connection.answers(1)
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(59))
        #expect(connection.isOpen)
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(2))
        #expect(!connection.isOpen)
        #expect(try await connection.written().isEmpty)
    }

    @Test func aHalfSentHeadIsClosedAtTheRequestDeadline() async throws {
        let connection = try await Connection()
        try await connection.send("GET /slow HTTP/1.1\r\nHo")
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(9))
        #expect(connection.isOpen)
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(2))
        #expect(try await connection.written().isEmpty)
        #expect(!connection.isOpen)
    }

    /// A head started in the read that brought a whole request is held to the head's
    /// deadline, not the idle one, whether the request before it was read by the reader of
    /// plain requests or the decoder (chunked, an upgrade), answered or refused; so is one
    /// whose body has not come. Each first request is answered on the event loop, within the
    /// read, so the deadline is decided when the test moves the clock.
    @Test(arguments: [
        "POST /api/sessions/SESSION/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"seq\":1,\"y\":-10}",
        "POST /api/sessions/SESSION/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n{\"seq\":1,\"y\":-10}\r\n0\r\n\r\n",
        "DELETE /nothing/here HTTP/1.1\r\nHost: localhost\r\nUpgrade: h2c\r\nConnection: upgrade\r\n\r\n",
        "GET /api/sessions/none/events HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n",
    ])
    func aHeadStartedAfterAWholeRequestInOneReadIsClosedAtTheRequestDeadline(_ first: String) async throws {
        for rest in [
            "GET /slow HTTP/1.1\r\nHo", "\r\nG",
            "POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{",
        ] {
            let connection = try await Connection()
            let session = try connection.session()
            try await connection.send(first.replacingOccurrences(of: "SESSION", with: session.id) + rest)
            let written = try await connection.written()
            #expect(Self.statuses(written).count == 1, "\(written)")
            await connection.channel.testingEventLoop.advanceTime(by: .seconds(9))
            #expect(connection.isOpen)
            await connection.channel.testingEventLoop.advanceTime(by: .seconds(2))
            #expect(!connection.isOpen, "\(first.debugDescription) then \(rest.debugDescription)")
        }
    }

    /// Empty lines between requests are no request: the idle deadline still holds.
    @Test func lineEndsAfterAWholeRequestLeaveTheIdleDeadline() async throws {
        let connection = try await Connection()
        try await connection.send(Self.get("/a") + "\r\n")
        _ = try await connection.answers(1)
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(30))
        #expect(connection.isOpen)
        try await connection.send(Self.get("/b"))
        #expect(try await connection.answers(1).hasSuffix("/b"))
    }

    @Test func aHeadTrickledAByteAtATimeIsClosedAtTheDeadlineOfItsFirstByte() async throws {
        let connection = try await Connection()
        let head = "GET /slow HTTP/1.1\r\nHost: localhost\r\nX-Long: " + String(repeating: "a", count: 40)
        for byte in head.prefix(39) {
            try await connection.send(String(byte))
            await connection.channel.testingEventLoop.advanceTime(by: .milliseconds(250))
        }
        #expect(connection.isOpen)
        try await connection.send("a")
        await connection.channel.testingEventLoop.advanceTime(by: .milliseconds(500))
        #expect(!connection.isOpen)
    }

    @Test func theRequestDeadlineRunsFromTheFirstByteThroughTheBody() async throws {
        let connection = try await Connection()
        try await connection.send("POST /api/items HTTP/1.1\r\nHo")
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(6))
        try await connection.send("st: localhost\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{")
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(5))
        #expect(Self.statuses(try await connection.written()) == [408])
        #expect(!connection.isOpen)
    }

    @Test func aBodyThatStallsIsAnswered408() async throws {
        let connection = try await Connection()
        try await connection.send("POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{")
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(11))
        #expect(Self.statuses(try await connection.written()) == [408])
        #expect(!connection.isOpen)
    }

    @Test func aConnectionInUseIsNotClosedByTheDeadlineOfAnEarlierRequest() async throws {
        let connection = try await Connection()
        for index in 0..<5 {
            try await connection.send(Self.get("/\(index)"))
            _ = try await connection.answers(1)
            await connection.channel.testingEventLoop.advanceTime(by: .seconds(40))
        }
        #expect(connection.isOpen)
    }

    // MARK: - Event streams

    @Test func aStreamOpensWithItsStateAndEndsCleanlyWhenItsSessionEnds() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(session.id)/events"))
        let opening = try await connection.written()
        #expect(opening.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(opening.contains("Transfer-Encoding: chunked\r\n"))
        #expect(opening.contains("event: state"))
        #expect(session.openStreams == 1)
        #expect(connection.routes.sessions.end(session.id))
        await connection.channel.testingEventLoop.run()
        #expect(try await connection.written().hasSuffix("0\r\n\r\n"))
        #expect(connection.routes.streams.openStreams == 0)
        // The response is complete, so a client that pooled the connection may use it again.
        #expect(connection.isOpen)
        try await connection.send(Self.get("/after"))
        #expect(Self.statuses(try await connection.answers(1)) == [200])
    }

    @Test func aStreamAskedWithConnectionCloseClosesWhenItsSessionEnds() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send("GET /api/sessions/\(session.id)/events HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        _ = try await connection.written()
        #expect(connection.routes.sessions.end(session.id))
        #expect(await connection.isClosedOnceSettled())
    }

    @Test func aStalledReaderGetsItsEventsWhenItDrains() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(session.id)/events"))
        _ = try await connection.written()
        try await connection.stopReading()
        _ = try session.applySamples([ValidSample(Sample(seq: 1, t: 0, y: -20, phase: .drag))], now: .now)
        _ = try session.applySamples([ValidSample(Sample(seq: 2, t: 16, y: -40, phase: .drag))], now: .now)
        await connection.channel.testingEventLoop.run()
        #expect(try await connection.written().isEmpty)
        connection.channel.isWritable = true
        try await connection.channel.testingEventLoop.executeInContext { [channel = connection.channel] in
            channel.pipeline.syncOperations.fireChannelWritabilityChanged()
        }
        let resumed = try await connection.written()
        // The superseded state was coalesced: only the newest is written.
        #expect(resumed.components(separatedBy: "event: state").count - 1 == 1)
        #expect(resumed.contains(#""seq":2"#))
    }

    /// A reader that stalled while its session logged far more than a socket holds is sent
    /// it as its socket drains: never more at once than the socket's high-water mark and a
    /// batch, whatever the ring holds, and every event once, in order.
    @Test func aStalledReadersCatchUpIsWrittenAsTheSocketDrains() async throws {
        let connection = try await Connection(feed: ScriptedFeed(behaviour: .hang))
        let session = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(session.id)/events"))
        _ = try await connection.written()
        let socket = connection.socket
        try await connection.channel.testingEventLoop.executeInContext { socket.fill() }
        let job = Job(id: session.requestRefresh(now: .now), kind: .refresh, origin: .request)
        // About 400 KB, well inside the session's ring (so no reset for a gap).
        let message = String(repeating: "m", count: 3000)
        for step in 1...120 { session.progress(job, fraction: Double(step) / 200, stage: "step\(step)", message: message) }
        await connection.channel.testingEventLoop.run()
        #expect(try await connection.written().isEmpty)
        var text = ""
        var rounds = 0
        var largestRound = 0
        while !text.contains(#""stage":"step120""#), rounds < 200 {
            try await connection.channel.testingEventLoop.executeInContext { socket.drain() }
            await connection.channel.testingEventLoop.run()
            let round = try await connection.written()
            largestRound = max(largestRound, try await connection.channel.testingEventLoop.executeInContext { socket.written })
            text += round
            rounds += 1
        }
        // Written at once, a round would hold them all.
        #expect(largestRound <= 64 * 1024 + 64 * 1024, "a round wrote \(largestRound) bytes")
        #expect(rounds >= 3)
        #expect(try await connection.channel.testingEventLoop.executeInContext { socket.largestWrite } <= 64 * 1024)
        var position = text.startIndex
        for step in 1...120 {
            let marker = #""stage":"step\#(step)""#
            #expect(text.components(separatedBy: marker).count - 1 == 1, "step \(step) not written once")
            guard let found = text.range(of: marker, range: position..<text.endIndex) else {
                Issue.record("step \(step) out of order")
                break
            }
            position = found.upperBound
        }
    }

    @Test func anHTTP10StreamIsRefusedItsBodyWouldBeChunked() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send("GET /api/sessions/\(session.id)/events HTTP/1.0\r\n\r\n")
        let reply = try await connection.written()
        #expect(Self.statuses(reply) == [505])
        #expect(session.openStreams == 0)
    }

    @Test func aStreamAskedWithConnectionCloseStaysOpen() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send("GET /api/sessions/\(session.id)/events HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        #expect(try await connection.written().contains("event: state"))
        _ = try session.applySamples([ValidSample(Sample(seq: 1, t: 0, y: -20, phase: .drag))], now: .now)
        await connection.channel.testingEventLoop.run()
        #expect(try await connection.written().contains(#""seq":1"#))
        #expect(connection.isOpen)
        #expect(session.openStreams == 1)
    }

    /// A session holds its streams, and a stream leaves it the moment its connection lets go
    /// of it: when the client goes away, as when the server drops it.
    @Test func aStreamLeavesItsSessionWhenItsClientGoesAway() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(session.id)/events"))
        #expect(try await connection.written().contains("event: state"))
        #expect(session.openStreams == 1)
        #expect(connection.routes.streams.openStreams == 1)
        try await connection.channel.close()
        await connection.channel.testingEventLoop.run()
        #expect(session.openStreams == 0)
        #expect(connection.routes.streams.openStreams == 0)
        // The session goes on without it: a sample is taken, and nothing is written anywhere.
        _ = try session.applySamples([ValidSample(Sample(seq: 1, t: 0, y: -20, phase: .drag))], now: .now)
        await connection.channel.testingEventLoop.run()
    }

    /// A stream whose response ends while its connection serves on (its session ended) leaves
    /// the session then, not when the connection closes; the next stream opened on the same
    /// connection is a stream of its own.
    @Test func aStreamWhoseResponseEndsLeavesItsSessionAndTheConnectionServesOn() async throws {
        let connection = try await Connection()
        let first = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(first.id)/events"))
        _ = try await connection.written()
        first.end()
        await connection.channel.testingEventLoop.run()
        #expect(try await connection.written().hasSuffix("0\r\n\r\n"))
        #expect(connection.isOpen)
        #expect(first.openStreams == 0)
        #expect(connection.routes.streams.openStreams == 0)
        let second = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(second.id)/events"))
        #expect(try await connection.written().contains("event: state"))
        #expect(second.openStreams == 1)
        _ = try second.applySamples([ValidSample(Sample(seq: 7, t: 0, y: -20, phase: .drag))], now: .now)
        await connection.channel.testingEventLoop.run()
        #expect(try await connection.written().contains(#""seq":7"#))
    }

    @Test func aStreamWhoseReaderStaysStalledIsDroppedAtTheSendDeadline() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(session.id)/events"))
        _ = try await connection.written()
        try await connection.stopReading()
        _ = try session.applySamples([ValidSample(Sample(seq: 1, t: 0, y: -20, phase: .drag))], now: .now)
        await connection.channel.testingEventLoop.run()
        await connection.channel.testingEventLoop.advanceTime(by: .seconds(121))
        #expect(!connection.isOpen)
        #expect(session.openStreams == 0)
        #expect(connection.routes.streams.openStreams == 0)
    }

    @Test func aStreamOverCapacityIsToldToComeBackLaterWithA200() async throws {
        let connection = try await Connection { $0.maxStreamsPerClient = 0 }
        let session = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(session.id)/events"))
        let reply = try await connection.written()
        #expect(Self.statuses(reply) == [200])
        #expect(reply.contains("Content-Type: text/event-stream"))
        #expect(reply.contains("Connection: close\r\n"))
        let retry = try #require(reply.firstMatch(of: /retry: (\d+)/)).1
        #expect((2000...6000).contains(Int(retry) ?? 0))
        #expect(!reply.contains("event:"))
        #expect(await connection.isClosedOnceSettled())
        #expect(session.openStreams == 0)
    }

    @Test func aStreamForAnUnknownSessionIs404AndTheConnectionServesOn() async throws {
        let connection = try await Connection()
        try await connection.send(Self.get("/api/sessions/nobody/events"))
        #expect(Self.statuses(try await connection.written()) == [404])
        try await connection.send(Self.get("/after"))
        #expect(Self.statuses(try await connection.answers(1)) == [200])
    }

    @Test func quiescingEndsAStreamCleanly() async throws {
        let connection = try await Connection()
        let session = try connection.session()
        try await connection.send(Self.get("/api/sessions/\(session.id)/events"))
        _ = try await connection.written()
        try await connection.fire(ChannelShouldQuiesceEvent())
        #expect(try await connection.written().hasSuffix("0\r\n\r\n"))
        #expect(await connection.isClosedOnceSettled())
        #expect(session.openStreams == 0)
    }

    @Test func aRoutedAnswerOfUnknownLengthIsChunked() async throws {
        let connection = try await Connection(routerBody: { _ in
            ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "one,"))
                try await writer.write(ByteBuffer(string: String(repeating: "z", count: 2000)))
                try await writer.finish(nil)
            }
        })
        try await connection.send(Self.get("/chunks"))
        var reply = try await connection.answers(1)
        let deadline = ContinuousClock.now + .seconds(5)
        while !reply.hasSuffix("0\r\n\r\n"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
            reply += try await connection.written()
        }
        #expect(reply.contains("Transfer-Encoding: chunked\r\n"))
        #expect(reply.contains("4\r\none,\r\n"))
        #expect(reply.hasSuffix("0\r\n\r\n"))
        #expect(connection.isOpen)
    }
}
