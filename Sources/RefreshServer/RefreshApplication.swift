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
    ) async throws -> ServiceGroup {
        try configuration.validate()
        let verifier = try await configuration.tokenVerifier()
        let store: Store =
            if let postgres = feed as? PostgresFeed {
                shared(postgres, seed: nil, logger: logger)
            } else if let feed {
                Store(feed: feed, services: [])
            } else {
                try defaultStore(configuration, metrics: metrics, logger: logger)
            }
        let parts = ServerParts(feed: store.feed, configuration: configuration, verifier: verifier, metrics: metrics, logger: logger)
        // With PostgreSQL, other instances' commits reach the feeds with sessions here.
        let listener = (store.feed as? PostgresFeed).map { postgres in
            HeadListener(
                feed: postgres, news: parts.feeds, pollInterval: configuration.headPollInterval, logger: logger,
                onReconnect: { metrics.notificationReconnected() })
        }
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
        if let listener { notificationsUp = { listener.isListening } }
        let routes = parts.application(proxies: proxies, responder: parts.responder(files: files, notificationsUp: notificationsUp))
        let ownGroup = configuration.eventLoops.map { MultiThreadedEventLoopGroup(numberOfThreads: $0) }
        let group: any EventLoopGroup = ownGroup ?? MultiThreadedEventLoopGroup.singleton
        let server = HTTPService(
            server: HTTPServer(
                host: configuration.host, port: configuration.port, group: group, maxHeadBytes: configuration.maxHeadBytes,
                steerByClient: configuration.steerByClient, logger: logger, makeHandler: { ConnectionHandler(application: routes) },
                onServerRunning: onServerRunning))
        let maintenance = SessionMaintenance(
            sessions: parts.sessions, feeds: parts.feeds, keepaliveInterval: configuration.keepaliveInterval,
            catchUpInterval: listener == nil ? configuration.keepaliveInterval : nil, changeRetention: configuration.changeRetention)
        let groupCloser: [any Service] = ownGroup.map { [EventLoopGroupCloser(group: $0)] } ?? []
        return ServiceGroup(
            configuration: .init(services: groupCloser + store.services + (listener.map { [$0] } ?? []) + [maintenance, server], logger: logger))
    }

    /// The feed store and what must run beside it.
    struct Store {
        var feed: any FeedSource
        var services: [any Service]
    }

    /// A PostgreSQL store runs its connection pool beside the server (and the server its
    /// listener, which tells the feeds with sessions).
    static func shared(_ feed: PostgresFeed, seed: [FeedItem]?, logger: Logger) -> Store {
        Store(feed: feed, services: [PostgresFeed.Runner(feed: feed, seed: seed, logger: logger)])
    }

    static func defaultStore(_ configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) throws -> Store {
        do {
            return try openStore(configuration, metrics: metrics, logger: logger)
        } catch let error as DatabaseLocationError {
            throw ConfigurationError(error)
        }
    }

    private static func openStore(_ configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) throws -> Store {
        let upstreams = try configuration.upstreamURLs.mapValues { urls in
            try UpstreamSet(urls: urls, maxBytes: configuration.maxFeedBytes, timeout: configuration.feedTimeout, metrics: metrics)
        }
        let seed = configuration.demo ?? configuration.feeds.isEmpty
        if PostgresLocation.isPostgresURL(configuration.database) {
            let feed = try PostgresFeed(url: configuration.database, upstreams: upstreams, logger: logger)
            return shared(feed, seed: seed ? DemoItems.make() : nil, logger: logger)
        }
        let store = try SQLiteLocation.open(configuration.database, upstreams: upstreams)
        if seed, try store.isEmpty {
            try store.seed(DemoItems.make())
        }
        return Store(feed: store, services: [])
    }
}
