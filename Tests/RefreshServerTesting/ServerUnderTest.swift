import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import RefreshFeed
import RefreshServer
import Synchronization

/// The real server on a free port of 127.0.0.1, built through its public API as an app
/// builds it, and stopped as SIGTERM stops it: how the server's suites and the client's
/// start one, and ask it things over HTTP beside what they test.
public final class ServerUnderTest: Sendable {
    public let port: Int
    private let stopper: @Sendable () async -> Void
    private let running: Task<Void, any Error>

    public var base: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, stopper: @escaping @Sendable () async -> Void, running: Task<Void, any Error>) {
        self.port = port
        self.stopper = stopper
        self.running = running
    }

    /// What every test server runs with unless a test says otherwise: a free port, an
    /// in-memory store, refreshes that take no minimum time, the repository's own page.
    public static func configuration(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.minimumActionDuration = .zero
        configuration.database = ":memory:"
        configuration.publicDirectory = publicDirectory
        adjust(&configuration)
        return configuration
    }

    /// The repository's `Public/`, so static-file tests serve the real page.
    public static var publicDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Public").path
    }

    /// Starts a server, once it listens (a minute at most).
    public static func start(
        _ configuration: ServerConfiguration = configuration(), feed: (any FeedSource)? = nil, logger: Logger = quietLogger
    ) async throws -> ServerUnderTest {
        let (ports, portFound) = AsyncStream<Int>.makeStream()
        let app = try await RefreshApplication.build(configuration: configuration, feed: feed, logger: logger) { portFound.yield($0) }
        let running = Task {
            // A server that ends before it listens ends the wait for its port.
            defer { portFound.finish() }
            try await app.run()
        }
        let listening = Task { await ports.first { _ in true } }
        let deadline = Task {
            try await Task.sleep(for: .seconds(60))
            listening.cancel()
        }
        defer { deadline.cancel() }
        guard let port = await listening.value else {
            await app.triggerGracefulShutdown()
            // Why it never listened, when it said.
            try await running.value
            throw TestFailure("the server never listened")
        }
        return ServerUnderTest(port: port, stopper: { await app.triggerGracefulShutdown() }, running: running)
    }

    /// Stops it as SIGTERM would, and waits until it has.
    public func stop() async throws {
        await stopper()
        try await running.value
    }

    /// Runs a server around `body`, stopped after it whatever happens.
    public static func run(
        _ configuration: ServerConfiguration = configuration(), feed: (any FeedSource)? = nil, logger: Logger = quietLogger,
        _ body: (ServerUnderTest) async throws -> Void
    ) async throws {
        let server = try await start(configuration, feed: feed, logger: logger)
        do {
            try await body(server)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    /// A logger that says only what stops the server.
    public static var quietLogger: Logger {
        var logger = Logger(label: "refresh-server")
        logger.logLevel = .critical
        return logger
    }

    // MARK: - Asking it over HTTP

    /// Leaves bodies as the server sent them (a test of gzip reads them compressed).
    public static let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: .init(redirectConfiguration: .disallow, decompression: .disabled))

    /// An answer, whole.
    public struct Reply: Sendable {
        public let status: Int
        public let headers: HTTPHeaders
        public let body: Data

        public var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// `method path`, with `body` as JSON unless `headers` give another type, answered within `timeout`.
    public func request(
        _ method: HTTPMethod, _ path: String, body: String? = nil, headers: [(String, String)] = [], timeout: TimeAmount = .seconds(60)
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.body = .bytes(ByteBuffer(string: body))
            if !request.headers.contains(name: "Content-Type") { request.headers.add(name: "Content-Type", value: "application/json") }
        }
        let response = try await Self.client.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 16 * 1024 * 1024)
        return Reply(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }
}

/// A test's own failure, said in words.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
