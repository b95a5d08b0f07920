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
        var arrivals: [Arrival] = []
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

    /// One stream read the awaited token: when, and the group of streams it belongs to (the
    /// instance it is connected to).
    struct Arrival: Sendable {
        let nanoseconds: UInt64
        let group: Int
    }

    func markArrival(_ nanoseconds: UInt64, group: Int = 0) {
        state.withLock { state in
            state.arrivals.append(Arrival(nanoseconds: nanoseconds, group: group))
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
    func takeArrivals(_ count: Int, timeout: Duration? = nil) async -> [Arrival] {
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

/// The newest feed head each stream has been told (`"head":N` in its `news`), so a run can
/// check that every stream ends where the feed ends (nothing lost on the way) and was never
/// told a head it had already passed (nothing twice).
final class HeadBoard: Sendable {
    struct StreamHead: Sendable {
        var head: Int64 = 0
        /// When the stream read its newest head (``ArrivalBoard/now()``).
        var nanoseconds: UInt64 = 0
        /// `news` events read; fewer than publishes where the server coalesced them.
        var events = 0
        /// `news` events whose head was not past the one told before.
        var repeats = 0
    }

    private let streams: Mutex<[StreamHead]>

    init(streams count: Int) {
        streams = Mutex(Array(repeating: StreamHead(), count: count))
    }

    func record(stream: Int, head: Int64, at nanoseconds: UInt64) {
        streams.withLock { streams in
            streams[stream].events += 1
            if head > streams[stream].head {
                streams[stream].head = head
                streams[stream].nanoseconds = nanoseconds
            } else {
                streams[stream].repeats += 1
            }
        }
    }

    /// Streams told `head` or a later one.
    func count(atLeast head: Int64) -> Int {
        streams.withLock { streams in streams.reduce(0) { $0 + ($1.head >= head ? 1 : 0) } }
    }

    func snapshot() -> [StreamHead] { streams.withLock { $0 } }

    /// Waits, looking every few milliseconds, until every stream has been told `head` or a
    /// later one; false if `timeout` ran out first.
    func waitAll(atLeast head: Int64, timeout: Duration) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let total = streams.withLock { $0.count }
        while count(atLeast: head) < total {
            guard clock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}

/// Scans one stream's bytes for the tokens of its setup stages, each once and in order (the
/// first shows the subscription is live), then for every arrival token; with a head board,
/// each arrival's `"head":N` as well.
final class StreamWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let readyTokens: [[UInt8]]
    private let token: [UInt8]
    private let board: ArrivalBoard
    /// The stream's place on the head board, and its group on the arrival board.
    private let index: Int
    private let group: Int
    private let heads: HeadBoard?
    /// Setup stages passed so far.
    private var stage = 0
    private var window: [UInt8] = []

    init(readyTokens: [[UInt8]], token: [UInt8], board: ArrivalBoard, index: Int = 0, group: Int = 0, heads: HeadBoard? = nil) {
        self.readyTokens = readyTokens
        self.token = token
        self.board = board
        self.index = index
        self.group = group
        self.heads = heads
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
            let start = searchFrom + offset
            searchFrom = start + token.count
            let now = ArrivalBoard.now()
            if let heads {
                guard let (head, end) = Self.head(in: window, from: searchFrom) else {
                    // The event has not all come yet: keep it, from its token on, for the next read.
                    window.removeSubrange(..<start)
                    return
                }
                heads.record(stream: index, head: head, at: now)
                searchFrom = end
            }
            board.markArrival(now, group: group)
        }
        window.removeSubrange(..<searchFrom)
        trim(token.count)
    }

    private static let headKey = Array(#""head":"#.utf8)

    /// The number after the first `"head":` from `offset` on, and where it ends; nil while
    /// the number may still go on in the next read.
    private static func head(in window: [UInt8], from offset: Int) -> (Int64, Int)? {
        guard let found = window.withUnsafeBytes({ byteOffset(of: headKey, in: UnsafeRawBufferPointer(rebasing: $0[offset...])) }) else {
            return nil
        }
        var end = offset + found + headKey.count
        var value: Int64 = 0
        while end < window.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(window[end]) {
            value = value * 10 + Int64(window[end] - UInt8(ascii: "0"))
            end += 1
        }
        return end < window.count ? (value, end) : nil
    }

    /// Keeps only what could still be the start of a token split across reads.
    private func trim(_ length: Int) {
        if window.count > length { window.removeFirst(window.count - length + 1) }
    }

    static func open(
        host: String, port: Int, request: ByteBuffer, readyTokens: [[UInt8]], token: [UInt8], board: ArrivalBoard,
        index: Int = 0, group: Int = 0, heads: HeadBoard? = nil
    ) async throws -> Channel {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        StreamWatcher(readyTokens: readyTokens, token: token, board: board, index: index, group: group, heads: heads))
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
