import RefreshHTTP
import ServiceLifecycle

/// The listener as one of the server's services: it serves until SIGTERM (or the group
/// around it) asks for a graceful shutdown, or its task is cancelled.
struct HTTPService: Service {
    let server: HTTPServer

    func run() async throws {
        try await server.run { try? await gracefulShutdown() }
    }
}
