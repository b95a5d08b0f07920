#if os(Linux)
import Glibc
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// Listens and accepts itself, so that it can choose each connection's event loop by its
/// client (``LoopPlacement``): NIO's own listener gives a new connection the next loop in
/// turn, and asks its loop group for that loop before anyone can see the client's address.
///
/// One thread of its own waits in `accept`, reads the peer's address, asks the placement
/// for a loop and hands the socket to NIO on that loop (`withConnectedSocket`); from there
/// a connection is NIO's as any other, with the same decoder and handler. The thread costs a
/// wake-up per accepted connection, as the acceptor loop did. When `accept` fails for want of
/// descriptors or memory, the thread pauses ``AcceptBackoff/pause`` and tries again, saying
/// so once per episode, so the connections wait in the backlog and no core spins.
///
/// Stopping shuts the listening socket down (which ends the waiting `accept`), then asks
/// every open connection to quiesce (streams end cleanly, answers in progress complete) and
/// waits until all are closed, as NIO's `ServerQuiescingHelper` does for its listener.
final class PlacingListener: Sendable {
    private let socket: CInt
    /// The port the socket is bound to (the one the kernel chose, for port 0).
    let port: Int
    private let loops: [any EventLoop]
    private let initialize: @Sendable (any Channel) -> EventLoopFuture<Void>
    private let placement: Mutex<LoopPlacement>
    private let connections = OpenConnections()
    private let stopping = Atomic<Bool>(false)
    private let thread = NIOThreadPool(numberOfThreads: 1)
    private let logger: Logger

