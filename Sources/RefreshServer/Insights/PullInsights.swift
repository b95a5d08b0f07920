import Foundation
import RefreshEngine
import RefreshFeed
import Synchronization

/// The pulls of this instance's sessions, counted by feed pattern, preset, input and screen
/// band, minute by minute for a day: what `GET /api/insights` answers from.
///
/// Nothing here names a person, a session or a feed: a pull is counted into its
/// ``PullKey`` and forgotten. Feeds are counted under the first configured pattern
/// (`--insights-feed`) that names them, else under `*`, so the set of keys stays bounded
/// however many feeds there are.
///
/// A session writes here once per pull, not per sample, into one of a few shards picked when
/// the session is made, so that pulls on the two event loops seldom meet on one lock; a
/// read merges the shards.
final class PullInsights: Sendable {
    /// What pulls are counted under.
    struct PullKey: Hashable, Sendable {
        /// Index in ``patterns``.
        var bucket: Int
        var preset: Preset
        var input: Sample.Input?
        var band: ViewportBand
    }

    /// Where one session's pulls go: fixed for its life.
    struct Scope: Sendable, Equatable {
        var bucket: Int
        var preset: Preset
        var shard: Int
    }

    /// The patterns pulls are counted under, in the order they are tried; the last is `*`.
    let patterns: [FeedPattern]
    /// How long pulls are kept, in minutes.
    static let retainedMinutes = 24 * 60
    private static let shardCount = 4

    private final class Shard: Sendable {
        let minutes = Mutex<[Int: [PullKey: PullTally]]>([:])
    }

    private let shards: [Shard]
    private let nextShard = Atomic<Int>(0)
    /// Seconds since 1970, read when a pull ends and when the figures are read.
    private let clock: @Sendable () -> Double

    init(patterns configured: [FeedPattern], clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        let all = FeedPattern.all
        patterns = configured.contains(all) ? configured : configured + [all]
        shards = (0..<Self.shardCount).map { _ in Shard() }
        self.clock = clock
    }

    /// What a session tells its pulls to: these insights, in its scope.
    struct Recorder: Sendable {
        let insights: PullInsights
        let scope: Scope

        func record(_ pull: PullRecord) { insights.record(pull, in: scope) }
    }

    /// Where the pulls of a new session of `feed` with `preset` go.
    func recorder(feed: FeedName, preset: Preset) -> Recorder {
        let bucket = patterns.firstIndex { $0.matches(feed) } ?? patterns.count - 1
        let shard = nextShard.wrappingAdd(1, ordering: .relaxed).oldValue % Self.shardCount
        return Recorder(insights: self, scope: Scope(bucket: bucket, preset: preset, shard: shard))
    }

    func record(_ record: PullRecord, in scope: Scope) {
        let minute = Int(clock() / 60)
        let key = PullKey(bucket: scope.bucket, preset: scope.preset, input: record.input, band: record.band)
        shards[scope.shard].minutes.withLock { minutes in
            if minutes[minute] == nil {
                let oldest = minute - Self.retainedMinutes
                for stale in minutes.keys where stale < oldest { minutes[stale] = nil }
            }
            minutes[minute, default: [:]][key, default: PullTally()].add(record)
        }
    }

    /// How many tallies are kept in all: what insights cost in memory, bounded by the keys
    /// and the minutes, never by how many people pull.
    var storedTallies: Int {
        shards.reduce(0) { sum, shard in sum + shard.minutes.withLock { $0.values.reduce(0) { $0 + $1.count } } }
    }

    /// The figures since `since` (seconds since 1970; the whole day kept when `nil`), of the
    /// buckets in `buckets`.
    func report(since: Double?, buckets: Set<Int>) -> InsightsReport {
        let now = clock()
        let first = since.map { Int(($0 / 60).rounded(.down)) } ?? Int.min
        var report = InsightsReport(patterns: buckets.sorted().map { patterns[$0].description }, from: since, until: now)
        for shard in shards {
            let minutes = shard.minutes.withLock { $0 }
            for (minute, tallies) in minutes where minute >= first {
                for (key, tally) in tallies where buckets.contains(key.bucket) {
                    report.add(tally, key: key, minute: minute, pattern: patterns[key.bucket].description)
                }
            }
        }
        return report
    }
}

/// The merged figures `GET /api/insights` answers with.
struct InsightsReport: Sendable, Equatable {
    var patterns: [String]
    /// Seconds since 1970.
    var from: Double?
    var until: Double
    var total = PullTally()
    var byFeed: [String: PullTally] = [:]
    var byPreset: [String: PullTally] = [:]
    var byInput: [String: PullTally] = [:]
    var byBand: [String: PullTally] = [:]
    /// By minute (since 1970).
    var series: [Int: PullTally] = [:]

    init(patterns: [String], from: Double?, until: Double) {
        self.patterns = patterns
        self.from = from
        self.until = until
    }

    /// The name a pull of no stated input is counted under.
    static let unstatedInput = "unknown"

    mutating func add(_ tally: PullTally, key: PullInsights.PullKey, minute: Int, pattern: String) {
        total.add(tally)
        byFeed[pattern, default: PullTally()].add(tally)
        byPreset[key.preset.rawValue, default: PullTally()].add(tally)
        byInput[key.input?.rawValue ?? Self.unstatedInput, default: PullTally()].add(tally)
        byBand[key.band.rawValue, default: PullTally()].add(tally)
        series[minute, default: PullTally()].add(tally)
    }
}
