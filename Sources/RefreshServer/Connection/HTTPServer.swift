import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// Listens, and gives every connection NIO's HTTP/1.1 request decoder and a ``ConnectionHandler``.
///
/// There is no task per connection: an idle connection or an open event stream costs its
/// channel and handlers only, and a task exists only while the router answers a request.
/// Graceful shutdown stops accepting, asks every connection to finish (streams end
/// cleanly, answers in progress complete) and returns once all are closed.
struct HTTPServer: Service {
    let host: String
    let port: Int
    let group: any EventLoopGroup
    let maxHeadBytes: Int
    let logger: Logger
    let makeHandler: @Sendable () -> ConnectionHandler
    let onServerRunning: @Sendable (Int) async -> Void

    func run() async throws {
        let quiescing = ServerQuiescingHelper(group: group)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(AcceptBackoff(logger: logger))
                    try pipeline.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // Two handlers: the decoder, and the handler that answers and writes bytes
                    // straight to the socket. The decoder refuses a head past the limit while
                    // it still arrives.
                    var limits = NIOHTTPDecoderLimitConfiguration()
                    limits.maxHeaderListSize = maxHeadBytes
                    limits.maxHeaderFieldSize = maxHeadBytes
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(
                        leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .drop, limitConfiguration: limits)))
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
