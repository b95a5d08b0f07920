import Foundation
import Hummingbird
import Logging
import RefreshFeed
import RefreshHTTP

/// The server's parts over any store, wired in one place: the feeds with sessions (each with
/// its news and action runner), the session store over them, the router with every route's handler, and the
/// connection's application. The app, the tests and the fuzzer all build the server through
/// it, so a change to how one part is made is made here once.
struct ServerParts {
    /// The feed `main`, for `/readyz`.
    let feed: any FeedSource
    let feeds: FeedRegistry
    let sessions: SessionStore
    let insights: PullInsights
    let streams: StreamGate
    let access: AccessControl
    let configuration: ServerConfiguration
    let metrics: ServerMetrics
    let logger: Logger

    /// `feed`: a ``FeedStore`` serves every feed; another source is the feed `main` alone.
    /// `verifier`: the tokens' (``ServerConfiguration/tokenVerifier()``), `nil` without keys.
    init(
        feed: any FeedSource, configuration: ServerConfiguration, verifier: TokenVerifier? = nil, metrics: ServerMetrics = ServerMetrics(),
        logger: Logger = Logger(label: "refresh-server")
    ) {
        feeds = FeedRegistry(feed: feed, settings: configuration.sessionSettings, metrics: metrics)
        self.feed = feeds.main
        insights = PullInsights(patterns: configuration.insightsFeedPatterns)
        sessions = SessionStore(feeds: feeds, limits: configuration.sessionSettings, insights: insights)
        streams = StreamGate(maxStreams: configuration.maxStreams, maxPerClient: configuration.maxStreamsPerClient)
        access = AccessControl(configuration: configuration, verifier: verifier, refused: metrics.authRefused)
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
    }

    /// What answers the routed routes: every routed route of the table, and `files` behind
    /// every other path outside the API. `notificationsUp`: whether other instances' news
    /// arrives, for `/readyz` (`nil`: there are none).
    func responder(files: StaticFiles, notificationsUp: (@Sendable () -> Bool)? = nil) -> RoutedResponder {
        let handlers = RouteTable.Handlers(
            sessions: SessionRoutes(sessions: sessions, feeds: feeds, streams: streams, access: access, configuration: configuration),
            items: ItemRoutes(feeds: feeds, access: access, configuration: configuration),
            health: HealthRoutes(feed: feed, notificationsUp: notificationsUp, deadline: .seconds(2)),
            metrics: MetricsRoutes(metrics: metrics, sessions: sessions, streams: streams, feeds: feeds),
            insights: InsightsRoutes(
                insights: insights, access: access, instance: configuration.instanceName ?? ProcessInfo.processInfo.hostName))
        return RouteTable.responder(handlers: handlers) { request, _ in
            guard let response = try files.response(path: request.uri.path, request: request) else {
                throw APIError(.notFound, "Nothing at \(request.uri.path).")
            }
            return response
        }
    }

    /// The connection's application, with `respond` answering what is not hot.
    func application(proxies: TrustedProxies = TrustedProxies(), respond: @escaping HotRoutes.Router) -> HotRoutes {
        HotRoutes(
            sessions: sessions, streams: streams, access: access, proxies: proxies, configuration: configuration, logger: logger,
            metrics: metrics,
            router: respond)
    }

    /// The connection's application, with `responder` answering what is not hot.
    func application(proxies: TrustedProxies = TrustedProxies(), responder: RoutedResponder) -> HotRoutes {
        application(proxies: proxies) { request, source, match in
            try await responder.respond(to: request, context: ServerRequestContext(source: source), match: match)
        }
    }
}
