import NIOCore
import NIOPosix
import Synchronization

/// Counts, for many streams at once, when each sees its subscription go live and when each
/// sees the awaited token. Watching happens on the event loop as bytes arrive: no task per
/// stream, no hop, so thousands of streams cost the client little and stamp arrival times
/// exactly.
final class ArrivalBoard: Sendable {
    private struct State {
        var ready = 0
        var arrivals: [UInt64] = []
        var readyWaiter: (Int, CheckedContinuation<Void, Never>)?
        var arrivalWaiter: (Int, CheckedContinuation<Void, Never>)?
    }

    private let state = Mutex(State())

    func markReady() {
        state.withLock { state in
            state.ready += 1
            if let (target, waiter) = state.readyWaiter, state.ready >= target {
                state.readyWaiter = nil
                waiter.resume()
            }
        }
    }

    func markArrival(_ nanoseconds: UInt64) {
        state.withLock { state in
            state.arrivals.append(nanoseconds)
            if let (target, waiter) = state.arrivalWaiter, state.arrivals.count >= target {
                state.arrivalWaiter = nil
                waiter.resume()
            }
        }
    }

    func waitReady(_ count: Int) async {
        await withCheckedContinuation { continuation in
            state.withLock { state in
                if state.ready >= count { continuation.resume() } else { state.readyWaiter = (count, continuation) }
            }
        }
    }

    /// Waits for `count` arrivals in total, then hands them over and starts afresh.
    func takeArrivals(_ count: Int) async -> [UInt64] {
        await withCheckedContinuation { continuation in
            state.withLock { state in
                if state.arrivals.count >= count { continuation.resume() } else { state.arrivalWaiter = (count, continuation) }
            }
        }
        return state.withLock { state in
            defer { state.arrivals.removeAll(keepingCapacity: true) }
            return state.arrivals
        }
    }

    static func now() -> UInt64 { NIODeadline.now().uptimeNanoseconds }
}

/// Scans one stream's bytes for the "subscribed" token once, then for every arrival token.
final class StreamWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let readyToken: [UInt8]
    private let token: [UInt8]
    private let board: ArrivalBoard
    private var ready = false
    private var window: [UInt8] = []

    init(readyToken: [UInt8], token: [UInt8], board: ArrivalBoard) {
        self.readyToken = readyToken
        self.token = token
        self.board = board
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        window.append(contentsOf: buffer.readableBytesView)
        if !ready {
            guard let offset = window.withUnsafeBytes({ byteOffset(of: readyToken, in: $0) }) else {
                trim(readyToken.count)
                return
            }
            ready = true
            window.removeSubrange(..<(offset + readyToken.count))
            board.markReady()
        }
        var searchFrom = 0
        while let offset = window.withUnsafeBytes({ byteOffset(of: token, in: UnsafeRawBufferPointer(rebasing: $0[searchFrom...])) }) {
            board.markArrival(ArrivalBoard.now())
            searchFrom += offset + token.count
        }
        window.removeSubrange(..<searchFrom)
        trim(token.count)
    }

    /// Keeps only what could still be the start of a token split across reads.
    private func trim(_ length: Int) {
        if window.count > length { window.removeFirst(window.count - length + 1) }
    }

    static func open(host: String, port: Int, request: ByteBuffer, readyToken: [UInt8], token: [UInt8], board: ArrivalBoard) async throws -> Channel {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(StreamWatcher(readyToken: readyToken, token: token, board: board))
                }
            }
            .connect(host: host, port: port).get()
        try await channel.writeAndFlush(request)
        return channel
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// A `memchr` + `memcmp` search: the generic collection search is far too slow to scan
/// thousands of streams.
func byteOffset(of token: [UInt8], in bytes: UnsafeRawBufferPointer) -> Int? {
    guard let base = bytes.baseAddress, !token.isEmpty, bytes.count >= token.count else { return nil }
    return token.withUnsafeBytes { needle -> Int? in
        let first = Int32(token[0])
        var offset = 0
        let last = bytes.count - token.count
        while offset <= last {
            guard let hit = memchr(base + offset, first, last - offset + 1) else { return nil }
            let position = base.distance(to: UnsafeRawPointer(hit))
            if memcmp(base + position, needle.baseAddress!, token.count) == 0 { return position }
            offset = position + 1
        }
        return nil
    }
}
