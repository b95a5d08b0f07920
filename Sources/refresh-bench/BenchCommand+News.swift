import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// N and E: one publish → `news`, one edit → `changes`, on every listening session.
extension BenchCommand {
    /// N streams, each of a session that shows a first page (nchan: N subscribers of one
    /// channel), spread over the session targets; one publish per round on the first publish
    /// target, timed until every stream has read its news. One unmeasured publish goes first,
    /// so that no measured round pays for what a first publish sets up (a pooled connection
    /// to the database on each instance). With several targets, the figures are also given
    /// per target, and for the targets not published on together: those hear of the publish
    /// through the database.
    /// N: one publish told to every stream as `news`; with `edits` (E), one edit of the item
    /// every page shows, told as `changes`.
    func news(_ server: any Target, edits: Bool = false, into result: inout Figures) async throws {
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
    func recordNewsByTarget(_ done: [NewsRound], publishedOn publishTarget: Endpoint, into result: inout Figures) {
        let targets = sessionTargets
        guard targets.count > 1 else { return }
        func figures(_ inGroup: (Int) -> Bool) -> Figures {
            var slices: [ArraySlice<UInt64>] = []
            var lastMs: [Double] = []
            for round in done {
                let values = zip(round.microseconds, round.groups).filter { inGroup($0.1) }.map(\.0)
                slices.append(values[...])
                lastMs.append(Double(values.max() ?? 0) / 1000)
            }
            let histogram = Self.histogram(slices)
            var figures = Figures()
            figures["streams"] = Int(histogram.totalCount) / max(done.count, 1)
            figures["p50us"] = histogram.valueAtPercentile(50)
            figures["p99us"] = histogram.valueAtPercentile(99)
            figures["lastStreamMs"] = Self.median(lastMs)
            return figures
        }
        result["byTarget"] = targets.all.indices.map { group in
            var entry = figures { $0 == group }
            entry["target"] = targets.all[group].description
            return entry
        }
        let published = targets.all.firstIndex(of: publishTarget)
        let others = figures { $0 != published }
        result["otherTargetsP50us"] = others["p50us"] as UInt64?
        result["otherTargetsP99us"] = others["p99us"] as UInt64?
        result["otherTargetsLastStreamMs"] = others["lastStreamMs"] as Double?
    }

    /// One publish of the news mode: each stream's latency and the group (target) it is on,
    /// the time to the first and the last stream and to the publish's answer, and the CPU
    /// for it.
    struct NewsRound: Sendable {
        var microseconds: [UInt64]
        var groups: [Int]
        var firstMs: Double
        var lastMs: Double
        var answeredMs: Double
        var cpu: CPUProbes.Span
    }
}
