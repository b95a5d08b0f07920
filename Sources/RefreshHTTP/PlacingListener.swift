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
/// a connection is NIO's as any other, with the same decoder and handler. The thread wakes
/// once per accepted connection (NIO's acceptor, an event loop, takes up to four per
/// wake-up); a connection costs one hop to its loop either way. When `accept` fails for want
/// of descriptors or memory, the thread pauses ``AcceptBackoff/pause`` and tries again,
/// saying so once per episode, so the connections wait in the backlog and no core spins; an
/// error that says the socket cannot accept any more ends the server with it.
///
/// Stopping shuts the listening socket down (which ends the waiting `accept`), then asks
/// every connection to quiesce (streams end cleanly, answers in progress complete), those
/// still being set up included, and waits until all are closed, as NIO's
/// `ServerQuiescingHelper` does for its listener.
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

    /// Accepts until `stopping` returns, tells `onRunning` the port once it accepts, then
    /// quiesces every connection and returns once all are closed. Throws when accepting
    /// failed for good (the socket no longer listens), after the same quiescing.
    func serve(until stopping: @escaping @Sendable () async -> Void, onRunning: @Sendable (Int) async -> Void) async throws {
        thread.start()
        let failure: (any Error)?
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.thread.runIfActive { try self.acceptUntilStopped() } }
                await onRunning(port)
                group.addTask {
                    await stopping()
                    self.stopAccepting()
                }
                do {
                    while try await group.next() != nil {}
                } catch {
                    // Accepting failed for good: nothing waits for the shutdown any more.
                    group.cancelAll()
                    throw error
                }
            }
            failure = nil
        } catch {
            failure = error
        }
        try? await thread.shutdownGracefully()
        // Closed only once the thread is done with it, so that its number cannot meanwhile
        // be another socket's.
        close(socket)
        await connections.quiesce()
        if let failure { throw failure }
    }

    /// Ends the thread's `accept`, which then fails with `EINVAL`.
    private func stopAccepting() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        if shutdown(socket, CInt(SHUT_RDWR)) != 0 {
            logger.warning("the listening socket could not be shut down: \(IOError(errnoCode: errno, reason: "shutdown"))")
        }
    }

    /// Accepts until stopped; throws when the socket cannot accept any more.
    private func acceptUntilStopped() throws {
        var refused = 0
        while !stopping.load(ordering: .sequentiallyConsistent) {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            // NIO makes the socket non-blocking. Close-on-exec (which `accept4`, not in
            // Glibc's module, would set at once) matters only to a process that starts
            // others, and this one starts none.
            let accepted = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(socket, $0, &length) }
            }
            guard accepted >= 0 else {
                let code = errno
                if stopping.load(ordering: .sequentiallyConsistent) { return }
                let error = IOError(errnoCode: code, reason: "accept")
                switch code {
                case EINTR, EAGAIN, ECONNABORTED, EPROTO, EPERM, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP,
                    ENETUNREACH, ETIMEDOUT:
                    // That connection's trouble, not the listener's (accept(2) says to treat
                    // these as EAGAIN).
                    continue
                case _ where AcceptBackoff.isExhaustion(error):
                    if refused == 0 { logger.warning("\(AcceptBackoff.pausedMessage(error))") }
                    refused += 1
                    usleep(UInt32(AcceptBackoff.pause.nanoseconds / 1000))
                    continue
                default:
                    logger.critical("the listening socket cannot accept any more: \(error)")
                    throw error
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
        // ClientBootstrap sets TCP_NODELAY itself, as the other listeners set it on theirs.
        let bootstrap = ClientBootstrap(group: loops[loop])
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .channelInitializer(initialize)
        connections.settingUp(bootstrap.withConnectedSocket(socket)) { [self] result in
            switch result {
            case .success(let channel):
                channel.closeFuture.whenComplete { [self] _ in
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

/// The listener's connections, from the moment their socket is handed to NIO, to quiesce
/// them when it stops.
private final class OpenConnections: Sendable {
    private struct State {
        /// Sockets handed to NIO whose channel is not set up yet.
        var settingUp: [Int: EventLoopFuture<any Channel>] = [:]
        var nextSetUp = 0
        var channels: [ObjectIdentifier: any Channel] = [:]
        var quiescing = false
    }

    private let state = Mutex(State())

    /// Keeps `setUp` (a channel being made) until it is made, then its channel until it
    /// closes; `done` is told the outcome first.
    func settingUp(
        _ setUp: EventLoopFuture<any Channel>, then done: @escaping @Sendable (Result<any Channel, any Error>) -> Void
    ) {
        let id = state.withLock { state in
            defer { state.nextSetUp += 1 }
            state.settingUp[state.nextSetUp] = setUp
            return state.nextSetUp
        }
        setUp.whenComplete { [self] result in
            done(result)
            let late = state.withLock { state in
                state.settingUp[id] = nil
                if case .success(let channel) = result { state.channels[ObjectIdentifier(channel)] = channel }
                return state.quiescing
            }
            guard case .success(let channel) = result else { return }
            channel.closeFuture.whenComplete { [self] _ in
                state.withLock { _ = $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
            }
            // Made after quiescing began: it is asked at once, like the others.
            if late { channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
        }
    }

    /// Asks every connection to finish and waits until all are closed. Called once nothing
    /// is accepted any more: a connection still being made is waited for, then asked too.
    func quiesce() async {
        let (settingUp, channels) = state.withLock { state in
            state.quiescing = true
            return (Array(state.settingUp.values), Array(state.channels.values))
        }
        for channel in channels {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        for setUp in settingUp {
            _ = try? await setUp.get()
        }
        // Every channel, those made meanwhile included, until none is left not waited for.
        var waited = Set<ObjectIdentifier>()
        while let next = state.withLock({ $0.channels.first { !waited.contains($0.key) } }) {
            waited.insert(next.key)
            try? await next.value.closeFuture.get()
        }
    }
}
#endif
