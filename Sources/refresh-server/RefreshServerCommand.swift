import ArgumentParser
import Logging
import ServiceLifecycle
import RefreshServer

#if canImport(Glibc)
import Glibc
#endif

@main
struct RefreshServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh-server",
        abstract: "Serves a pull-to-refresh list whose gestures are decided in Swift and pushed over server-sent events.")

    @Option(help: "Address to listen on. Publishing without a token is allowed only on loopback.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (the URL is printed at start).")
    var port = 8080

    @Option(name: .customLong("public"), help: "Folder of the page and other static files.")
    var publicDirectory = "Public"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "Log lines as text for people, or json: one object per line for a collector.")
    var logFormat: LogFormat = .text

    @Option(help: "Token required as 'Authorization: Bearer TOKEN' by POST /api/items.")
    var publishToken: String?

    @Option(help: "Largest request body in bytes (413 beyond).")
    var maxBodyBytes = 64 * 1024

    @Option(help: "Samples accepted in one request (429 beyond).")
    var maxSamplesPerRequest = 64

    @Option(help: "Sustained samples per second per session (429 beyond).")
    var maxSamplesPerSecond = 300.0

    @Option(help: "Sessions alive at once (503 beyond).")
    var maxSessions = 20_000

    @Option(help: "Sessions one client address may hold (429 beyond).")
    var maxSessionsPerClient = 256

    @Option(help: "Event streams open at once; beyond, a stream is told to retry later (200, a jittered retry:, closed).")
    var maxStreams = 50_000

    @Option(help: "Event streams one client address may hold open; beyond, told to retry later like --max-streams.")
    var maxStreamsPerClient = 256

    @Option(name: .customLong("trusted-proxy"), help: "Address or CIDR network of a proxy whose X-Forwarded-For names the client (repeatable).")
    var trustedProxies: [String] = []

    @Option(help: "Seconds a request head (and then its body) may take to arrive from its first byte (408 beyond).")
    var requestHeadTimeout = 10.0

    @Option(help: "Seconds a kept-alive connection may wait for its next request.")
    var idleTimeout = 60.0

    @Option(help: "Seconds an answer or an event stream may wait for a client that does not read before its connection closes.")
    var sendTimeout = 120.0

    @Option(help: "Largest request head in bytes: request line and header fields (431 beyond).")
    var maxHeadBytes = 16 * 1024

    @Option(help: "Milliseconds browsers wait before reconnecting a stream; each stream is told a jittered value from this to twice it.")
    var reconnectDelayMs = 1000

    @Option(help: "Seconds a session without requests or open streams lives.")
    var sessionIdleTimeout = 600.0

    @Option(help: "Events kept per session for replay after a reconnect.")
    var replayBuffer = 256

    @Option(help: "Kernel send buffer of each event stream, in bytes; a reader that stops reading gets the newest state, not a backlog.")
    var streamSendBuffer = 64 * 1024

    @Option(help: "Seconds between keepalive comments on idle event streams.")
    var keepalive = 15.0

    @Option(help: "Seconds after which a refresh or load-more fails as timed out.")
    var refreshTimeout = 30.0

    @Option(help: "Milliseconds a refresh keeps its spinner at least, so it never flickers.")
    var minRefreshMs = 400

    @Option(help: "Items per load-more page, and at most per refresh.")
    var pageSize = 20

    @Option(help: "SQLite file holding the feed (created with its folder), or :memory:.")
    var database = "data/refresh.sqlite"

    @Option(name: .customLong("feed"), help: "Upstream RSS, Atom or JSON Feed URL a refresh pulls (repeatable).")
    var feeds: [String] = []

    @Option(help: "Largest upstream feed accepted, in bytes.")
    var maxFeedBytes = 10 * 1024 * 1024

    @Option(help: "Seconds an upstream download may take.")
    var feedTimeout = 20.0

    @Option(help: "Threads serving connections (default: one per CPU core). One keeps a sample and the streams it updates on the same thread.")
    var eventLoops: Int?

    @Flag(help: "Keep each client's connections on one event loop, chosen by its address (a sample and its stream never cross threads); not for clients behind a shared address.")
    var steerByClient = false

    @Flag(inversion: .prefixedNo, help: "Seed an empty store with example items (default: on when no --feed is given).")
    var demo: Bool?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535.") }
        for (name, value) in [("--max-body-bytes", maxBodyBytes), ("--max-samples-per-request", maxSamplesPerRequest),
                              ("--max-sessions", maxSessions), ("--replay-buffer", replayBuffer), ("--page-size", pageSize),
                              ("--max-feed-bytes", maxFeedBytes), ("--stream-send-buffer", streamSendBuffer),
                              ("--max-sessions-per-client", maxSessionsPerClient), ("--max-streams", maxStreams),
                              ("--max-streams-per-client", maxStreamsPerClient), ("--max-head-bytes", maxHeadBytes),
                              ("--reconnect-delay-ms", reconnectDelayMs)]
        where value < 1 {
            throw ValidationError("\(name) must be at least 1.")
        }
        for (name, value) in [("--max-samples-per-second", maxSamplesPerSecond), ("--session-idle-timeout", sessionIdleTimeout),
                              ("--keepalive", keepalive), ("--refresh-timeout", refreshTimeout), ("--feed-timeout", feedTimeout),
                              ("--request-head-timeout", requestHeadTimeout), ("--idle-timeout", idleTimeout),
                              ("--send-timeout", sendTimeout)]
        where !(value > 0 && value.isFinite) {
            throw ValidationError("\(name) must be a positive number.")
        }
        if let eventLoops, !(1...256).contains(eventLoops) { throw ValidationError("--event-loops must be from 1 to 256.") }
        guard minRefreshMs >= 0 else { throw ValidationError("--min-refresh-ms must not be negative.") }
        guard maxHeadBytes <= 80 * 1024 else { throw ValidationError("--max-head-bytes must be at most 81920.") }
        var proxies = ServerConfiguration()
        proxies.trustedProxies = trustedProxies
        do { try proxies.validate() } catch { throw ValidationError("--\(error)") }
    }

    func run() async throws {
        let format = logFormat
        LoggingSystem.bootstrap { label in
            switch format {
            case .text: StreamLogHandler.standardError(label: label)
            case .json: JSONLogHandler(label: label)
            }
        }
        var logger = Logger(label: "refresh-server")
        logger.logLevel = logLevel
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.publicDirectory = publicDirectory
        configuration.publishToken = publishToken
        configuration.maxBodyBytes = maxBodyBytes
        configuration.maxSamplesPerRequest = maxSamplesPerRequest
        configuration.maxSamplesPerSecond = maxSamplesPerSecond
        configuration.maxSessions = maxSessions
        configuration.sessionIdleTimeout = .milliseconds(Int64(sessionIdleTimeout * 1000))
        configuration.replayBufferLength = replayBuffer
        configuration.keepaliveInterval = .milliseconds(Int64(keepalive * 1000))
        configuration.actionTimeout = .milliseconds(Int64(refreshTimeout * 1000))
        configuration.minimumActionDuration = .milliseconds(minRefreshMs)
        configuration.pageSize = pageSize
        configuration.database = database
        configuration.feeds = feeds
        configuration.maxFeedBytes = maxFeedBytes
        configuration.feedTimeout = .milliseconds(Int64(feedTimeout * 1000))
        configuration.demo = demo
        configuration.eventLoops = eventLoops
        configuration.streamSendBufferBytes = streamSendBuffer
        configuration.maxSessionsPerClient = maxSessionsPerClient
        configuration.maxStreams = maxStreams
        configuration.maxStreamsPerClient = maxStreamsPerClient
        configuration.trustedProxies = trustedProxies
        configuration.requestHeadTimeout = .milliseconds(Int64(requestHeadTimeout * 1000))
        configuration.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        configuration.maxHeadBytes = maxHeadBytes
        configuration.sendTimeout = .milliseconds(Int64(sendTimeout * 1000))
        configuration.steerByClient = steerByClient
        configuration.reconnectDelayMilliseconds = reconnectDelayMs

        let host = self.host
        let app = try RefreshApplication.build(configuration: configuration, logger: logger) { port in
            let shown = host.contains(":") ? "[\(host)]" : host
            print("refresh-server listening on http://\(shown):\(port)")
            fflush(nil)
        }
        try await ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)).run()
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension LogFormat: ExpressibleByArgument {}
