/// Counts of pulls by outcome, with the distance at release and the time to release as
/// histograms, in fixed-size vectors: no heap storage, so a tally costs the same few hundred
/// bytes whatever it counts, and adding a pull allocates nothing.
struct PullTally: Sendable, Equatable {
    /// By ``PullOutcome``, in its order.
    private var outcomes = SIMD8<UInt32>()
    private(set) var distance = Histogram()
    private(set) var duration = Histogram()

    /// Points: around every preset's threshold (80, 120, 145) and the `fit` bounds (64, 148).
    static let distanceBounds: [Double] = [10, 20, 40, 64, 80, 100, 120, 148, 200, 300]
    /// Milliseconds from the first sample of a pull to its release.
    static let durationBounds: [Double] = [100, 250, 500, 750, 1000, 1500, 2000, 3000, 5000]

    /// Counts of values at most each bound, then of those above every bound; at most 15 bounds.
    struct Histogram: Sendable, Equatable {
        private var buckets = SIMD16<UInt32>()
        private(set) var sum = 0.0

        /// The counts, one more than `bounds`.
        func counts(_ bounds: [Double]) -> [Int] { (0...bounds.count).map { Int(buckets[$0]) } }

        var count: Int { Int(buckets.wrappedSum()) }

        mutating func add(_ value: Double, _ bounds: [Double]) {
            buckets[bounds.firstIndex { value <= $0 } ?? bounds.count] &+= 1
            sum += value
        }

        mutating func add(_ other: Histogram) {
            buckets &+= other.buckets
            sum += other.sum
        }
    }

    subscript(outcome: PullOutcome) -> Int {
        Int(outcomes[PullOutcome.allCases.firstIndex(of: outcome) ?? 0])
    }

    mutating func add(_ record: PullRecord) {
        for (index, outcome) in PullOutcome.allCases.enumerated() where outcome.counts(record) { outcomes[index] &+= 1 }
        if let released = record.releaseDistance { distance.add(released, Self.distanceBounds) }
        if let time = record.duration { duration.add(time, Self.durationBounds) }
    }

    mutating func add(_ other: PullTally) {
        outcomes &+= other.outcomes
        distance.add(other.distance)
        duration.add(other.duration)
    }
}
