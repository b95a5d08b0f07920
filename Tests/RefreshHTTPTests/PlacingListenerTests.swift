#if os(Linux)
import Logging
import NIOCore
import NIOPosix
import Dispatch
import Synchronization
import Testing

@testable import RefreshHTTP

/// The server's own listener over real sockets: which loop each connection is served by, and
/// a stop that waits for open connections to finish.
@Suite struct PlacingListenerTests {
    /// Answers each connection with the index of its loop and keeps it open until asked to
    /// quiesce, then closes it.
    final class LoopReporter: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let loops: [any EventLoop]
        init(loops: [any EventLoop]) { self.loops = loops }

        func channelActive(context: ChannelHandlerContext) {
            let index = loops.firstIndex { $0 === context.eventLoop } ?? -1
            context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: "\(index)\n")), promise: nil)
            context.fireChannelActive()
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is ChannelShouldQuiesceEvent { context.close(promise: nil) }
        }
    }

    /// A server of `LoopReporter`s on two loops of its own; `makingEach` runs on a server
    /// loop as each connection's handler is made.
    struct RunningServer {
        let port: Int
        let serving: Task<Void, any Error>
        let group: MultiThreadedEventLoopGroup
        let stop: @Sendable () -> Void

        static func start(makingEach: @escaping @Sendable () -> Void = {}) async throws -> RunningServer {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
            let loops = Array(group.makeIterator())
            let port = AsyncStream<Int>.makeStream()
            let stop = AsyncStream<Void>.makeStream()
            let server = HTTPServer(
                host: "127.0.0.1", port: 0, group: group, maxHeadBytes: 8192, steerByClient: false, logger: Logger(label: "test"),
                makeHandler: {
                    makingEach()
                    return LoopReporter(loops: loops)
                }, onServerRunning: { port.continuation.yield($0) })
            let serving = Task { try await server.run(until: { for await _ in stop.stream {} }) }
            var ports = port.stream.makeAsyncIterator()
            let bound = try #require(await ports.next())
            return RunningServer(port: bound, serving: serving, group: group, stop: { stop.continuation.finish() })
        }

        /// Asks it to stop and waits until it has.
        func stopped() async throws {
            stop()
            let served = await serving.result
            try await group.shutdownGracefully()
            try served.get()
        }
    }

    /// Runs a server for `body`, then stops it.
    func withServer(_ body: @Sendable (_ port: Int) async throws -> Void) async throws {
        let server = try await RunningServer.start()
        do {
            try await body(server.port)
        } catch {
            try? await server.stopped()
            throw error
        }
        try await server.stopped()
    }

    /// Completes with the first line a connection reads.
    final class FirstLine: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let line: EventLoopPromise<String>
        var text = ""
        init(_ line: EventLoopPromise<String>) { self.line = line }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            text += String(buffer: unwrapInboundIn(data))
            if text.hasSuffix("\n") { line.succeed(text) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            line.fail(ChannelError.eof)
        }
    }

    /// Connects to the server from `source` and answers the index of the loop that serves the
    /// connection, leaving it open.
    func loop(_ port: Int, from source: String, group: any EventLoopGroup) async throws -> Int {
        let line = group.next().makePromise(of: String.self)
        _ = try await ClientBootstrap(group: group)
            .bind(to: try SocketAddress(ipAddress: source, port: 0))
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(FirstLine(line)) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return try #require(Int(try await line.futureResult.get().dropLast()))
    }

    @Test func aClientsConnectionsAreServedByOneLoopAndACrowdByAll() async throws {
        let clients = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        try await withServer { port in
            // NIO's own listener would deal these two to the two loops in turn.
            let stream = try await loop(port, from: "127.0.0.1", group: clients)
            let samples = try await loop(port, from: "127.0.0.1", group: clients)
            #expect(stream == samples)
            // Another client goes to the other, less busy loop.
            let other = try await loop(port, from: "127.0.0.2", group: clients)
            #expect(other != stream)
            // Forty connections from one address (a proxy, a NAT) are served by both loops.
            var crowd: [Int] = []
            for _ in 0..<40 { crowd.append(try await loop(port, from: "127.0.0.3", group: clients)) }
            let counts = (0..<2).map { loop in crowd.count { $0 == loop } }
            #expect(counts.min()! >= 40 / 2 - LoopPlacement.slack)
            // The server stops with all of them open: each is asked to quiesce and closes.
        }
        try await clients.shutdownGracefully()
    }

    /// A connection accepted just before the server stops, whose set-up is held up on its
    /// loop: the stop waits for it, asks it to quiesce too, and returns once it has closed.
    @Test func aStopWaitsForAConnectionStillBeingSetUp() async throws {
        let clients = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let holding = Flag(true)
        let server = try await RunningServer.start {
            if holding.value.exchange(false, ordering: .relaxed) {
                entered.signal()
                gate.wait()
            }
        }
        let client = try await ClientBootstrap(group: clients).connect(host: "127.0.0.1", port: server.port).get()
        // Its set-up is under way on a server loop, and held there.
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                entered.wait()
                continuation.resume()
            }
        }
        let stopped = Flag(false)
        let stopping = Task {
            try await server.stopped()
            stopped.value.store(true, ordering: .relaxed)
        }
        try await Task.sleep(for: .milliseconds(300))
        let early = stopped.value.load(ordering: .relaxed)
        #expect(!early, "the stop returned while a connection was still being set up")
        gate.signal()
        try await stopping.value
        let late = stopped.value.load(ordering: .relaxed)
        #expect(late)
        try await client.closeFuture.get()
        try await clients.shutdownGracefully()
    }
}

private final class Flag: Sendable {
    let value: Atomic<Bool>
    init(_ value: Bool) { self.value = Atomic(value) }
}
#endif
