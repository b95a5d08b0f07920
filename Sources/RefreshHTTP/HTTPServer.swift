import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Listens, and gives every connection the reader of plain requests (``PlainRequestReader``,
/// which brings in NIO's HTTP/1.1 request decoder for any other) and the handler
/// `makeHandler` makes (the application's connection handler).
///
/// There is no task per connection: an idle connection or an open event stream costs its
/// channel and handlers only, and a task exists only while the router answers a request.
/// Graceful shutdown stops accepting, asks every connection to finish (streams end
/// cleanly, answers in progress complete) and returns once all are closed.
///
/// **A client's connections share an event loop.** A page posts its samples on one
/// connection and reads its stream on another; on two threads, every sample wakes the other
/// thread (an `eventfd` write and a context switch, about a third of what a sample costs).
/// NIO gives a new connection the next loop in turn, so with several loops (on Linux) the
/// server accepts itself (``PlacingListener``) and places each connection by its client
/// (``LoopPlacement``): with the client's newest connection, up to a page's worth and while
/// that loop is not more than a few connections busier than the least busy one, so clients
/// that share an address (a carrier's NAT, an office, a proxy in front) still spread over
/// every loop.
///
/// `--steer-by-client` has the kernel do it instead, strictly: the server listens once per
/// loop on the same port (`SO_REUSEPORT`) and the kernel chooses the listener by the client's
/// address (``ClientSteering``), so clients that share an address share one loop whatever
/// the load.
package struct HTTPServer: Sendable {
    package let host: String
    package let port: Int
    package let group: any EventLoopGroup
    package let maxHeadBytes: Int
    /// Have the kernel keep each client's connections on one event loop, strictly (see above).
    package let steerByClient: Bool
    package let logger: Logger
    package let makeHandler: @Sendable () -> any ChannelHandler
    package let onServerRunning: @Sendable (Int) async -> Void

    package init(
        host: String, port: Int, group: any EventLoopGroup, maxHeadBytes: Int, steerByClient: Bool, logger: Logger,
        makeHandler: @escaping @Sendable () -> any ChannelHandler, onServerRunning: @escaping @Sendable (Int) async -> Void
    ) {
        self.host = host
        self.port = port
        self.group = group
        self.maxHeadBytes = maxHeadBytes
        self.steerByClient = steerByClient
        self.logger = logger
        self.makeHandler = makeHandler
        self.onServerRunning = onServerRunning
    }

    /// Serves until `stopping` returns (a graceful shutdown asked for, or the task cancelled),
    /// then stops accepting and waits for every connection to finish.
    package func run(until stopping: @escaping @Sendable () async -> Void) async throws {
        let loops = Array(group.makeIterator())
        #if os(Linux)
        if !steerByClient, loops.count > 1 {
            let listener = try PlacingListener(
                host: host, port: port, loops: loops, logger: logger,
                initialize: { [maxHeadBytes, makeHandler] channel in
                    channel.eventLoop.makeCompletedFuture { try Self.addHandlers(to: channel, maxHeadBytes: maxHeadBytes, makeHandler) }
                })
            try await listener.serve(until: stopping, onRunning: onServerRunning)
            return
        }
        #endif
        let listeners: [(channel: any Channel, quiescing: ServerQuiescingHelper)]
        if steerByClient, loops.count > 1 {
            listeners = try await listenPerLoop(loops)
        } else {
            listeners = [try await listen(on: group, port: port, reusePort: false)]
        }
        await onServerRunning(listeners[0].channel.localAddress?.port ?? port)
        await stopping()
        // Every listener stops accepting and quiesces its connections at once; then all are awaited.
        let closed = listeners.map { listener in
            let promise = listener.channel.eventLoop.makePromise(of: Void.self)
            listener.quiescing.initiateShutdown(promise: promise)
            return promise.futureResult
        }
        for future in closed { try? await future.get() }
    }

    /// One listener per loop on one port, the kernel steering by the client's address.
    private func listenPerLoop(_ loops: [any EventLoop]) async throws -> [(channel: any Channel, quiescing: ServerQuiescingHelper)] {
        if port != 0 {
            // SO_REUSEPORT would let a second server on this port join the first one's group
            // silently; a plain bind first fails as it should when the port is taken.
            // SO_REUSEADDR as the listeners have it, so that a restart is not refused while an
            // earlier server's closed connections wait out TIME-WAIT on the port.
            try await ServerBootstrap(group: loops[0])
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port).get().close()
        }
        var listeners = [try await listen(on: loops[0], port: port, reusePort: true)]
        let boundPort = listeners[0].channel.localAddress?.port ?? port
        for loop in loops.dropFirst() {
            listeners.append(try await listen(on: loop, port: boundPort, reusePort: true))
        }
        do {
            try await ClientSteering.attach(to: listeners[0].channel, listeners: listeners.count)
        } catch {
            // The listeners still share the connections, spread by the kernel's hash.
            logger.notice("connections are spread over the event loops without regard to the client: \(error)")
        }
        return listeners
    }

    private func listen(
        on group: any EventLoopGroup, port: Int, reusePort: Bool
    ) async throws -> (channel: any Channel, quiescing: ServerQuiescingHelper) {
        let quiescing = ServerQuiescingHelper(group: group)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.socketOption(.init(rawValue: SO_REUSEPORT)), value: reusePort ? 1 : 0)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(AcceptBackoff(logger: logger))
                    try pipeline.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { [maxHeadBytes, makeHandler] channel in
                channel.eventLoop.makeCompletedFuture { try Self.addHandlers(to: channel, maxHeadBytes: maxHeadBytes, makeHandler) }
            }
            .bind(host: host, port: port)
            .get()
        return (channel, quiescing)
    }
}

extension HTTPServer {
    /// A connection's handlers: the ``PlainRequestReader``, which adds NIO's decoder behind
    /// itself when it meets a request that is not plain, and the ``ConnectionHandler``; any
    /// other handler gets the decoder in front of it from the start.
    private static func addHandlers(
        to channel: any Channel, maxHeadBytes: Int, _ makeHandler: @Sendable () -> any ChannelHandler
    ) throws {
        try addHandlers(makeHandler(), maxHeadBytes: maxHeadBytes, to: channel.pipeline.syncOperations)
    }

    /// Adds what reads requests, and `handler`, at the end of `pipeline` (the tests' and the
    /// fuzzer's pipelines have handlers of their own in front).
    package static func addHandlers(
        _ handler: any ChannelHandler, maxHeadBytes: Int, to pipeline: ChannelPipeline.SynchronousOperations
    ) throws {
        if let handler = handler as? ConnectionHandler {
            try pipeline.addHandler(PlainRequestReader(maxHeadBytes: maxHeadBytes, feeding: handler))
        } else {
            try pipeline.addHandler(makeDecoder(maxHeadBytes: maxHeadBytes))
        }
        try pipeline.addHandler(handler)
    }

    /// NIO's request decoder, as a connection gets it. `forwardBytes`: when it is replaced,
    /// the bytes it held after a request that stopped it go to its successor.
    package static func makeDecoder(maxHeadBytes: Int) -> ByteToMessageHandler<HTTPRequestDecoder> {
        // The decoder refuses a head past the limit while it still arrives.
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = maxHeadBytes
        limits.maxHeaderFieldSize = maxHeadBytes
        return ByteToMessageHandler(
            HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, informationalResponseStrategy: .drop, limitConfiguration: limits))
    }
}
