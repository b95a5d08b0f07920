import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy in front of PostgreSQL that reads the frontend's messages and, for the
/// `COMMIT`s it is told to, drops the connection: before forwarding the `COMMIT` (so the
/// transaction rolls back), or right after (so it commits, and its answer is lost).
///
/// PostgresNIO sends every statement with the extended protocol: a Parse ('P') holding the
/// text `COMMIT;`, then Bind, Describe, Execute and Sync ('S'). "After" forwards up to and
/// including that Sync, half-closes the server's side (it reads the `COMMIT`, then the end of
/// its input) and closes the client's at once. A simple Query ('Q') `COMMIT` is cut after
/// itself.
///
/// It has other faults too (``Faults``): going silent (nothing passes either way and nothing
/// is closed, as on a network that stopped answering without a reset), refusing new
/// connections (as while PostgreSQL is down), and making the statements that contain a given
/// text fail on a connection that stays up.
final class CommitCuttingProxy: Sendable {
    enum Cut: Hashable, Sendable {
        case pass
        case beforeCommit
        case afterCommit
    }

    /// What to do with each `COMMIT`, in turn: the pattern repeats; an empty one passes all.
    final class Policy: Sendable {
        private struct State {
            var pattern: [Cut] = []
            var next = 0
            var counts: [Cut: Int] = [:]
        }

        private let state = Mutex(State())

        func set(_ pattern: [Cut]) {
            state.withLock { $0 = State(pattern: pattern) }
        }

        func nextCut() -> Cut {
            state.withLock { state in
                let cut = state.pattern.isEmpty ? .pass : state.pattern[state.next % state.pattern.count]
                state.next += 1
                state.counts[cut, default: 0] += 1
                return cut
            }
        }

        /// How many `COMMIT`s met each fate since the last ``set(_:)``.
        var counts: [Cut: Int] { state.withLock { $0.counts } }
    }

    let port: Int
    let policy: Policy
    let faults: Faults
    private let channel: any Channel

    final class Faults: Sendable {
        private struct State {
            var silent = false
            var refusing = false
            var failing: String?
        }

        private let state = Mutex(State())

        /// While set, every byte either way is dropped.
        var silent: Bool {
            get { state.withLock { $0.silent } }
            set { state.withLock { $0.silent = newValue } }
        }
        /// While set, a new connection is closed as soon as it is accepted.
        var refusing: Bool {
            get { state.withLock { $0.refusing } }
            set { state.withLock { $0.refusing = newValue } }
        }
        /// A statement whose text contains this is sent as one that fails (division by zero)
        /// with the same parameters, and answered with PostgreSQL's error.
        var failing: String? {
            get { state.withLock { $0.failing } }
            set { state.withLock { $0.failing = newValue } }
        }
    }

    private init(channel: any Channel, policy: Policy, faults: Faults) {
        self.channel = channel
        self.policy = policy
        self.faults = faults
        self.port = channel.localAddress?.port ?? 0
    }

    static func start(to host: String, port: Int) async throws -> CommitCuttingProxy {
        let target = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let policy = Policy()
        let faults = Faults()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FrontendHandler(target: target, policy: policy, faults: faults))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return CommitCuttingProxy(channel: channel, policy: policy, faults: faults)
    }

    func close() async {
        try? await channel.close()
    }
}

