import Synchronization

/// A Prometheus histogram of durations that records without a lock: one relaxed atomic add
/// to the bucket the value falls in and one to the sum. swift-prometheus's `Histogram` takes a
/// lock per observation and adds to every bucket above the value; this one records on every
/// sample, from every event loop at once, so it keeps one count per bucket and makes them
/// cumulative only when scraped.
///
/// A scrape reads the buckets one by one while observations go on: a bucket and the sum may
/// be one observation apart, as with any lock-free exporter, but `_count` always equals the
/// `+Inf` bucket, and no count ever goes back.
final class LatencyHistogram: Sendable {
    let name: String
    let help: String
    /// Upper bounds in nanoseconds, ascending.
    private let bounds: [Int64]
    /// The bounds as the exposition writes them, in seconds.
    private let renderedBounds: [String]
    /// Observations per bucket, not cumulative; the last holds those above every bound.
    private let counts: [Slot]
    private let sumNanoseconds = Atomic<Int64>(0)

    private final class Slot: Sendable {
        let value = Atomic<Int>(0)
    }

    init(name: String, help: String, bounds: [Duration]) {
        self.name = name
        self.help = help
        let sorted = bounds.sorted()
        self.bounds = sorted.map(\.totalNanoseconds)
        renderedBounds = sorted.map { String(Double($0.totalNanoseconds) / 1e9) }
        counts = (0...sorted.count).map { _ in Slot() }
    }

    func record(_ duration: Duration) {
        let nanoseconds = max(0, duration.totalNanoseconds)
        var index = 0
        while index < bounds.count, nanoseconds > bounds[index] { index += 1 }
        counts[index].value.add(1, ordering: .relaxed)
        sumNanoseconds.add(nanoseconds, ordering: .relaxed)
    }

    /// How many durations were recorded.
    var count: Int { counts.reduce(0) { $0 + $1.value.load(ordering: .relaxed) } }

    /// The family in the text exposition format: `# HELP`, `# TYPE`, the cumulative buckets,
    /// `_sum` in seconds and `_count`.
    func emit(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "# HELP \(name) \(help)\n# TYPE \(name) histogram\n".utf8)
        var cumulative = 0
        for (index, slot) in counts.enumerated() {
            cumulative += slot.value.load(ordering: .relaxed)
            let bound = index < renderedBounds.count ? renderedBounds[index] : "+Inf"
            buffer.append(contentsOf: "\(name)_bucket{le=\"\(bound)\"} \(cumulative)\n".utf8)
        }
        let sum = Double(sumNanoseconds.load(ordering: .relaxed)) / 1e9
        buffer.append(contentsOf: "\(name)_sum \(sum)\n\(name)_count \(cumulative)\n".utf8)
    }
}

extension Duration {
    /// The whole nanoseconds, saturating far beyond any latency measured here.
    var totalNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
