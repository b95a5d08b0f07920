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
        /// One edit of an item every page shows → `changes` on N streams, each of its own
        /// session (nchan: one message to N subscribers of one channel).
        case edit
        /// Publishers posting one item at a time for a bounded time, while N sessions listen:
        /// publishes per second acknowledged, their latency, and whether every stream ends at
        /// the feed's final head.
        case publishRate = "publish-rate"
        /// One publish to a feed of one session, timed to its `news` with the server's CPU for
        /// it: first alone on the server, then beside N sessions of another feed with open
        /// streams, which must hear nothing of it.
        case isolation
    }

    @Option(help: "Server kind: ours or nchan.") var target: Kind = .ours
    @Option(help: "Host of the server.") var host = "127.0.0.1"
    @Option(help: "Port of the server.") var port = 8080
    @Option(help: "What to measure: l1, l2, fanout, memory, news, edit, publish-rate, isolation.") var mode: Mode = .l1
    @Option(help: "Samples for l1.") var samples = 10_000
    @Option(help: "Channels (l2) or streams (fanout, memory, news, edit, publish-rate; isolation: the crowd's).") var count = 100
    @Option(help: "Seconds of dragging for l2, of publishing for publish-rate.") var seconds = 20.0
    @Option(help: "Batches for fanout, publishes for news and for each half of isolation, edits for edit.") var rounds = 5
    @Option(help: "Instances the sessions are spread over in turn, HOST:PORT,HOST:PORT,… (news, publish-rate); default --host and --port.")
    var targets: Endpoints?
    @Option(
        help:
            "Instances published on, HOST:PORT,…: news publishes on the first, publish-rate deals its publishers over them in turn. Default: the first of --targets."
    )
    var publishTo: Endpoints?
    @Option(help: "Concurrent publishers for publish-rate, each on a kept-alive connection of its own.") var publishers = 4
    @Option(
        help:
            "Feeds publish-rate writes to (1: the server's default feed; more: feeds of their own, the sessions and the publishers dealt over them in turn)."
    ) var feeds = 1
    @Option(
        help:
            "A token our server's sessions are created and their streams opened with (Authorization: Bearer), for a server with --auth-key."
    ) var token: String?
    @Option(help: "The feed l1's session reads (ours; default: the server's default feed).") var sessionFeed: String?
    @Option(help: "PID of the server, to read its CPU time and memory; repeat it for every instance of a cluster.")
    var serverPid: [Int] = []
    @Option(
        help:
            "PID of the database's main process (PostgreSQL's postmaster): its CPU and that of every process under it is read beside the server's; repeatable."
    )
    var databasePid: [Int] = []

    /// The instances sessions live on, session i on the i-th mod n.
    var sessionTargets: Endpoints { targets ?? Endpoints([Endpoint(host: host, port: port)]) }
    var publishTargets: Endpoints { publishTo ?? Endpoints([sessionTargets[0]]) }

    func validate() throws {
        if mode != .news, mode != .publishRate, sessionTargets.count > 1 || publishTargets.count > 1 {
            throw ValidationError("--targets and --publish-to name several instances only for news and publish-rate")
        }
        if mode == .publishRate, target != .ours {
            throw ValidationError("publish-rate measures our server only: it checks the feed heads its streams are told")
        }
        if mode == .isolation, target != .ours {
            throw ValidationError("isolation measures our server against itself: the same publish with and without a crowd")
        }
    }

    func run() async throws {
        let name = publishTargets[0].description
        let server: any Target = target == .ours ? OurServer(host: name, token: token) : Nchan(host: name)
        var result: [String: Any] = ["target": server.name, "mode": mode.rawValue]
        if sessionTargets.count > 1 || publishTo != nil {
            result["targets"] = sessionTargets.all.map(\.description)
            result["publishTargets"] = publishTargets.all.map(\.description)
        }
        let cpuBefore = Self.cpuSeconds(serverPid)
        let started = ContinuousClock.now
        switch mode {
        case .l1: try await latency(server, into: &result)
        case .l2: try await manyDragging(server, into: &result)
        case .fanout: try await fanOut(server, into: &result)
        case .memory: try await memory(server, into: &result)
        case .news: try await news(server, into: &result)
        case .edit: try await news(server, edits: true, into: &result)
        case .publishRate: try await publishRate(server, into: &result)
        case .isolation: try await isolation(server, into: &result)
        }
        if let cpuBefore, let cpuAfter = Self.cpuSeconds(serverPid) {
            let wall = Self.seconds(ContinuousClock.now - started)
            result["serverCpuSeconds"] = cpuAfter - cpuBefore
            result["serverCpuPercent"] = (cpuAfter - cpuBefore) / wall * 100
        }
        let data = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
        if let broken = result["brokenInvariant"] as? String {
            // The figures are printed all the same, so the run that broke it can be read.
            FileHandle.standardError.write(Data("refresh-bench: \(broken)\n".utf8))
            throw ExitCode.failure
        }
    }

    // MARK: - L1

    private func latency(_ server: any Target, into result: inout [String: Any]) async throws {
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        let samples = self.samples
        let warmUp = 200
        let probe = CPUProbe(processes: serverPid)
        var cpuAtStart: CPUReading?
        var cpuAtEnd: CPUReading?
        try await Connection.with(host: host, port: port) { control in
            let channel = try await server.makeChannel(on: control, index: 0, hearsNews: true, feed: sessionFeed)
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
        let probe = CPUProbe(processes: serverPid)
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
            FileHandle.standardError.write(
                Data("refresh-bench: \(window.lateSessions) sessions were still being set up when the window opened; no server CPU per sample\n".utf8)
            )
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
                let arrivals = await board.takeArrivals(count).map(\.nanoseconds)
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
    /// waits for itself. Stream i connects to the i-th of the session targets (mod n), where
    /// its session lives, and arrives on the board in that target's group.
    private func openStreams(
        count: Int, board: ArrivalBoard, readyTokens: [[UInt8]]? = nil, token: [UInt8], server: any Target,
        timeout: Duration? = nil, heads: HeadBoard? = nil, channel: @escaping @Sendable (Int) -> String
    ) async throws -> [any Channel] {
        let readyTokens = readyTokens ?? [server.subscribedToken]
        let targets = sessionTargets
        var streams: [any Channel] = []
        for batchStart in stride(from: 0, to: count, by: 200) {
            let batch = try await withThrowingTaskGroup(of: (any Channel).self) { group in
                for index in batchStart..<min(count, batchStart + 200) {
                    group.addTask {
                        try await StreamWatcher.open(
                            host: targets[index].host, port: targets[index].port, request: server.subscribe(channel(index)),
                            readyTokens: readyTokens, token: token, board: board,
                            index: index, group: index % targets.count, heads: heads)
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
            throw BenchError(
                "only \(board.readyCount()) of \(count) streams went live within \(timeout ?? .zero); the server turns streams away beyond its limits (--max-streams, --max-streams-per-client)"
            )
        }
        return streams
    }

    // MARK: - Listening sessions

    /// N sessions, each with its own stream and a first page shown (nchan: N subscribers of
    /// one channel), spread over the session targets in turn: where news and publish-rate
    /// start from.
    private struct ListeningSessions {
        let channels: [String]
        let streams: [any Channel]
        let board: ArrivalBoard

        func close() {
            for stream in streams { stream.close(promise: nil) }
        }
    }

    /// Sets N sessions up. Not measured but bounded: a few connections at once, and every
    /// stage has a deadline; each stage's time goes into `result`.
    /// `token`: what each stream waits for (default: the server's news).
    private func listeningSessions(
        _ server: any Target, count: Int? = nil, feed: String? = nil, heads: HeadBoard? = nil, token: [UInt8]? = nil,
        into result: inout [String: Any]
    ) async throws -> ListeningSessions {
        let (count, targets) = (count ?? self.count, sessionTargets)
        let setupLimit = Duration.seconds(30) + .milliseconds(10 * Int64(count))
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
                try await Self.overConnections(count: count, lanes: lanes, targets: targets) { control, index in
                    try await server.makeChannel(on: control, index: index, hearsNews: true, feed: feed)
                }
            }
        } else {
            channels = try await Connection.with(host: targets[0].host, port: targets[0].port) {
                [try await server.makeChannel(on: $0, index: 0, hearsNews: true, feed: feed)]
            }
        }
        result["setupChannelsSeconds"] = setupTime()

        let board = ArrivalBoard()
        let readyTokens = [server.subscribedToken] + (server.firstPageToken.map { [$0] } ?? [])
        let streams = try await openStreams(
            count: count, board: board, readyTokens: readyTokens, token: token ?? server.newsToken, server: server,
            timeout: setupLimit, heads: heads
        ) { channels[$0 % channels.count] }
        let sessions = ListeningSessions(channels: channels, streams: streams, board: board)
        result["setupStreamsSeconds"] = setupTime()

        do {
            if server.firstPageToken != nil {
                _ = try await Self.withTimeout(setupLimit, "asking \(count) sessions for a first page") {
                    try await Self.overConnections(count: channels.count, lanes: lanes, targets: targets) { control, index in
                        guard let request = server.showFirstPage(channels[index]) else { return 0 }
                        try await control.send(request)
                        let (status, body) = try await control.response()
                        guard (200..<300).contains(status) else {
                            throw BenchError("asking for a first page answered \(status): \(body.prefix(200))")
                        }
                        return status
                    }
                }
                guard await board.waitReady(count, stage: 1, timeout: setupLimit) else {
                    throw BenchError("only \(board.readyCount(stage: 1)) of \(count) streams showed a first page within \(setupLimit)")
                }
                result["setupFirstPageSeconds"] = setupTime()
            }
            try await Task.sleep(for: .milliseconds(500))
        } catch {
            sessions.close()
            throw error
        }
        return sessions
    }

    // MARK: - News

    /// N streams, each of a session that shows a first page (nchan: N subscribers of one
    /// channel), spread over the session targets; one publish per round on the first publish
    /// target, timed until every stream has read its news. One unmeasured publish goes first,
    /// so that no measured round pays for what a first publish sets up (a pooled connection
    /// to the database on each instance). With several targets, the figures are also given
    /// per target, and for the targets not published on together: those hear of the publish
    /// through the database.
    /// N: one publish told to every stream as `news`; with `edits` (E), one edit of the item
    /// every page shows, told as `changes`.
    private func news(_ server: any Target, edits: Bool = false, into result: inout [String: Any]) async throws {
        let (count, rounds) = (self.count, self.rounds)
        guard count > 0, rounds > 0 else { throw BenchError("\(mode.rawValue) needs --count and --rounds of at least 1") }
        let roundLimit = Duration.seconds(30)
        let publishTarget = publishTargets[0]
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        if edits, let request = server.editedItem(tag: tag) {
            // The item is the feed's newest: every page's first page shows it.
            try await Connection.with(host: publishTarget.host, port: publishTarget.port) { control in
                try await control.send(request)
                let (status, body) = try await control.response()
                guard (200..<300).contains(status) else { throw BenchError("publishing the edited item answered \(status): \(body.prefix(200))") }
            }
        }
        let sessions = try await listeningSessions(server, token: edits ? server.editToken : nil, into: &result)
        defer { sessions.close() }
        let (channels, board) = (sessions.channels, sessions.board)
        /// Round -1 warms up; rounds 0… are measured.
        @Sendable func request(_ round: Int) -> ByteBuffer {
            edits
                ? server.edit(channels[0], round: round, tag: tag)
                : server.news(channels[0], round: max(round, 0), tag: round < 0 ? "\(tag)w" : tag)
        }

        let probes = CPUProbes(server: serverPid, database: databasePid)
        let done = try await Self.withTimeout((roundLimit + .seconds(1)) * (rounds + 1), "\(rounds) publishes") {
            try await Connection.with(host: publishTarget.host, port: publishTarget.port) { control in
                try await control.send(request(-1))
                let (status, body) = try await control.response()
                guard (200..<300).contains(status) else { throw BenchError("the warm-up publish answered \(status): \(body.prefix(200))") }
                let warm = await board.takeArrivals(count, timeout: roundLimit)
                guard warm.count == count else {
                    throw BenchError("the warm-up publish: \(warm.count) of \(count) streams read its news within \(roundLimit)")
                }
                try await Task.sleep(for: .milliseconds(300))
                var done: [NewsRound] = []
                for round in 0..<rounds {
                    // The CPU for one publish: read just before it is sent, and again once every
                    // stream has read its news and the publish has been answered.
                    let cpuAtStart = probes.read()
                    let sent = ArrivalBoard.now()
                    try await control.send(request(round))
                    let (status, body) = try await control.response()
                    let answered = ArrivalBoard.now()
                    guard (200..<300).contains(status) else { throw BenchError("publishing answered \(status): \(body.prefix(200))") }
                    let arrivals = await board.takeArrivals(count, timeout: roundLimit)
                    let cpuAtEnd = probes.read()
                    guard arrivals.count == count else {
                        throw BenchError("publish \(round): \(arrivals.count) of \(count) streams read the news within \(roundLimit)")
                    }
                    let microseconds = arrivals.map { ($0.nanoseconds - min($0.nanoseconds, sent)) / 1000 }
                    done.append(
                        NewsRound(
                            microseconds: microseconds,
                            groups: arrivals.map(\.group),
                            firstMs: Double(microseconds.min() ?? 0) / 1000,
                            lastMs: Double(microseconds.max() ?? 0) / 1000,
                            answeredMs: Double(answered - sent) / 1_000_000,
                            cpu: probes.span(from: cpuAtStart, to: cpuAtEnd)))
                    try await Task.sleep(for: .milliseconds(300))
                }
                return done
            }
        }
        Self.summarize(Self.histogram(done.map { $0.microseconds[...] }), into: &result)
        result["streams"] = count
        result["rounds"] = rounds
        result["lastStreamMs"] = Self.median(done.map(\.lastMs))
        result["lastStreamMsEach"] = done.map(\.lastMs)
        result["firstStreamMsEach"] = done.map(\.firstMs)
        result["publishAnsweredMsEach"] = done.map(\.answeredMs)
        result["p50usEach"] = done.map { Self.histogram([$0.microseconds[...]]).valueAtPercentile(50) }
        result["p99usEach"] = done.map { Self.histogram([$0.microseconds[...]]).valueAtPercentile(99) }
        recordNewsByTarget(done, publishedOn: publishTarget, into: &result)

        let serverCpu = done.compactMap(\.cpu.server)
        if serverCpu.count == rounds {
            result["serverCpuPublishMs"] = Self.median(serverCpu)
            result["serverCpuPublishMsEach"] = serverCpu
        }
        let databaseCpu = done.compactMap(\.cpu.database)
        if databaseCpu.count == rounds {
            result["databaseCpuPublishMs"] = Self.median(databaseCpu)
            result["databaseCpuPublishMsEach"] = databaseCpu
            result["totalCpuPublishMs"] = Self.median(done.compactMap(\.cpu.total))
        }
        probes.record(into: &result)
    }

    /// With several session targets: per target, and for those other than the one published
    /// on, per-stream p50 and p99 over all rounds and the median time to their last stream.
    private func recordNewsByTarget(_ done: [NewsRound], publishedOn publishTarget: Endpoint, into result: inout [String: Any]) {
        let targets = sessionTargets
        guard targets.count > 1 else { return }
        func figures(_ inGroup: (Int) -> Bool) -> [String: Any] {
            var slices: [ArraySlice<UInt64>] = []
            var lastMs: [Double] = []
            for round in done {
                let values = zip(round.microseconds, round.groups).filter { inGroup($0.1) }.map(\.0)
                slices.append(values[...])
                lastMs.append(Double(values.max() ?? 0) / 1000)
            }
            let histogram = Self.histogram(slices)
            return [
                "streams": Int(histogram.totalCount) / max(done.count, 1), "p50us": histogram.valueAtPercentile(50),
                "p99us": histogram.valueAtPercentile(99), "lastStreamMs": Self.median(lastMs),
            ]
        }
        result["byTarget"] = targets.all.indices.map { group in
            var entry = figures { $0 == group }
            entry["target"] = targets.all[group].description
            return entry
        }
        let published = targets.all.firstIndex(of: publishTarget)
        let others = figures { $0 != published }
        result["otherTargetsP50us"] = others["p50us"]
        result["otherTargetsP99us"] = others["p99us"]
        result["otherTargetsLastStreamMs"] = others["lastStreamMs"]
    }

    /// One publish of the news mode: each stream's latency and the group (target) it is on,
    /// the time to the first and the last stream and to the publish's answer, and the CPU
    /// for it.
    private struct NewsRound: Sendable {
        var microseconds: [UInt64]
        var groups: [Int]
        var firstMs: Double
        var lastMs: Double
        var answeredMs: Double
        var cpu: CPUProbes.Span
    }

    // MARK: - Isolation

    /// One session on a feed of its own; `rounds` publishes to that feed, each timed until the
    /// session's stream has read its `news`, with the server's CPU from just before the publish
    /// to then. Then `count` sessions of another feed open their streams and show a first page,
    /// and the same publishes are timed again. A publish costs only its own feed's sessions
    /// when the two halves agree. The crowd must hear nothing: a `news` on any of its streams
    /// breaks the run (non-zero exit, after the figures).
    private func isolation(_ server: any Target, into result: inout [String: Any]) async throws {
        let (count, rounds) = (self.count, self.rounds)
        guard count > 0, rounds > 0 else { throw BenchError("isolation needs --count and --rounds of at least 1") }
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let (lonely, crowded) = ("bench.one.\(tag)", "bench.crowd.\(tag)")
        let roundLimit = Duration.seconds(30)
        let target = publishTargets[0]
        let probes = CPUProbes(server: serverPid, database: databasePid)

        var setup: [String: Any] = [:]
        let one = try await listeningSessions(server, count: 1, feed: lonely, into: &setup)
        defer { one.close() }

        /// `rounds` publishes to the lonely feed (after one unmeasured): the time to its news
        /// and the server's CPU for each.
        func publishes(_ half: String) async throws -> (ms: [Double], cpu: [Double]) {
            try await Self.withTimeout((roundLimit + .seconds(1)) * (rounds + 1), "\(rounds) publishes \(half)") {
                try await Connection.with(host: target.host, port: target.port) { control in
                    var (times, cpu): ([Double], [Double]) = ([], [])
                    for round in -1..<rounds {
                        let cpuAtStart = probes.read()
                        let sent = ArrivalBoard.now()
                        try await control.send(server.news(one.channels[0], round: round + 1, tag: "\(tag)\(half)", feed: lonely))
                        let (status, body) = try await control.response()
                        guard status == 201 else { throw BenchError("publishing \(half) answered \(status): \(body.prefix(200))") }
                        let arrivals = await one.board.takeArrivals(1, timeout: roundLimit)
                        let cpuAtEnd = probes.read()
                        guard let arrival = arrivals.first else { throw BenchError("publish \(round) \(half): no news within \(roundLimit)") }
                        if round >= 0 {
                            times.append(Double(arrival.nanoseconds - min(arrival.nanoseconds, sent)) / 1_000_000)
                            if let server = probes.span(from: cpuAtStart, to: cpuAtEnd).server { cpu.append(server) }
                        }
                        try await Task.sleep(for: .milliseconds(200))
                    }
                    return (times, cpu)
                }
            }
        }

        let alone = try await publishes("alone")
        let crowd = try await listeningSessions(server, feed: crowded, into: &setup)
        defer { crowd.close() }
        let beside = try await publishes("beside")
        let overheard = await crowd.board.takeArrivals(count, timeout: .milliseconds(500)).count

        result["streams"] = count
        result["rounds"] = rounds
        result["setup"] = setup
        result["aloneMsEach"] = alone.ms
        result["besideMsEach"] = beside.ms
        result["aloneMs"] = Self.median(alone.ms)
        result["besideMs"] = Self.median(beside.ms)
        result["timeRatio"] = Self.median(beside.ms) / max(Self.median(alone.ms), 0.001)
        if alone.cpu.count == rounds, beside.cpu.count == rounds {
            result["aloneCpuMsEach"] = alone.cpu
            result["besideCpuMsEach"] = beside.cpu
            result["aloneCpuMs"] = Self.median(alone.cpu)
            result["besideCpuMs"] = Self.median(beside.cpu)
            result["cpuRatio"] = Self.median(beside.cpu) / max(Self.median(alone.cpu), 0.001)
        }
        probes.record(into: &result)
        result["crowdStreamsThatHeard"] = overheard
        if overheard > 0 {
            result["brokenInvariant"] = "\(overheard) of \(count) streams of another feed were told of a publish to one feed"
        }
    }

    // MARK: - Publish rate

    /// N listening sessions spread over the session targets, then `publishers` connections
    /// dealt over the publish targets, each posting one new item at a time, the next as soon
    /// as the last is answered, until `seconds` have passed. Counts the `201`s per second of
    /// publishing and their latency; then waits until every stream has been told the feed's
    /// final head. Positions are dense, so the head must be the one the warm-up publish left
    /// plus one per acknowledged publish: a stream that never gets there lost news, a head
    /// short of it lost an acknowledged item, and a `news` that does not move a stream's head
    /// forward was told twice. Each breaks the run (non-zero exit, after the figures).
    /// One feed of publish-rate: its sessions, what their streams were told, and where its
    /// head stood when the publishing began.
    private struct RateFeed {
        let name: String?
        let sessions: ListeningSessions
        let heads: HeadBoard
        /// What each stream had been told when the publishing began.
        var start: [HeadBoard.StreamHead] = []
        var startHead: Int64 { start.map(\.head).max() ?? 0 }
    }

    private func publishRate(_ server: any Target, into result: inout [String: Any]) async throws {
        let (count, publishers, targets) = (self.count, self.publishers, publishTargets)
        guard count > 0, publishers > 0, seconds > 0, feeds > 0 else {
            throw BenchError("publish-rate needs --count, --publishers, --seconds and --feeds above 0")
        }
        guard feeds <= count, feeds <= publishers else { throw BenchError("publish-rate needs a session and a publisher per feed at least") }
        let tellLimit = Duration.seconds(30)
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        // Feeds of their own, new for the run, each with its share of the sessions.
        var lanes: [RateFeed] = []
        defer { for lane in lanes { lane.sessions.close() } }
        for index in 0..<feeds {
            let name = feeds == 1 ? nil : "rate-\(tag)-\(index)"
            let share = count / feeds + (index < count % feeds ? 1 : 0)
            let heads = HeadBoard(streams: share)
            let sessions = try await listeningSessions(server, count: share, feed: name, heads: heads, into: &result)
            lanes.append(RateFeed(name: name, sessions: sessions, heads: heads))
        }

        // Warm-up: after one publish to each feed every stream knows where its feed starts.
        for index in lanes.indices {
            let lane = lanes[index]
            try await Connection.with(host: targets[0].host, port: targets[0].port) { control in
                try await control.send(server.news(lane.sessions.channels[0], round: 0, tag: "\(tag)w", feed: lane.name))
                let (status, body) = try await control.response()
                guard status == 201 else { throw BenchError("the warm-up publish answered \(status): \(body.prefix(200))") }
            }
            let streams = lane.heads.snapshot().count
            let warm = await lane.sessions.board.takeArrivals(streams, timeout: tellLimit)
            guard warm.count == streams else {
                throw BenchError("the warm-up publish: \(warm.count) of \(streams) streams read its news within \(tellLimit)")
            }
            let start = lane.heads.snapshot()
            let startHead = start.map(\.head).max() ?? 0
            guard start.allSatisfy({ $0.head == startHead }) else {
                throw BenchError("after the warm-up publish the streams were told heads from \(start.map(\.head).min() ?? 0) to \(startHead)")
            }
            lanes[index].start = start
        }
        try await Task.sleep(for: .milliseconds(300))

        let probes = CPUProbes(server: serverPid, database: databasePid)
        let cpuAtStart = probes.read()
        let clock = ContinuousClock()
        let began = clock.now
        let deadline = began + .milliseconds(Int64(seconds * 1000))
        let writers = lanes.map { ($0.name, $0.sessions.channels[0]) }
        // Publisher p writes to feed p mod --feeds.
        let outcomes = await withTaskGroup(of: (Int, PublisherOutcome).self) { group in
            for publisher in 0..<publishers {
                let endpoint = targets[publisher]
                let (feed, channel) = writers[publisher % writers.count]
                group.addTask {
                    let outcome = await Self.publish(
                        server, channel: channel, feed: feed, on: endpoint, tag: "\(tag)p\(publisher)", until: deadline)
                    return (publisher, outcome)
                }
            }
            var all: [(Int, PublisherOutcome)] = []
            for await outcome in group { all.append(outcome) }
            return all.sorted { $0.0 < $1.0 }.map(\.1)
        }
        let publishingSeconds = Self.seconds(clock.now - began)
        let acknowledged = outcomes.reduce(0) { $0 + $1.acknowledged }
        // Each feed's streams must reach its own head: its start and its publishers' 201s.
        var expected: [Int64] = lanes.map(\.startHead)
        for (publisher, outcome) in outcomes.enumerated() { expected[publisher % lanes.count] += Int64(outcome.acknowledged) }
        var allTold = true
        for (lane, head) in zip(lanes, expected) where !(await lane.heads.waitAll(atLeast: head, timeout: tellLimit)) { allTold = false }
        let cpuAtEnd = probes.read()
        let windowSeconds = Self.seconds(clock.now - began)
        var finals: [[HeadBoard.StreamHead]] = []
        for (lane, head) in zip(lanes, expected) {
            var final = lane.heads.snapshot()
            let finalHead = final.map(\.head).max() ?? 0
            if finalHead > head {
                // A publish that got no 201 committed all the same: wait for its news too.
                _ = await lane.heads.waitAll(atLeast: finalHead, timeout: .seconds(5))
                final = lane.heads.snapshot()
            }
            finals.append(final)
        }

        var latency = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var statuses: [String: Int] = [:]
        for outcome in outcomes {
            latency.add(outcome.latency)
            for (status, times) in outcome.statuses { statuses[status, default: 0] += times }
        }
        Self.summarize(latency, into: &result)
        result["streams"] = count
        result["publishers"] = publishers
        result["feeds"] = feeds
        result["seconds"] = seconds
        result["publishingSeconds"] = publishingSeconds
        result["publishes"] = acknowledged
        result["publishesPerSecond"] = Double(acknowledged) / publishingSeconds
        result["notAcknowledged"] = statuses
        let finalHeads = finals.map { $0.map(\.head).max() ?? 0 }
        let atFinal = zip(finals, finalHeads).flatMap { final, head in final.filter { $0.head == head } }
        result["startHead"] = lanes.map(\.startHead).reduce(0, +)
        result["expectedHead"] = expected.reduce(0, +)
        result["finalHead"] = finalHeads.reduce(0, +)
        result["streamsAtFinalHead"] = atFinal.count
        result["committedWithoutAcknowledgement"] = zip(finalHeads, expected).reduce(Int64(0)) { $0 + max(0, $1.0 - $1.1) }
        result["newsPerStream"] = Self.median(
            zip(finals, lanes).flatMap { final, lane in zip(final, lane.start).map { Double($0.events - $1.events) } })
        let repeats = finals.joined().reduce(0) { $0 + $1.repeats }
        result["newsRepeated"] = repeats
        // From the last publish answered to the last stream told its feed's final head; 0
        // when every stream was told before the last answer went out.
        let lastAnswered = outcomes.map(\.lastAnswered).max() ?? 0
        let lastTold = atFinal.map(\.nanoseconds).max() ?? lastAnswered
        result["lastStreamMs"] = Double(lastTold - min(lastTold, lastAnswered)) / 1_000_000
        let cpu = probes.span(from: cpuAtStart, to: cpuAtEnd)
        if acknowledged > 0 {
            if let server = cpu.server {
                result["serverCpuPerPublishUs"] = server * 1000 / Double(acknowledged)
                result["serverCpuWindowPercent"] = server / 10 / windowSeconds
            }
            if let database = cpu.database {
                result["databaseCpuPerPublishUs"] = database * 1000 / Double(acknowledged)
                result["databaseCpuWindowPercent"] = database / 10 / windowSeconds
            }
            if cpu.database != nil, let total = cpu.total { result["totalCpuPerPublishUs"] = total * 1000 / Double(acknowledged) }
        }
        probes.record(into: &result)

        let short = zip(finalHeads, expected).filter { $0.0 < $0.1 }
        let nothingLost = allTold && short.isEmpty && atFinal.count == count
        result["nothingLost"] = nothingLost
        if let (finalHead, head) = short.first {
            result["brokenInvariant"] =
                "no stream of a feed was told a head past \(finalHead), \(head - finalHead) short of \(head) after its acknowledged publishes: items lost, or news lost on every stream"
        } else if !nothingLost {
            result["brokenInvariant"] = "\(count - atFinal.count) of \(count) streams were not told their feed's final head within \(tellLimit)"
        } else if repeats > 0 {
            result["brokenInvariant"] = "\(repeats) news events told a stream a head it had already been told"
        }
    }

    /// What one publisher did: its acknowledged publishes' latency, every other answer by
    /// status (`connection lost` when one had none), and when its last answer came.
    private struct PublisherOutcome: Sendable {
        var latency = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var acknowledged = 0
        var statuses: [String: Int] = [:]
        var lastAnswered: UInt64 = 0
    }

    /// Posts one new item at a time on a kept-alive connection to `endpoint` until `deadline`,
    /// connecting again if the connection is lost.
    private static func publish(
        _ server: any Target, channel: String, feed: String?, on endpoint: Endpoint, tag: String, until deadline: ContinuousClock.Instant
    ) async -> PublisherOutcome {
        var outcome = PublisherOutcome()
        var next = 0
        let clock = ContinuousClock()
        while clock.now < deadline {
            var inFlight = false
            do {
                try await Connection.with(host: endpoint.host, port: endpoint.port) { control in
                    while clock.now < deadline {
                        let sent = clock.now
                        inFlight = true
                        try await control.send(server.news(channel, round: next, tag: tag, feed: feed))
                        next += 1
                        let (status, _) = try await control.response()
                        inFlight = false
                        outcome.lastAnswered = ArrivalBoard.now()
                        if status == 201 {
                            outcome.acknowledged += 1
                            _ = outcome.latency.record(microseconds(clock.now - sent))
                        } else {
                            outcome.statuses["\(status)", default: 0] += 1
                        }
                    }
                }
            } catch {
                if inFlight { outcome.statuses["connection lost", default: 0] += 1 }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        return outcome
    }

    // MARK: - Helpers of news and publish-rate

    /// One histogram of microseconds over several sets of them.
    static func histogram(_ sets: [ArraySlice<UInt64>]) -> Histogram<UInt64> {
        var histogram = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        for set in sets { for value in set { _ = histogram.record(value) } }
        return histogram
    }

    /// Runs `each` for indexes 0..<count over about `lanes` connections at once; index i goes
    /// to the i-th of `targets` (mod n), each of them with its share of the lanes, each lane
    /// taking its target's indexes in turn. Answers the results in index order.
    private static func overConnections<Value: Sendable>(
        count: Int, lanes: Int, targets: Endpoints,
        _ each: @escaping @Sendable (Connection, Int) async throws -> Value
    ) async throws -> [Value] {
        let perTarget = max(1, lanes / targets.count)
        let stride = targets.count * perTarget
        return try await withThrowingTaskGroup(of: [(Int, Value)].self) { group in
            for target in 0..<targets.count {
                for lane in 0..<perTarget where target + lane * targets.count < count {
                    let endpoint = targets[target]
                    group.addTask {
                        try await Connection.with(host: endpoint.host, port: endpoint.port) { control in
                            var done: [(Int, Value)] = []
                            for index in Swift.stride(from: target + lane * targets.count, to: count, by: stride) {
                                done.append((index, try await each(control, index)))
                            }
                            return done
                        }
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
        guard let pid = serverPid.first else { throw BenchError("memory needs --server-pid") }
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

    /// User plus system CPU of processes, added up; nil without any, or if one is gone.
    static func cpuSeconds(_ pids: [Int]) -> Double? {
        guard !pids.isEmpty else { return nil }
        var total = 0.0
        for pid in pids {
            guard let seconds = cpuSeconds(pid) else { return nil }
            total += seconds
        }
        return total
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
