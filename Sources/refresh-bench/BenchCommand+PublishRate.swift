import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// C: publishers posting one item at a time while sessions listen.
extension BenchCommand {
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
    struct RateFeed {
        let name: String?
        let sessions: ListeningSessions
        let heads: HeadBoard
        /// What each stream had been told when the publishing began.
        var start: [HeadBoard.StreamHead] = []
        var startHead: Int64 { start.map(\.head).max() ?? 0 }
    }

    func publishRate(_ server: any Target, into result: inout Figures) async throws {
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
    struct PublisherOutcome: Sendable {
        var latency = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var acknowledged = 0
        var statuses: [String: Int] = [:]
        var lastAnswered: UInt64 = 0
    }

    /// Posts one new item at a time on a kept-alive connection to `endpoint` until `deadline`,
    /// connecting again if the connection is lost.
    static func publish(
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
}
