import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// What news and publish-rate share: work spread over connections, deadlines, histograms of
/// several sets, medians.
extension BenchCommand {
    /// One histogram of microseconds over several sets of them.
    static func histogram(_ sets: [ArraySlice<UInt64>]) -> Histogram<UInt64> {
        var histogram = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        for set in sets { for value in set { _ = histogram.record(value) } }
        return histogram
    }

    /// Runs `each` for indexes 0..<count over about `lanes` connections at once; index i goes
    /// to the i-th of `targets` (mod n), each of them with its share of the lanes, each lane
    /// taking its target's indexes in turn. Answers the results in index order.
    static func overConnections<Value: Sendable>(
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
}
