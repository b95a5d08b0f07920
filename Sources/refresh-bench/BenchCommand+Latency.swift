import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// L1: one session, a sample posted and its `state` event read, one at a time.
extension BenchCommand {
    func latency(_ server: any Target, into result: inout Figures) async throws {
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
    static func settle(_ server: any Target, channel: String, control: Connection, stream: Connection) async throws {
        try await stream.read(until: server.subscribedToken)
        try await control.send(server.publish(channel, seq: 0))
        _ = try await control.response()
        try await stream.read(until: server.token(seq: 0))
    }
}
