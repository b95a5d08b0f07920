import NIOPosix
import ServiceLifecycle

/// Shuts down the event loops the server made for itself (`--event-loops`) once the server
/// has stopped, so that an app that runs and stops it leaves no threads behind. It does
/// nothing until asked to stop; placed first among the group's services, it is asked last,
/// after the listener has closed every connection on those loops.
struct EventLoopGroupCloser: Service {
    let group: MultiThreadedEventLoopGroup

    func run() async throws {
        try? await gracefulShutdown()
        try await group.shutdownGracefully()
    }
}
