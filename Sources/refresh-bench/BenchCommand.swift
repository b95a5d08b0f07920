import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// Measures a running server; starts nothing itself. Prints one JSON object per run.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh-bench",
        abstract: "Latency, fan-out and memory of swift-pull-to-refresh or nginx + nchan, over loopback.")

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case ours, nchan
    }

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        /// One channel: sample posted → its event read, one at a time.
        case l1
        /// N channels each posting at 60 Hz.
        case l2
        /// One batch → the items event on N streams of one channel.
        case fanout
        /// Server RSS with N idle streams.
        case memory
        /// One publish → `news` on N streams, each of its own session (nchan: N subscribers
        /// of one channel).
        case news
    }

    @Option(help: "Server kind: ours or nchan.") var target: Kind = .ours
    @Option(help: "Host of the server.") var host = "127.0.0.1"
    @Option(help: "Port of the server.") var port = 8080
    @Option(help: "What to measure: l1, l2, fanout, memory, news.") var mode: Mode = .l1
    @Option(help: "Samples for l1.") var samples = 10_000
    @Option(help: "Channels (l2) or streams (fanout, memory, news).") var count = 100
    @Option(help: "Seconds of dragging for l2.") var seconds = 20.0
    @Option(help: "Batches for fanout, publishes for news.") var rounds = 5
    @Option(help: "PID of the server, to read its CPU time and memory.") var serverPid: Int?

    func run() async throws {
        let server: any Target = target == .ours ? OurServer(host: "\(host):\(port)") : Nchan(host: "\(host):\(port)")
        var result: [String: Any] = ["target": server.name, "mode": mode.rawValue]
        let cpuBefore = serverPid.flatMap(Self.cpuSeconds)
        let started = ContinuousClock.now
        switch mode {
        case .l1: try await latency(server, into: &result)
        case .l2: try await manyDragging(server, into: &result)
        case .fanout: try await fanOut(server, into: &result)
        case .memory: try await memory(server, into: &result)
        case .news: try await news(server, into: &result)
        }
        if let cpuBefore, let cpuAfter = serverPid.flatMap(Self.cpuSeconds) {
            let wall = Self.seconds(ContinuousClock.now - started)
            result["serverCpuSeconds"] = cpuAfter - cpuBefore
            result["serverCpuPercent"] = (cpuAfter - cpuBefore) / wall * 100
        }
        let data = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }

    // MARK: - L1

    private func latency(_ server: any Target, into result: inout [String: Any]) async throws {
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        let samples = self.samples
        let warmUp = 200
        let probe = CPUProbe(pid: serverPid)
        var cpuAtStart: CPUReading?
        var cpuAtEnd: CPUReading?
        try await Connection.with(host: host, port: port) { control in
            let channel = try await server.makeChannel(on: control, index: 0, hearsNews: true)
            try await Connection.with(host: host, port: port) { stream in
                try await stream.send(server.subscribe(channel))
                try await Self.settle(server, channel: channel, control: control, stream: stream)
                let clock = ContinuousClock()
                for seq in 1...samples + warmUp {
                    // Server CPU is read between samples, when the server has answered the
                    // last one and has nothing else to do: after the warm-up, after the last.
                    if seq == warmUp + 1 { cpuAtStart = probe?.read() }
                    let start = clock.now
                    try await control.send(server.publish(channel, seq: seq))
                    try await stream.read(until: server.token(seq: seq))
                    let elapsed = clock.now - start
                    _ = try await control.response()
                    if seq > warmUp { _ = histogram.record(Self.microseconds(elapsed)) }
                }
                cpuAtEnd = probe?.read()
            }
        }
        Self.summarize(histogram, into: &result)
        result["samples"] = samples
        probe?.record(from: cpuAtStart, to: cpuAtEnd, samples: samples, into: &result)
    }

    /// Warms the stream: waits until the subscription is live, then publishes seq 0 and
    /// waits for it, so no measured sample races the subscription.
    private static func settle(_ server: any Target, channel: String, control: Connection, stream: Connection) async throws {
        try await stream.read(until: server.subscribedToken)
        try await control.send(server.publish(channel, seq: 0))
        _ = try await control.response()
        try await stream.read(until: server.token(seq: 0))
    }

    // MARK: - L2

    private func manyDragging(_ server: any Target, into result: inout [String: Any]) async throws {
        let count = self.count
        let duration = Duration.milliseconds(Int64(seconds * 1000))
        let (host, port) = (self.host, self.port)
        let start = ContinuousClock.now + .seconds(2)
        // The window over which server CPU is counted: from just before the first drag until
        // the last session stops, with every connection open throughout.
        let probe = CPUProbe(pid: serverPid)
        let window = MeasuredWindow(opens: start - .milliseconds(50), sessions: count, probe: probe)
        let opening = Task { () -> CPUReading? in
            try? await ContinuousClock().sleep(until: window.opens)
            return probe?.read()
        }
        let histograms = try await withThrowingTaskGroup(of: Histogram<UInt64>.self) { group in
            for index in 0..<count {
                group.addTask {
                    var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
                    do {
                        try await Connection.with(host: host, port: port) { control in
                            let channel = try await server.makeChannel(on: control, index: index, hearsNews: true)
                            try await Connection.with(host: host, port: port) { stream in
                                try await stream.send(server.subscribe(channel))
                                try await Self.settle(server, channel: channel, control: control, stream: stream)
                                window.settled()
                                // Spread the drags over one frame so they do not all land at once.
                                var next = start + .microseconds(Int64(index) * 16_667 / Int64(max(count, 1)))
                                let end = start + duration
                                var seq = 1
                                let clock = ContinuousClock()
                                try await clock.sleep(until: next)
                                while next < end {
                                    let sent = clock.now
                                    try await control.send(server.publish(channel, seq: seq))
                                    try await stream.read(until: server.token(seq: seq))
                                    _ = histogram.record(Self.microseconds(clock.now - sent))
                                    _ = try await control.response()
                                    seq += 1
                                    next = next + .microseconds(16_667)
                                    if next > clock.now { try await clock.sleep(until: next) }
                                }
                                await window.stop()
                            }
                        }
                    } catch {
                        window.abandon()
                        throw error
                    }
                    return histogram
                }
            }
            var all: [Histogram<UInt64>] = []
            for try await histogram in group { all.append(histogram) }
            return all
        }
        var merged = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        for histogram in histograms { merged.add(histogram) }
        Self.summarize(merged, into: &result)
        result["sessions"] = count
        result["samplesPerSecond"] = Double(merged.totalCount) / seconds
        let cpuAtStart = await opening.value
        if window.lateSessions > 0 {
            // Their setup ran inside the window: the CPU per sample would include it.
            FileHandle.standardError.write(Data("refresh-bench: \(window.lateSessions) sessions were still being set up when the window opened; no server CPU per sample\n".utf8))
        } else {
            probe?.record(from: cpuAtStart, to: window.cpuAtEnd, samples: Int(merged.totalCount), into: &result)
        }
    }

    // MARK: - Fan-out

    private func fanOut(_ server: any Target, into result: inout [String: Any]) async throws {
        var perStream = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var lastTimes: [Double] = []
        let board = ArrivalBoard()
        try await Connection.with(host: host, port: port) { control in
            let channel = try await server.makeChannel(on: control, index: 0, hearsNews: false)
            let streams = try await openStreams(count: count, board: board, token: server.fanOutToken, server: server) { _ in channel }
            defer { for stream in streams { stream.close(promise: nil) } }
            try await Task.sleep(for: .milliseconds(500))
            for round in 0..<rounds {
                let sent = ArrivalBoard.now()
                for request in server.fanOut(channel, round: round) {
                    try await control.send(request)
                    _ = try await control.response()
                }
                let arrivals = await board.takeArrivals(count)
                for arrival in arrivals { _ = perStream.record((arrival - min(arrival, sent)) / 1000) }
                lastTimes.append(Double((arrivals.max() ?? sent) - sent) / 1_000_000)
                try await Task.sleep(for: .milliseconds(300))
            }
        }
        Self.summarize(perStream, into: &result)
        result["streams"] = count
        result["rounds"] = rounds
        result["lastStreamMs"] = lastTimes.sorted()[lastTimes.count / 2]
        result["lastStreamMsEach"] = lastTimes
    }

    /// Opens `count` watched streams, a few hundred at a time, and waits until all are live:
    /// until each has read `readyTokens[0]` (by default the server's sign of a live
    /// subscription), or `timeout` runs out. The later ready tokens are stages the caller
    /// waits for itself.
    private func openStreams(
        count: Int, board: ArrivalBoard, readyTokens: [[UInt8]]? = nil, token: [UInt8], server: any Target,
        timeout: Duration? = nil, channel: @escaping @Sendable (Int) -> String
    ) async throws -> [any Channel] {
        let readyTokens = readyTokens ?? [server.subscribedToken]
        let (host, port) = (self.host, self.port)
        var streams: [any Channel] = []
        for batchStart in stride(from: 0, to: count, by: 200) {
            let batch = try await withThrowingTaskGroup(of: (any Channel).self) { group in
                for index in batchStart..<min(count, batchStart + 200) {
                    group.addTask {
                        try await StreamWatcher.open(
                            host: host, port: port, request: server.subscribe(channel(index)),
                            readyTokens: readyTokens, token: token, board: board)
                    }
                }
                var opened: [any Channel] = []
                for try await stream in group { opened.append(stream) }
                return opened
            }
            streams += batch
        }
        guard await board.waitReady(count, timeout: timeout) else {
            for stream in streams { stream.close(promise: nil) }
            throw BenchError("only \(board.readyCount()) of \(count) streams went live within \(timeout ?? .zero); the server turns streams away beyond its limits (--max-streams, --max-streams-per-client)")
        }
        return streams
    }

    // MARK: - News

    /// N streams, each of a session that shows a first page (nchan: N subscribers of one
    /// channel); one publish per round, timed until every stream has read its news. Setup is
    /// not measured but bounded: a few connections at once, and every stage has a deadline.
    private func news(_ server: any Target, into result: inout [String: Any]) async throws {
        let (count, rounds, host, port) = (self.count, self.rounds, self.host, self.port)
        guard count > 0, rounds > 0 else { throw BenchError("news needs --count and --rounds of at least 1") }
        let setupLimit = Duration.seconds(30) + .milliseconds(10 * Int64(count))
        let roundLimit = Duration.seconds(30)
        let lanes = 32
        let clock = ContinuousClock()
        var stage = clock.now
        func setupTime() -> Double {
            defer { stage = clock.now }
            return Self.seconds(clock.now - stage)
        }

        let channels: [String]
        if server.newsChannelPerStream {
            channels = try await Self.withTimeout(setupLimit, "making \(count) sessions") {
                try await Self.overConnections(count: count, lanes: lanes, host: host, port: port) { control, index in
                    try await server.makeChannel(on: control, index: index, hearsNews: true)
                }
            }
        } else {
            channels = try await Connection.with(host: host, port: port) { [try await server.makeChannel(on: $0, index: 0, hearsNews: true)] }
        }
        result["setupChannelsSeconds"] = setupTime()

        let board = ArrivalBoard()
        let readyTokens = [server.subscribedToken] + (server.firstPageToken.map { [$0] } ?? [])
        let streams = try await openStreams(
            count: count, board: board, readyTokens: readyTokens, token: server.newsToken, server: server,
            timeout: setupLimit
        ) { channels[$0 % channels.count] }
        defer { for stream in streams { stream.close(promise: nil) } }
        result["setupStreamsSeconds"] = setupTime()

        if server.firstPageToken != nil {
            _ = try await Self.withTimeout(setupLimit, "asking \(count) sessions for a first page") {
                try await Self.overConnections(count: channels.count, lanes: lanes, host: host, port: port) { control, index in
                    guard let request = server.showFirstPage(channels[index]) else { return 0 }
                    try await control.send(request)
                    let (status, body) = try await control.response()
                    guard (200..<300).contains(status) else { throw BenchError("asking for a first page answered \(status): \(body.prefix(200))") }
                    return status
                }
            }
            guard await board.waitReady(count, stage: 1, timeout: setupLimit) else {
                throw BenchError("only \(board.readyCount(stage: 1)) of \(count) streams showed a first page within \(setupLimit)")
            }
            result["setupFirstPageSeconds"] = setupTime()
        }
        try await Task.sleep(for: .milliseconds(500))

        let probe = CPUProbe(pid: serverPid)
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let done = try await Self.withTimeout((roundLimit + .seconds(1)) * rounds, "\(rounds) publishes") {
            try await Connection.with(host: host, port: port) { control in
                var done: [NewsRound] = []
                for round in 0..<rounds {
                    // The server's CPU for one publish: read just before it is sent, and again
                    // once every stream has read its news and the publish has been answered.
                    let cpuAtStart = probe?.read()
                    let sent = ArrivalBoard.now()
                    try await control.send(server.news(channels[0], round: round, tag: tag))
                    let (status, body) = try await control.response()
                    let answered = ArrivalBoard.now()
                    guard (200..<300).contains(status) else { throw BenchError("publishing answered \(status): \(body.prefix(200))") }
                    let arrivals = await board.takeArrivals(count, timeout: roundLimit)
                    let cpuAtEnd = probe?.read()
                    guard arrivals.count == count else {
                        throw BenchError("publish \(round): \(arrivals.count) of \(count) streams read the news within \(roundLimit)")
                    }
                    let microseconds = arrivals.map { ($0 - min($0, sent)) / 1000 }
                    done.append(NewsRound(
                        microseconds: microseconds,
                        firstMs: Double(microseconds.min() ?? 0) / 1000,
                        lastMs: Double((arrivals.max() ?? sent) - sent) / 1_000_000,
                        answeredMs: Double(answered - sent) / 1_000_000,
                        cpuMs: cpuAtStart.flatMap { start in cpuAtEnd.map { Double($0.since(start)) / 1_000_000 } }))
                    try await Task.sleep(for: .milliseconds(300))
                }
                return done
            }
        }
        var perStream = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var p50s: [UInt64] = []
        var p99s: [UInt64] = []
        for round in done {
            var histogram = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
            for value in round.microseconds { _ = histogram.record(value) }
            perStream.add(histogram)
            p50s.append(histogram.valueAtPercentile(50))
            p99s.append(histogram.valueAtPercentile(99))
        }
        Self.summarize(perStream, into: &result)
        result["streams"] = count
        result["rounds"] = rounds
        result["lastStreamMs"] = Self.median(done.map(\.lastMs))
        result["lastStreamMsEach"] = done.map(\.lastMs)
        result["firstStreamMsEach"] = done.map(\.firstMs)
        result["publishAnsweredMsEach"] = done.map(\.answeredMs)
        result["p50usEach"] = p50s
        result["p99usEach"] = p99s
        let cpuTimes = done.compactMap(\.cpuMs)
        if let probe, cpuTimes.count == rounds {
            result["serverCpuPublishMs"] = Self.median(cpuTimes)
            result["serverCpuPublishMsEach"] = cpuTimes
            result["serverCpuClock"] = probe.clock.rawValue
        }
    }

    /// One publish of the news mode: each stream's latency, the time to the first and the
    /// last stream and to the publish's answer, and the server's CPU for it.
    private struct NewsRound: Sendable {
        var microseconds: [UInt64]
        var firstMs: Double
        var lastMs: Double
        var answeredMs: Double
        var cpuMs: Double?
    }

    /// Runs `each` for indexes 0..<count over `lanes` connections at once, each connection
    /// taking every `lanes`-th index in turn; answers the results in index order.
    private static func overConnections<Value: Sendable>(
        count: Int, lanes: Int, host: String, port: Int,
        _ each: @escaping @Sendable (Connection, Int) async throws -> Value
    ) async throws -> [Value] {
        try await withThrowingTaskGroup(of: [(Int, Value)].self) { group in
            for lane in 0..<min(lanes, count) {
                group.addTask {
                    try await Connection.with(host: host, port: port) { control in
                        var done: [(Int, Value)] = []
                        for index in stride(from: lane, to: count, by: lanes) { done.append((index, try await each(control, index))) }
                        return done
                    }
                }
            }
            var values: [Value?] = Array(repeating: nil, count: count)
            for try await done in group { for (index, value) in done { values[index] = value } }
            return values.map { $0! }
        }
    }

    /// Runs `body`, or throws once `limit` has passed (cancelling it).
    static func withTimeout<Value: Sendable>(
        _ limit: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw BenchError("\(what) took longer than \(limit)") }
            return value
        }
    }

    /// The middle value (the upper one of an even count); `values` must not be empty.
    static func median(_ values: [Double]) -> Double {
        values.sorted()[values.count / 2]
    }

    // MARK: - Memory

    private func memory(_ server: any Target, into result: inout [String: Any]) async throws {
        guard let pid = serverPid else { throw BenchError("memory needs --server-pid") }
        let before = Self.rssKiB(pid)
        let channels = try await Connection.with(host: host, port: port) { control in
            var channels: [String] = []
            for index in 0..<count { channels.append(try await server.makeChannel(on: control, index: index, hearsNews: true)) }
            return channels
        }
        let board = ArrivalBoard()
        let streams = try await openStreams(count: count, board: board, token: Array("never".utf8), server: server) { channels[$0] }
        try await Task.sleep(for: .seconds(2))
        let after = Self.rssKiB(pid)
        result["rssBeforeKiB"] = before
        result["rssAfterKiB"] = after
        result["perStreamKiB"] = Double(after - before) / Double(count)
        result["streams"] = count
        for stream in streams { stream.close(promise: nil) }
    }

    // MARK: - Helpers

    static func summarize(_ histogram: Histogram<UInt64>, into result: inout [String: Any]) {
        result["count"] = histogram.totalCount
        result["p50us"] = histogram.valueAtPercentile(50)
        result["p99us"] = histogram.valueAtPercentile(99)
        result["maxUs"] = histogram.max
    }

    static func microseconds(_ duration: Duration) -> UInt64 {
        UInt64(max(0, duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    /// User plus system CPU of a process, from /proc.
    static func cpuSeconds(_ pid: Int) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func rssKiB(_ pid: Int) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}
