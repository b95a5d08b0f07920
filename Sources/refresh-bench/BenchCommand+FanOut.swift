import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// F: one batch of items → the `items` event on every stream of one session.
extension BenchCommand {
    func fanOut(_ server: any Target, into result: inout Figures) async throws {
        var perStream = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var lastTimes: [Double] = []
        let board = ArrivalBoard()
        // The server's CPU to open the streams, and for each batch on its own: read just
        // before its requests are sent and again once every stream has read it, as N reads a
        // publish's. The whole run's (`serverCpuSeconds`) counts both and the pauses between.
        let probe = CPUProbe(processes: serverPid)
        var openingMs: Double?
        var roundCpu: [Double] = []
        try await Connection.with(host: host, port: port) { control in
            let channel = try await server.makeChannel(on: control, index: 0, hearsNews: false)
            let beforeOpening = probe?.read()
            let streams = try await openStreams(count: count, board: board, token: server.fanOutToken, server: server) { _ in channel }
            defer { for stream in streams { stream.close(promise: nil) } }
            openingMs = CPUProbe.milliseconds(from: beforeOpening, to: probe?.read())
            try await Task.sleep(for: .milliseconds(500))
            for round in 0..<rounds {
                let cpuAtStart = probe?.read()
                let sent = ArrivalBoard.now()
                for request in server.fanOut(channel, round: round) {
                    try await control.send(request)
                    _ = try await control.response()
                }
                let arrivals = await board.takeArrivals(count).map(\.nanoseconds)
                if let cpu = CPUProbe.milliseconds(from: cpuAtStart, to: probe?.read()) { roundCpu.append(cpu) }
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
        if roundCpu.count == rounds {
            result["serverCpuRoundMs"] = Self.median(roundCpu)
            result["serverCpuRoundMsEach"] = roundCpu
        }
        if let openingMs { result["serverCpuOpeningMs"] = openingMs }
        if let probe { result["serverCpuClock"] = probe.clock.rawValue }
    }

    /// Opens `count` watched streams, a few hundred at a time, and waits until all are live:
    /// until each has read `readyTokens[0]` (by default the server's sign of a live
    /// subscription), or `timeout` runs out. The later ready tokens are stages the caller
    /// waits for itself. Stream i connects to the i-th of the session targets (mod n), where
    /// its session lives, and arrives on the board in that target's group.
    func openStreams(
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
}