/// The client's side: parses what PostgresNIO sends and forwards it message by message.
private final class FrontendHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let target: SocketAddress
    private let policy: CommitCuttingProxy.Policy
    private let faults: CommitCuttingProxy.Faults
    private var peer: (any Channel)?
    private var pending = ByteBuffer()
    private var startedUp = false
    /// A `COMMIT` was forwarded that must be cut after its Sync.
    private var cutAtSync = false
    private var done = false

    init(target: SocketAddress, policy: CommitCuttingProxy.Policy, faults: CommitCuttingProxy.Faults) {
        self.target = target
        self.policy = policy
        self.faults = faults
    }

    func channelActive(context: ChannelHandlerContext) {
        guard !faults.refusing else {
            done = true
            context.close(promise: nil)
            return
        }
        let client = context.channel
        let faults = faults
        let connected = ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(BackendHandler(client: client, faults: faults))
                }
            }
            .connect(to: target)
        connected.assumeIsolated().whenComplete { result in
            switch result {
            case .success(let peer):
                self.peer = peer
                context.channel.setOption(.autoRead, value: true).whenComplete { _ in }
                context.read()
            case .failure:
                context.close(promise: nil)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done { peer?.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done, let peer, !faults.silent else { return }
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        while let (type, message) = nextMessage() {
            if cutAtSync {
                peer.write(message, promise: nil)
                if type == UInt8(ascii: "S") {
                    cutAfter(context: context, peer: peer)
                    return
                }
                continue
            }
            guard let type, Self.isCommit(type, message) else {
                peer.write(Self.failingIfAsked(type, message, faults.failing), promise: nil)
                continue
            }
            switch policy.nextCut() {
            case .pass:
                peer.write(message, promise: nil)
            case .beforeCommit:
                done = true
                peer.close(promise: nil)
                context.close(promise: nil)
                return
            case .afterCommit:
                peer.write(message, promise: nil)
                if type == UInt8(ascii: "Q") {
                    cutAfter(context: context, peer: peer)
                    return
                }
                cutAtSync = true
            }
        }
        pending.discardReadBytes()
        peer.flush()
    }

    /// The server gets everything sent so far and then the end of its input; the client
    /// hears nothing more.
    private func cutAfter(context: ChannelHandlerContext, peer: any Channel) {
        done = true
        peer.writeAndFlush(ByteBuffer()).whenComplete { _ in peer.close(mode: .output, promise: nil) }
        context.close(promise: nil)
    }

    /// The next whole message and its type (`nil` for the startup message, which has none).
    private func nextMessage() -> (UInt8?, ByteBuffer)? {
        let start = pending.readerIndex
        if !startedUp {
            guard let length = pending.getInteger(at: start, as: Int32.self), length >= 8, pending.readableBytes >= Int(length),
                let message = pending.readSlice(length: Int(length))
            else { return nil }
            // An SSLRequest (80877103) comes before the real startup message.
            startedUp = message.getInteger(at: message.readerIndex + 4, as: Int32.self) != 80_877_103
            return (nil, message)
        }
        guard let type = pending.getInteger(at: start, as: UInt8.self), let length = pending.getInteger(at: start + 1, as: Int32.self),
            length >= 4, pending.readableBytes >= 1 + Int(length), let message = pending.readSlice(length: 1 + Int(length))
        else { return nil }
        return (type, message)
    }

    /// A Parse ('P') of a statement containing `fragment` becomes one of the same name and
    /// parameters that fails when executed; any other message is left as it is.
    private static func failingIfAsked(_ type: UInt8?, _ message: ByteBuffer, _ fragment: String?) -> ByteBuffer {
        guard let fragment, type == UInt8(ascii: "P") else { return message }
        var body = message
        body.moveReaderIndex(forwardBy: 5)
        guard let name = body.readNullTerminatedString(), let query = body.readNullTerminatedString(), query.contains(fragment) else {
            return message
        }
        // Parameters must still be used for their declared types to stand: `$n IS NULL` uses each.
        let count = body.getInteger(at: body.readerIndex, as: Int16.self) ?? 0
        let uses = (0..<Int(count)).map { " AND $\($0 + 1) IS NULL" }.joined()
        var rewritten = ByteBuffer()
        rewritten.writeInteger(UInt8(ascii: "P"))
        let lengthAt = rewritten.writerIndex
        rewritten.writeInteger(Int32(0))
        rewritten.writeNullTerminatedString(name)
        rewritten.writeNullTerminatedString("SELECT 1 / 0 WHERE true" + uses)
        rewritten.writeImmutableBuffer(body)
        rewritten.setInteger(Int32(rewritten.writerIndex - lengthAt), at: lengthAt)
        return rewritten
    }

    private static func isCommit(_ type: UInt8, _ message: ByteBuffer) -> Bool {
        var body = message
        body.moveReaderIndex(forwardBy: 5)
        let query: String?
        switch type {
        case UInt8(ascii: "P"):
            _ = body.readNullTerminatedString()
            query = body.readNullTerminatedString()
        case UInt8(ascii: "Q"):
            query = body.readNullTerminatedString()
        default:
            return false
        }
        return query?.trimmingPrefix(while: \.isWhitespace).uppercased().hasPrefix("COMMIT") == true
    }
}

/// The server's side: what PostgreSQL answers goes back to the client while it is there.
private final class BackendHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let client: any Channel
    private let faults: CommitCuttingProxy.Faults

    init(client: any Channel, faults: CommitCuttingProxy.Faults) {
        self.client = client
        self.faults = faults
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !faults.silent else { return }
        client.write(unwrapInboundIn(data), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        client.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
