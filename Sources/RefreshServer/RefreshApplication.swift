import Hummingbird
import Logging
import NIOCore

/// Builds the whole server from its configuration: routes, middleware, background upkeep.
/// Embed it in another app, or run it with `refresh-server`.
public enum RefreshApplication {
    /// - Parameters:
    ///   - feed: where items come from; an in-memory feed (with demo items if configured) by default.
    ///   - onServerRunning: called with the bound port once listening (useful with port 0).
    public static func build(
        configuration: ServerConfiguration,
        feed: (any FeedSource)? = nil,
        logger: Logger = Logger(label: "refresh-server"),
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        let feed = feed ?? MemoryFeed(items: configuration.demo ? DemoItems.make() : [])
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

        return Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "refresh-server"),
            services: [SessionMaintenance(sessions: sessions, keepaliveInterval: configuration.keepaliveInterval)],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
            logger: logger)
    }
}
