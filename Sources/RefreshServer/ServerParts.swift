import Hummingbird
import Logging
import RefreshFeed
import RefreshHTTP

/// The server's parts over any feed, wired in one place: the action runner and the session
/// store over the feed and the news hub, the router with every route's handler, and the
/// connection's application. The app, the tests and the fuzzer all build the server through
/// it, so a change to how one part is made is made here once.
struct ServerParts {
    let feed: any FeedSource
    let news: NewsHub
    let sessions: SessionStore
    let streams: StreamGate
    let configuration: ServerConfiguration
    let metrics: ServerMetrics
    let logger: Logger

    /// `news`: a hub made before the parts, when something else (a PostgreSQL listener)
    /// reports to it too; otherwise one of their own.
    init(
        feed: any FeedSource, configuration: ServerConfiguration, news: NewsHub? = nil, metrics: ServerMetrics = ServerMetrics(),
        logger: Logger = Logger(label: "refresh-server")
    ) {
        let news = news ?? NewsHub(metrics: metrics)
        self.feed = feed
        self.news = news
        sessions = SessionStore(runner: ActionRunner(feed: feed, news: news, configuration: configuration), limits: configuration)
        streams = StreamGate(maxStreams: configuration.maxStreams, maxPerClient: configuration.maxStreamsPerClient)
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
    }

    /// The router: every routed route of the table, and `files` behind every other path
    /// outside the API. `notificationsUp`: whether other instances' news arrives, for
    /// `/readyz` (`nil`: there are none).
    func router(files: StaticFiles, notificationsUp: (@Sendable () -> Bool)? = nil) -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        let handlers = RouteTable.Handlers(
            sessions: SessionRoutes(sessions: sessions, feed: feed, streams: streams, configuration: configuration),
            items: ItemRoutes(feed: feed, news: news, configuration: configuration),
            health: HealthRoutes(feed: feed, notificationsUp: notificationsUp, deadline: .seconds(2)),
            metrics: MetricsRoutes(metrics: metrics, sessions: sessions, streams: streams))
        RouteTable.register(on: router, handlers: handlers) { request, _ in
            guard let response = try files.response(path: request.uri.path, request: request) else {
                throw APIError(.notFound, "not_found", "Nothing at \(request.uri.path).")
            }
            return response
        }
        return router
    }

    /// The connection's application, with `respond` answering what is not hot.
    func application(proxies: TrustedProxies = TrustedProxies(), respond: @escaping HotRoutes.Router) -> HotRoutes {
        HotRoutes(
            sessions: sessions, streams: streams, proxies: proxies, configuration: configuration, logger: logger, metrics: metrics,
            router: respond)
    }

    /// The connection's application, with `router` answering what is not hot.
    func application(proxies: TrustedProxies = TrustedProxies(), router: Router<ServerRequestContext>) -> HotRoutes {
        let responder = router.buildResponder()
        return application(proxies: proxies) { request, source in
            try await responder.respond(to: request, context: ServerRequestContext(source: source))
        }
    }
}
