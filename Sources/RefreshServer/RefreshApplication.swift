import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import RefreshFeed
import RefreshHTTP
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
    ///     A ``PostgresFeed`` given here runs its connection pool and its listener with the
    ///     server (do not `run()` it yourself).
    ///   - metrics: where the server counts, served at `GET /metrics`; each server its own.
    ///   - onServerRunning: called with the bound port once listening (useful with port 0).
    public static func build(
        configuration: ServerConfiguration,
        feed: (any FeedSource)? = nil,
        metrics: ServerMetrics = ServerMetrics(),
        logger: Logger = Logger(label: "refresh-server"),
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> ServiceGroup {
        try configuration.validate()
        let news = NewsHub(metrics: metrics)
        let store: Store =
            if let postgres = feed as? PostgresFeed {
                shared(postgres, seed: nil, configuration, news: news, logger: logger)
            } else if let feed {
                Store(feed: feed, services: [], listener: nil)
            } else {
                try defaultStore(configuration, news: news, logger: logger)
            }
        let parts = ServerParts(
            feed: MeteredFeed(store.feed, metrics: metrics), configuration: configuration, news: news, metrics: metrics, logger: logger)
        let proxies = try configuration.validatedTrustedProxies()
        if !FileManager.default.fileExists(atPath: configuration.publicDirectory) {
            // Only the default can be missing here (`validate` refuses any other): a server of
            // the API alone works, but a page asked for is 404, so say why once.
            logger.warning(
                "no folder \(configuration.publicDirectory) here: the page and every static file answer 404; name the page's folder with --public (PTR_PUBLIC)"
            )
        }
        let files = try StaticFiles(directory: configuration.publicDirectory)
        var notificationsUp: (@Sendable () -> Bool)?
        if let listener = store.listener { notificationsUp = { listener.isListening } }
        let routes = parts.application(proxies: proxies, router: parts.router(files: files, notificationsUp: notificationsUp))
        let ownGroup = configuration.eventLoops.map { MultiThreadedEventLoopGroup(numberOfThreads: $0) }
        let group: any EventLoopGroup = ownGroup ?? MultiThreadedEventLoopGroup.singleton
        let server = HTTPService(
            server: HTTPServer(
                host: configuration.host, port: configuration.port, group: group, maxHeadBytes: configuration.maxHeadBytes,
                steerByClient: configuration.steerByClient, logger: logger, makeHandler: { ConnectionHandler(application: routes) },
                onServerRunning: onServerRunning))
        let maintenance = SessionMaintenance(
            sessions: parts.sessions, news: news, feed: parts.feed, keepaliveInterval: configuration.keepaliveInterval)
        let groupCloser: [any Service] = ownGroup.map { [EventLoopGroupCloser(group: $0)] } ?? []
        return ServiceGroup(configuration: .init(services: groupCloser + store.services + [maintenance, server], logger: logger))
    }

    /// The feed and what must run beside it.
    struct Store {
        var feed: any FeedSource
        var services: [any Service]
        /// With PostgreSQL: the connection that brings other instances' news.
        var listener: HeadListener?
    }

    /// A PostgreSQL feed runs its connection pool and its listener beside the server.
    static func shared(_ feed: PostgresFeed, seed: [FeedItem]?, _ configuration: ServerConfiguration, news: NewsHub, logger: Logger) -> Store {
        let listener = HeadListener(
            feed: feed, news: news, pollInterval: configuration.headPollInterval, logger: logger,
            onReconnect: { [metrics = news.metrics] in metrics.notificationReconnected() })
        return Store(feed: feed, services: [PostgresFeed.Runner(feed: feed, seed: seed, logger: logger), listener], listener: listener)
    }

    static func defaultStore(_ configuration: ServerConfiguration, news: NewsHub, logger: Logger) throws -> Store {
        do {
            return try openStore(configuration, news: news, logger: logger)
        } catch let error as DatabaseLocationError {
            throw ConfigurationError(error)
        }
    }

    private static func openStore(_ configuration: ServerConfiguration, news: NewsHub, logger: Logger) throws -> Store {
        let upstreams =
            try configuration.feeds.isEmpty
            ? nil
            : UpstreamSet(urls: configuration.feeds, maxBytes: configuration.maxFeedBytes, timeout: configuration.feedTimeout, metrics: news.metrics)
        let seed = configuration.demo ?? configuration.feeds.isEmpty
        if PostgresLocation.isPostgresURL(configuration.database) {
            let feed = try PostgresFeed(url: configuration.database, upstreams: upstreams, logger: logger)
            return shared(feed, seed: seed ? DemoItems.make() : nil, configuration, news: news, logger: logger)
        }
        let store = try SQLiteLocation.open(configuration.database, upstreams: upstreams)
        if seed, try store.isEmpty {
            try store.seed(DemoItems.make())
        }
        return Store(feed: store, services: [], listener: nil)
    }
}
