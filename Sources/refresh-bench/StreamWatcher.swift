import NIOCore
import NIOPosix
import Synchronization

/// Counts, for many streams at once, when each passes the stages of its setup (its
/// subscription going live, then whatever else a mode waits for) and when each sees the
/// awaited token. Watching happens on the event loop as bytes arrive: no task per stream,
/// no hop, so thousands of streams cost the client little and stamp arrival times exactly.
final class ArrivalBoard: Sendable {
    private struct Waiter {
        let id: UInt64
        /// The stage waited for; unused by the arrival waiter.
        let stage: Int
        let target: Int
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        /// Streams that have passed each stage of their setup.
        var ready: [Int] = []
        var arrivals: [UInt64] = []
        var readyWaiter: Waiter?
        var arrivalWaiter: Waiter?
        var nextWaiter: UInt64 = 0

        func readyCount(_ stage: Int) -> Int { stage < ready.count ? ready[stage] : 0 }
    }

    private let state = Mutex(State())

    func markReady(stage: Int = 0) {
        state.withLock { state in
            while state.ready.count <= stage { state.ready.append(0) }
            state.ready[stage] += 1
            if let waiter = state.readyWaiter, waiter.stage == stage, state.ready[stage] >= waiter.target {
                state.readyWaiter = nil
                waiter.continuation.resume(returning: true)
            }
        }
    }

    func markArrival(_ nanoseconds: UInt64) {
        state.withLock { state in
            state.arrivals.append(nanoseconds)
            if let waiter = state.arrivalWaiter, state.arrivals.count >= waiter.target {
                state.arrivalWaiter = nil
                waiter.continuation.resume(returning: true)
            }
        }
    }

    /// Streams that have passed `stage` so far.
    func readyCount(stage: Int = 0) -> Int { state.withLock { $0.readyCount(stage) } }

    /// Waits until `count` streams have passed `stage`; false if `timeout` ran out first.
    @discardableResult
    func waitReady(_ count: Int, stage: Int = 0, timeout: Duration? = nil) async -> Bool {
        await wait(timeout: timeout, slot: \.readyWaiter) { state, id, continuation in
            if state.readyCount(stage) >= count { return true }
            state.readyWaiter = Waiter(id: id, stage: stage, target: count, continuation: continuation)
            return false
        }
    }

    /// Waits for `count` arrivals in total, then hands them over and starts afresh. When
    /// `timeout` runs out first, hands over the fewer that came.
    func takeArrivals(_ count: Int, timeout: Duration? = nil) async -> [UInt64] {
        _ = await wait(timeout: timeout, slot: \.arrivalWaiter) { state, id, continuation in
            if state.arrivals.count >= count { return true }
            state.arrivalWaiter = Waiter(id: id, stage: 0, target: count, continuation: continuation)
            return false
        }
        return state.withLock { state in
            defer { state.arrivals.removeAll(keepingCapacity: true) }
            return state.arrivals
        }
    }

    /// Parks the caller in `slot` unless `park` finds the wait already over; a timer takes
    /// it out again, answering false, if it is still there when `timeout` runs out.
    private func wait(
        timeout: Duration?, slot: WritableKeyPath<State, Waiter?> & Sendable,
        _ park: (inout State, UInt64, CheckedContinuation<Bool, Never>) -> Bool
    ) async -> Bool {
        var timer: Task<Void, Never>?
        defer { timer?.cancel() }
        return await withCheckedContinuation { continuation in
            let parked = state.withLock { state -> UInt64? in
                state.nextWaiter += 1
                let id = state.nextWaiter
                return park(&state, id, continuation) ? nil : id
            }
            guard let id = parked else { return continuation.resume(returning: true) }
            guard let timeout else { return }
            timer = Task { [self] in
                try? await Task.sleep(for: timeout)
                let expired = state.withLock { state -> Waiter? in
                    guard let waiter = state[keyPath: slot], waiter.id == id else { return nil }
                    state[keyPath: slot] = nil
                    return waiter
                }
                expired?.continuation.resume(returning: false)
            }
        }
    }

    static func now() -> UInt64 { NIODeadline.now().uptimeNanoseconds }
}

/// Scans one stream's bytes for the tokens of its setup stages, each once and in order (the
/// first shows the subscription is live), then for every arrival token.
final class StreamWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let readyTokens: [[UInt8]]
    private let token: [UInt8]
    private let board: ArrivalBoard
    /// Setup stages passed so far.
    private var stage = 0
    private var window: [UInt8] = []

    init(readyTokens: [[UInt8]], token: [UInt8], board: ArrivalBoard) {
        self.readyTokens = readyTokens
        self.token = token
        self.board = board
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        window.append(contentsOf: buffer.readableBytesView)
        while stage < readyTokens.count {
            let readyToken = readyTokens[stage]
            guard let offset = window.withUnsafeBytes({ byteOffset(of: readyToken, in: $0) }) else {
                trim(readyToken.count)
                return
            }
            window.removeSubrange(..<(offset + readyToken.count))
            board.markReady(stage: stage)
            stage += 1
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

    static func open(host: String, port: Int, request: ByteBuffer, readyTokens: [[UInt8]], token: [UInt8], board: ArrivalBoard) async throws -> Channel {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(StreamWatcher(readyTokens: readyTokens, token: token, board: board))
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
