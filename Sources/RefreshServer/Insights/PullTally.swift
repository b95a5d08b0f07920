/// Counts of pulls by outcome, with the distance at release and the time to release as
/// histograms: fixed in size whatever it counts, so adding a pull allocates nothing.
struct PullTally: Sendable, Equatable {
    /// By ``PullOutcome``, in its order.
    private(set) var outcomes = [Int](repeating: 0, count: PullOutcome.allCases.count)
    private(set) var distance = Histogram(bounds: Self.distanceBounds)
    private(set) var duration = Histogram(bounds: Self.durationBounds)

    /// Points: around every preset's threshold (80, 120, 145) and the `fit` bounds (64, 148).
    static let distanceBounds: [Double] = [10, 20, 40, 64, 80, 100, 120, 148, 200, 300]
    /// Milliseconds from the first sample of a pull to its release.
    static let durationBounds: [Double] = [100, 250, 500, 750, 1000, 1500, 2000, 3000, 5000]

    /// Counts of values at most each bound, the last of those above every bound.
    struct Histogram: Sendable, Equatable {
        let bounds: [Double]
        private(set) var counts: [Int]
        private(set) var sum = 0.0

        init(bounds: [Double]) {
            self.bounds = bounds
            counts = [Int](repeating: 0, count: bounds.count + 1)
        }

        var count: Int { counts.reduce(0, +) }

        mutating func add(_ value: Double) {
            counts[bounds.firstIndex { value <= $0 } ?? bounds.count] += 1
            sum += value
        }

        mutating func add(_ other: Histogram) {
            for index in counts.indices { counts[index] += other.counts[index] }
            sum += other.sum
        }
    }

    subscript(outcome: PullOutcome) -> Int {
        outcomes[PullOutcome.allCases.firstIndex(of: outcome) ?? 0]
    }

    mutating func add(_ record: PullRecord) {
        for (index, outcome) in PullOutcome.allCases.enumerated() where outcome.counts(record) { outcomes[index] += 1 }
        if let released = record.releaseDistance { distance.add(released) }
        if let time = record.duration { duration.add(time) }
    }

    mutating func add(_ other: PullTally) {
        for index in outcomes.indices { outcomes[index] += other.outcomes[index] }
        distance.add(other.distance)
        duration.add(other.duration)
    }
}
