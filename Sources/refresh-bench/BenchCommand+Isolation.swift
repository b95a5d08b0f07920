import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// I: a publish to a feed of one session, alone and beside a crowd on another feed.
extension BenchCommand {
    /// One session on a feed of its own; `rounds` publishes to that feed, each timed until the
    /// session's stream has read its `news`, with the server's CPU from just before the publish
    /// to then. Then `count` sessions of another feed open their streams and show a first page,
    /// and the same publishes are timed again. A publish costs only its own feed's sessions
    /// when the two halves agree. The crowd must hear nothing: a `news` on any of its streams
    /// breaks the run (non-zero exit, after the figures).
    func isolation(_ server: any Target, into result: inout Figures) async throws {
        let (count, rounds) = (self.count, self.rounds)
        guard count > 0, rounds > 0 else { throw BenchError("isolation needs --count and --rounds of at least 1") }
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let (lonely, crowded) = ("bench.one.\(tag)", "bench.crowd.\(tag)")
        let roundLimit = Duration.seconds(30)
        let target = publishTargets[0]
        let probes = CPUProbes(server: serverPid, database: databasePid)

        var setup = Figures()
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
}
