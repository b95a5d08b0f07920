import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// Builds the whole server from its configuration: routes, middleware, background upkeep.
/// Embed it in another app, or run it with `refresh-server`.
public enum RefreshApplication {
    /// The server as a `ServiceGroup` of its listener and its upkeep: `run()` it (inside
    /// another group, or with `ServiceGroup(… gracefulShutdownSignals: [.sigterm])`), and
    /// `triggerGracefulShutdown()` to stop it cleanly.
    ///
    /// - Parameters:
    ///   - feed: where items come from; by default the SQLite store of `configuration.database`,
    ///     pulling `configuration.feeds`, seeded with demo items on first start if configured.
    ///   - onServerRunning: called with the bound port once listening (useful with port 0).
    public static func build(
        configuration: ServerConfiguration,
        feed: (any FeedSource)? = nil,
        logger: Logger = Logger(label: "refresh-server"),
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> ServiceGroup {
        let feed = try feed ?? defaultFeed(configuration)
        let news = NewsHub()
        let runner = ActionRunner(feed: feed, news: news, configuration: configuration)
        let sessions = SessionStore(runner: runner, limits: configuration)
        let streams = StreamGate(maxStreams: configuration.maxStreams, maxPerClient: configuration.maxStreamsPerClient)
        let proxies = try configuration.validatedTrustedProxies()
        let files = try StaticFiles(directory: configuration.publicDirectory)

        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        HealthRoutes(feed: feed, deadline: .seconds(2)).register(on: router)
        SessionRoutes(sessions: sessions, configuration: configuration).register(on: router)
        ItemRoutes(feed: feed, news: news, configuration: configuration).register(on: router)
        let serveFile: @Sendable (Request, ServerRequestContext) async throws -> Response = { request, _ in
            guard let response = try files.response(path: request.uri.path, request: request) else {
                throw APIError(.notFound, "not_found", "Nothing at \(request.uri.path).")
            }
            return response
        }
        router.get("/", use: serveFile)
        router.get("**", use: serveFile)
        router.head("/", use: serveFile)
        router.head("**", use: serveFile)

        let responder = router.buildResponder()
        let group: any EventLoopGroup = configuration.eventLoops.map { MultiThreadedEventLoopGroup(numberOfThreads: $0) }
            ?? MultiThreadedEventLoopGroup.singleton
        let routes = HotRoutes(
            sessions: sessions, streams: streams, proxies: proxies, configuration: configuration, logger: logger
        ) { request, source in
            try await responder.respond(to: request, context: ServerRequestContext(source: source))
        }
        let server = HTTPServer(
            host: configuration.host, port: configuration.port, group: group, maxHeadBytes: configuration.maxHeadBytes,
            steerByClient: configuration.steerByClient, logger: logger, makeHandler: { ConnectionHandler(routes: routes) }, onServerRunning: onServerRunning)
        let maintenance = SessionMaintenance(sessions: sessions, news: news, feed: feed, keepaliveInterval: configuration.keepaliveInterval)
        return ServiceGroup(configuration: .init(services: [maintenance, server], logger: logger))
    }

    static func defaultFeed(_ configuration: ServerConfiguration) throws -> SQLiteFeed {
        let upstreams = try configuration.feeds.isEmpty
            ? nil : UpstreamSet(urls: configuration.feeds, maxBytes: configuration.maxFeedBytes, timeout: configuration.feedTimeout)
        let store = try SQLiteFeed(path: configuration.database, upstreams: upstreams)
        if configuration.demo ?? configuration.feeds.isEmpty, try store.isEmpty {
            try store.seed(DemoItems.make())
        }
        return store
    }
}
