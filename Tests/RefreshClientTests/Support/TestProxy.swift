import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy between the client and the server that keeps what passed each way, request by
/// request, and has the faults of a phone's network and of a busy front: it cuts the event
/// streams open through it, refuses new connections, points at another server (a restart on
/// another port), and answers chosen requests itself (a `503` or a `429` with `Retry-After`).
final class TestProxy: Sendable {
    let port: Int
    private let channel: any Channel
    fileprivate let shared: Shared

    private init(channel: any Channel, shared: Shared) {
        self.channel = channel
        self.shared = shared
        port = channel.localAddress?.port ?? 0
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    static func start(to port: Int) async throws -> TestProxy {
        let shared = Shared(target: try SocketAddress(ipAddress: "127.0.0.1", port: port))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FrontendHandler(shared: shared))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TestProxy(channel: channel, shared: shared)
    }

    func close() async {
        try? await channel.close()
        for connection in shared.state.withLock({ $0.connections }) {
            try? await connection.client.close()
        }
    }

    /// New connections go to the server on `port` from now on.
    func retarget(to port: Int) throws {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        shared.state.withLock { $0.target = address }
    }

    /// While set, a new connection is closed as soon as it is accepted.
    var refusing: Bool {
        get { shared.state.withLock { $0.refusing } }
        set { shared.state.withLock { $0.refusing = newValue } }
    }

    /// Closes every connection whose request is an event stream, as a network that drops
    /// them does; answers how many.
    @discardableResult
    func cutStreams() -> Int {
        let open = shared.state.withLock { state in
            state.connections.filter { connection in
                connection.open && (state.exchanges.last { $0.connection == connection.index }?.isEventStream ?? false)
            }
        }
        for connection in open {
            connection.client.close(promise: nil)
        }
        return open.count
    }

    /// Closes every open connection, the client's idle pooled ones too (a request kept from
    /// the server must not find one); answers how many.
    @discardableResult
    func cutAll() -> Int {
        let open = shared.state.withLock { state in state.connections.filter(\.open) }
        for connection in open {
            connection.client.close(promise: nil)
        }
        return open.count
    }

    /// The next `times` requests whose request line satisfies `match` are answered by the
    /// proxy (and their connection closed) instead of reaching the server.
    func answer(times: Int, status: String, retryAfter: Int, code: String, where match: @escaping @Sendable (String) -> Bool) {
        let body = #"{"error":"\#(code)","message":"answered by the test proxy"}"#
        let response =
            "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nRetry-After: \(retryAfter)\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        shared.state.withLock { $0.canned.append(Shared.Canned(match: match, remaining: times, response: response)) }
    }

    /// Canned answers not given yet.
    var cannedLeft: Int { shared.state.withLock { $0.canned.reduce(0) { $0 + $1.remaining } } }

    /// Every request that passed (or was answered here), in the order they began.
    var exchanges: [Exchange] { shared.state.withLock { $0.exchanges } }

    /// The event streams asked for, in order: the `Last-Event-ID` each asked with and the
    /// complete events it got.
    var streams: [(lastEventID: String?, events: [(id: Int, name: String)])] {
        exchanges.filter(\.isEventStream).map { ($0.lastEventID, $0.events) }
    }

    /// Answers the server itself gave with this status (`"429"`).
    func answers(status: String) -> Int {
        exchanges.filter { !$0.answeredHere && $0.responseText.hasPrefix("HTTP/1.1 \(status) ") }.count
    }

    struct Exchange: Sendable {
        var connection: Int
        var request: [UInt8]
        var response: [UInt8] = []
        var answeredHere = false

        var requestLine: String {
            String(decoding: request.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
        }

        var isEventStream: Bool { requestLine.hasPrefix("GET ") && requestLine.contains("/events ") }

        var responseText: String { String(decoding: response, as: UTF8.self) }

        var lastEventID: String? {
            let head = String(decoding: request, as: UTF8.self)
            guard let match = head.firstMatch(of: /(?i)\r\nlast-event-id: *([^\r]*)\r\n/) else { return nil }
            return String(match.output.1)
        }

        /// Ids of the events that arrived whole (a frame cut short by a dropped connection
        /// never reached the client as an event).
        var events: [(id: Int, name: String)] {
            responseText.matches(of: /id: (\d+)\nevent: ([a-z]+)\ndata: [^\n]*\n\n/).compactMap { match in
                Int(match.output.1).map { ($0, String(match.output.2)) }
            }
        }
    }