    /// Binds and listens on `host`:`port`; connections go to `loops`, set up by `initialize`.
    init(
        host: String, port: Int, loops: [any EventLoop], logger: Logger,
        initialize: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) throws {
        let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let family: CInt
        switch address {
        case .v4: family = AF_INET
        case .v6: family = AF_INET6
        case .unixDomainSocket: throw IOError(errnoCode: EAFNOSUPPORT, reason: "listening on a Unix socket")
        }
        let socket = Glibc.socket(family, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        do {
            var on: CInt = 1
            guard setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<CInt>.size)) == 0 else {
                throw IOError(errnoCode: errno, reason: "setsockopt(SO_REUSEADDR)")
            }
            let bound: CInt
            switch address {
            case .v4(let v4):
                var raw = v4.address
                bound = withUnsafePointer(to: &raw) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            case .v6(let v6):
                var raw = v6.address
                bound = withUnsafePointer(to: &raw) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
                }
            case .unixDomainSocket:
                preconditionFailure("refused above")
            }
            guard bound == 0 else { throw IOError(errnoCode: errno, reason: "bind(\(host):\(port))") }
            guard listen(socket, 1024) == 0 else { throw IOError(errnoCode: errno, reason: "listen") }
            self.port = try Self.boundPort(socket)
        } catch {
            close(socket)
            throw error
        }
        self.socket = socket
        self.logger = logger
        placement = Mutex(LoopPlacement(loops: loops.count))
        self.loops = loops
        self.initialize = initialize
    }

    /// Accepts until ``stop()``.
    func run() async throws {
        thread.start()
        try await thread.runIfActive { self.acceptUntilStopped() }
    }

    /// Stops accepting, quiesces every connection and returns once all are closed.
    func stop(accepting: Task<Void, any Error>) async {
        stopping.store(true, ordering: .sequentiallyConsistent)
        // Ends the thread's accept (EINVAL); the descriptor is closed once the thread is done
        // with it, so that its number cannot meanwhile be another socket's.
        shutdown(socket, CInt(SHUT_RDWR))
        _ = try? await accepting.value
        try? await thread.shutdownGracefully()
        close(socket)
        await connections.quiesce()
    }

    private func acceptUntilStopped() {
        var refused = 0
        while !stopping.load(ordering: .sequentiallyConsistent) {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            // NIO makes the socket non-blocking; no process is ever started, so close-on-exec
            // is not needed.
            let accepted = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(socket, $0, &length) }
            }
            guard accepted >= 0 else {
                let code = errno
                if stopping.load(ordering: .sequentiallyConsistent) { return }
                switch code {
                case EINTR, ECONNABORTED, EAGAIN, EPROTO:
                    continue
                default:
                    let error = IOError(errnoCode: code, reason: "accept")
                    if AcceptBackoff.isExhaustion(error) {
                        if refused == 0 { logger.warning("\(AcceptBackoff.pausedMessage(error))") }
                        refused += 1
                    } else {
                        logger.error("accepting failed; trying again in \(AcceptBackoff.pause.nanoseconds / 1_000_000) ms: \(error)")
                    }
                    usleep(UInt32(AcceptBackoff.pause.nanoseconds / 1000))
                    continue
                }
            }
            if refused > 0 {
                logger.notice("\(AcceptBackoff.resumedMessage(refused))")
                refused = 0
            }
            let client = LoopPlacement.Client(address: Self.addressBytes(storage))
            let loop = placement.withLock { $0.connectionOpened(from: client) }
            hand(accepted, to: loop, client: client)
        }
    }

    /// Makes `socket` a channel on loop `loop`; its closing frees its place.
    private func hand(_ socket: CInt, to loop: Int, client: LoopPlacement.Client) {
        let bootstrap = ClientBootstrap(group: loops[loop])
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .channelInitializer(initialize)
        bootstrap.withConnectedSocket(socket).whenComplete { [self] result in
            switch result {
            case .success(let channel):
                connections.add(channel)
                channel.closeFuture.whenComplete { [self] _ in
                    connections.remove(channel)
                    placement.withLock { $0.connectionClosed(from: client, on: loop) }
                }
            case .failure(let error):
                // A channel that was made closed its socket. One that could not be made at all
                // (NIO refusing a fresh descriptor it cannot make non-blocking) would leave it
                // open, but which of the two happened is not told, and closing a descriptor
                // twice could close another connection's: it is left.
                placement.withLock { $0.connectionClosed(from: client, on: loop) }
                logger.debug("an accepted connection could not be set up: \(error)")
            }
        }
    }

    private static func boundPort(_ socket: CInt) throws -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { throw IOError(errnoCode: errno, reason: "getsockname") }
        return withUnsafePointer(to: &storage) { pointer in
            switch CInt(pointer.pointee.ss_family) {
            case AF_INET:
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            default:
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        }
    }

    private static func addressBytes(_ storage: sockaddr_storage) -> LoopPlacement.Client.SocketAddressBytes {
        var storage = storage
        return withUnsafePointer(to: &storage) { pointer in
            switch CInt(pointer.pointee.ss_family) {
            case AF_INET:
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var address = $0.pointee.sin_addr
                    return .v4(withUnsafeBytes(of: &address) { Array($0) })
                }
            case AF_INET6:
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    var address = $0.pointee.sin6_addr
                    return .v6(withUnsafeBytes(of: &address) { Array($0) })
                }
            default:
                .other
            }
        }
    }
}

/// The listener's open connections, to quiesce them when it stops.
private final class OpenConnections: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var quiescing = false
    }

    private let state = Mutex(State())

    func add(_ channel: any Channel) {
        let late = state.withLock { state in
            state.channels[ObjectIdentifier(channel)] = channel
            return state.quiescing
        }
        // Set up after quiescing began: it is asked at once, like the others.
        if late { channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
    }

    func remove(_ channel: any Channel) {
        state.withLock { _ = $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Asks every connection to finish and waits until all are closed.
    func quiesce() async {
        let channels = state.withLock { state in
            state.quiescing = true
            return Array(state.channels.values)
        }
        for channel in channels {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        // Then every channel, those set up meanwhile included (their accept came before the
        // listener stopped), until none is left that was not waited for.
        var waited = Set<ObjectIdentifier>()
        while let next = state.withLock({ $0.channels.first { !waited.contains($0.key) } }) {
            waited.insert(next.key)
            try? await next.value.closeFuture.get()
        }
    }
}
#endif
