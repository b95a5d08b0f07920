import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOHTTPTypesHTTP1
import NIOPosix
import ServiceLifecycle

/// Listens, and gives every connection NIO's HTTP/1.1 codec and a ``SessionConnectionHandler``.
///
/// There is no task per connection: an idle connection or an open event stream costs its
/// channel and handlers only, and a task exists only while the router answers a request.
/// Graceful shutdown stops accepting, asks every connection to finish (streams end
/// cleanly, answers in progress complete) and returns once all are closed.
struct HTTPServer: Service {
    let host: String
    let port: Int
    let group: any EventLoopGroup
    let makeHandler: @Sendable () -> SessionConnectionHandler
    let onServerRunning: @Sendable (Int) async -> Void

    func run() async throws {
        let quiescing = ServerQuiescingHelper(group: group)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    // Responses are checked as HTTPTypes values already; requests are answered one at
                    // a time by the handler, so NIO's pipelining helper would only add a hop.
                    try pipeline.configureHTTPServerPipeline(
                        withPipeliningAssistance: false, withErrorHandling: true, withOutboundHeaderValidation: false)
                    try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                    try pipeline.addHandler(makeHandler())
                }
            }
            .bind(host: host, port: port)
            .get()
        await onServerRunning(channel.localAddress?.port ?? port)
        // Until SIGTERM (or the group around us) asks to stop, or the task is cancelled.
        try? await gracefulShutdown()
        let closed = group.next().makePromise(of: Void.self)
        quiescing.initiateShutdown(promise: closed)
        try? await closed.futureResult.get()
    }
}
