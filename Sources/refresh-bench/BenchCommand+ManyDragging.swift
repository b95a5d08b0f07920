import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// L2: many sessions, each posting samples at 60 Hz, each read on its own stream.
extension BenchCommand {
    func manyDragging(_ server: any Target, into result: inout Figures) async throws {
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
}