    fileprivate final class Shared: Sendable {
        struct Canned {
            var match: @Sendable (String) -> Bool
            var remaining: Int
            var response: String
        }

        struct Connection {
            var index: Int
            var client: any Channel
            var open = true
        }

        struct State {
            var target: SocketAddress
            var refusing = false
            var connections: [Connection] = []
            var exchanges: [Exchange] = []
            var canned: [Canned] = []
        }

        let state: Mutex<State>

        init(target: SocketAddress) {
            state = Mutex(State(target: target))
        }

        /// Takes a new connection: its index and where to connect it, or `nil` to refuse it.
        func admit(_ client: any Channel) -> (index: Int, target: SocketAddress)? {
            state.withLock { state in
                guard !state.refusing else { return nil }
                state.connections.append(Connection(index: state.connections.count, client: client))
                return (state.connections.count - 1, state.target)
            }
        }

        func closed(_ index: Int) {
            state.withLock { $0.connections[index].open = false }
        }

        /// What to do with bytes from the client.
        enum Passage {
            case forward([UInt8])
            /// The proxy answers this request itself.
            case answer(String)
        }

        /// Records bytes from the client. A request's head goes on without `Accept-Encoding`,
        /// so that the events recorded on their way back are plain text.
        func fromClient(_ index: Int, _ bytes: [UInt8]) -> Passage {
            state.withLock { state in
                let methods = ["GET ", "POST ", "PUT ", "DELETE ", "HEAD ", "OPTIONS ", "PATCH "]
                let start = String(decoding: bytes.prefix(8), as: UTF8.self)
                guard methods.contains(where: start.hasPrefix) else {
                    if let last = state.exchanges.lastIndex(where: { $0.connection == index }) {
                        state.exchanges[last].request += bytes
                    }
                    return .forward(bytes)
                }
                var exchange = Exchange(connection: index, request: Self.withoutAcceptEncoding(bytes))
                if let canned = state.canned.firstIndex(where: { $0.remaining > 0 && $0.match(exchange.requestLine) }) {
                    state.canned[canned].remaining -= 1
                    exchange.answeredHere = true
                    exchange.response = Array(state.canned[canned].response.utf8)
                    state.exchanges.append(exchange)
                    return .answer(state.canned[canned].response)
                }
                state.exchanges.append(exchange)
                return .forward(exchange.request)
            }
        }

        static func withoutAcceptEncoding(_ bytes: [UInt8]) -> [UInt8] {
            let text = String(decoding: bytes, as: UTF8.self)
            guard let line = text.firstMatch(of: /(?i)\r\naccept-encoding:[^\r]*/) else { return bytes }
            var stripped = text
            stripped.removeSubrange(line.range)
            return Array(stripped.utf8)
        }

        /// The rest of a request the proxy answers itself, kept with it.
        func requestContinues(_ index: Int, _ bytes: [UInt8]) {
            state.withLock { state in
                if let last = state.exchanges.lastIndex(where: { $0.connection == index }) {
                    state.exchanges[last].request += bytes
                }
            }
        }

        func fromServer(_ index: Int, _ bytes: [UInt8]) {
            state.withLock { state in
                if let last = state.exchanges.lastIndex(where: { $0.connection == index }) {
                    state.exchanges[last].response += bytes
                }
            }
        }
    }
}

/// The client's side of one connection.
private final class FrontendHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let shared: TestProxy.Shared
    private var index = -1
    private var peer: (any Channel)?
    /// A request the proxy answers itself, until it has all arrived.
    private var swallowing: (bytes: [UInt8], response: String)?

    init(shared: TestProxy.Shared) {
        self.shared = shared
    }

    func channelActive(context: ChannelHandlerContext) {
        guard let admitted = shared.admit(context.channel) else {
            context.close(promise: nil)
            return
        }
        let (index, target) = admitted
        self.index = index
        let client = context.channel
        let shared = shared
        let connected = ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(BackendHandler(client: client, shared: shared, index: index))
                }
            }
            .connect(to: target)
        connected.assumeIsolated().whenComplete { result in
            switch result {
            case .success(let peer):
                self.peer = peer
                context.channel.setOption(.autoRead, value: true).whenComplete { _ in }
                context.read()
            case .failure:
                context.close(promise: nil)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if index >= 0 { shared.closed(index) }
        peer?.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = Array(unwrapInboundIn(data).readableBytesView)
        if var swallowed = swallowing {
            swallowed.bytes += bytes
            swallowing = swallowed
            shared.requestContinues(index, bytes)
        } else {
            switch shared.fromClient(index, bytes) {
            case .answer(let response):
                swallowing = (bytes, response)
            case .forward(let passing):
                peer?.writeAndFlush(ByteBuffer(bytes: passing), promise: nil)
                return
            }
        }
        if let swallowed = swallowing, Self.isComplete(swallowed.bytes) {
            swallowing = nil
            // The server's side closes after the answer is out (`channelInactive`): closed
            // first, it would close this side before the answer was written.
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: swallowed.response))).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        }
    }

    /// Whether a request's head and body (by `Content-Length`, or chunked) have all arrived.
    static func isComplete(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let headEnd = text.range(of: "\r\n\r\n") else { return false }
        let head = text[..<headEnd.lowerBound].lowercased()
        let body = text[headEnd.upperBound...]
        if let match = head.firstMatch(of: /content-length: *(\d+)/), let length = Int(match.output.1) {
            return body.utf8.count >= length
        }
        if head.contains("transfer-encoding: chunked") { return body.hasSuffix("0\r\n\r\n") }
        return true
    }
}

/// The server's side of one connection: everything it sends goes to the client as it comes.
private final class BackendHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let client: any Channel
    private let shared: TestProxy.Shared
    private let index: Int

    init(client: any Channel, shared: TestProxy.Shared, index: Int) {
        self.client = client
        self.shared = shared
        self.index = index
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        shared.fromServer(index, Array(buffer.readableBytesView))
        client.writeAndFlush(buffer, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
