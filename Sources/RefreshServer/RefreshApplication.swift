import Hummingbird
import Logging
import NIOCore
import NIOPosix

/// Builds the whole server from its configuration: routes, middleware, background upkeep.
/// Embed it in another app, or run it with `refresh-server`.
public enum RefreshApplication {
    /// - Parameters:
    ///   - feed: where items come from; by default the SQLite store of `configuration.database`,
    ///     pulling `configuration.feeds`, seeded with demo items on first start if configured.
    ///   - onServerRunning: called with the bound port once listening (useful with port 0).
    public static func build(
        configuration: ServerConfiguration,
        feed: (any FeedSource)? = nil,
        logger: Logger = Logger(label: "refresh-server"),
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        let feed = try feed ?? defaultFeed(configuration)
        let runner = ActionRunner(feed: feed, configuration: configuration)
        let sessions = SessionStore(runner: runner, limits: configuration)
        let files = try StaticFiles(directory: configuration.publicDirectory)

        let router = Router()
        router.add(middleware: ErrorMiddleware())
        router.get("healthz") { request, _ in
            JSONResponse.make(.ok, request: request) { json in
                json.beginObject()
                json.field("status", "ok")
                json.endObject()
            }
        }
        SessionRoutes(sessions: sessions, configuration: configuration).register(on: router)
        ItemRoutes(feed: feed, configuration: configuration).register(on: router)
        let serveFile: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            guard let response = try files.response(path: request.uri.path, request: request) else {
                throw APIError(.notFound, "not_found", "Nothing at \(request.uri.path).")
            }
            return response
        }
        router.get("/", use: serveFile)
        router.get("**", use: serveFile)
        router.head("/", use: serveFile)
        router.head("**", use: serveFile)

        let hotRoutes = HotRoutes(sessions: sessions, configuration: configuration, logger: logger)
        return Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [SessionConnectionHandler(routes: hotRoutes)])),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "refresh-server"),
            services: [SessionMaintenance(sessions: sessions, keepaliveInterval: configuration.keepaliveInterval)],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
            eventLoopGroupProvider: configuration.eventLoops.map { .shared(MultiThreadedEventLoopGroup(numberOfThreads: $0)) } ?? .singleton,
            logger: logger)
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
