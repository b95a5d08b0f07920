import Foundation
import RefreshEngine
import RefreshFeed
import Synchronization

/// The pulls of this instance's sessions, counted by feed pattern, preset, input and screen
/// band, five minutes at a time for a day: what `GET /api/insights` answers from.
///
/// Nothing here names a person, a session or a feed: a pull is counted into its
/// ``PullKey`` and forgotten. Feeds are counted under the first configured pattern
/// (`--insights-feed`) that names them, else under `*`, so the set of keys stays bounded
/// however many feeds there are.
///
/// A session writes here once per pull, not per sample, into one of two shards dealt in
/// turn as sessions are made, so that two pulls ending at once on two event loops meet on
/// one lock half as often; a read merges the shards.
///
/// What is kept is bounded by the keys, not by the pulls: at most every key (patterns × 4
/// presets × 6 inputs × 5 bands) in every slot of every shard, a fixed-size ``PullTally``
/// each: 69,120 tallies of 192 bytes a pattern (under 40 MB with the tables around them)
/// however the keys are made to vary, and a few kilobytes for what people really do.
final class PullInsights: Sendable {
    /// What pulls are counted under.
    struct PullKey: Hashable, Sendable {
        /// Index in ``patterns``.
        var bucket: Int
        /// `nil`: the session's own configuration, not a preset's as it is.
        var preset: Preset?
        var input: Sample.Input?
        var band: ViewportBand
    }

    /// Where one session's pulls go: fixed for its life.
    struct Scope: Sendable, Equatable {
        var bucket: Int
        var preset: Preset?
        var shard: Int
    }

    /// The patterns pulls are counted under, in the order they are tried; the last is `*`.
    let patterns: [FeedPattern]
    /// The span counted together, in seconds: the resolution of `since` and of the series.
    static let slotSeconds = 300
    /// How long pulls are kept, in slots: a day.
    static let retainedSlots = 24 * 3600 / slotSeconds
    private static let shardCount = 2

    private final class Shard: Sendable {
        /// By slot (seconds since 1970 divided by ``slotSeconds``).
        let slots = Mutex<[Int: [PullKey: PullTally]]>([:])
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

    /// Where the pulls of a new session of `feed` with `preset` go (`nil`: a configuration of
    /// its own, whose pulls are not any preset's to judge).
    func recorder(feed: FeedName, preset: Preset?) -> Recorder {
        let bucket = patterns.firstIndex { $0.matches(feed) } ?? patterns.count - 1
        let shard = Int(UInt(bitPattern: nextShard.wrappingAdd(1, ordering: .relaxed).oldValue) % UInt(Self.shardCount))
        return Recorder(insights: self, scope: Scope(bucket: bucket, preset: preset, shard: shard))
    }

    func record(_ record: PullRecord, in scope: Scope) {
        let slot = Int(clock()) / Self.slotSeconds
        let key = PullKey(bucket: scope.bucket, preset: scope.preset, input: record.input, band: record.band)
        shards[scope.shard].slots.withLock { slots in
            if slots[slot] == nil {
                let oldest = slot - Self.retainedSlots
                for stale in slots.keys where stale < oldest { slots[stale] = nil }
            }
            slots[slot, default: [:]][key, default: PullTally()].add(record)
        }
    }

    /// How many tallies are kept in all: what insights cost in memory, bounded by the keys
    /// and the slots, never by how many people pull.
    var storedTallies: Int {
        shards.reduce(0) { sum, shard in sum + shard.slots.withLock { $0.values.reduce(0) { $0 + $1.count } } }
    }

    /// The figures of the slots from the one `since` falls in (seconds since 1970; the whole
    /// day kept when `nil`), of the buckets in `buckets`.
    func report(since: Double?, buckets: Set<Int>) -> InsightsReport {
        let now = clock()
        // The day kept ends now: a slot older is not answered though no pull has come since to
        // clear it, nor one ahead of a clock that was set back.
        let current = Int(now) / Self.slotSeconds
        let kept = (current - Self.retainedSlots)...current
        let first = max(kept.lowerBound, since.map { Int(($0 / Double(Self.slotSeconds)).rounded(.down)) } ?? Int.min)
        // A prefix pattern's name is made when asked for: once per pattern, not per tally.
        let names = patterns.map(\.description)
        var report = InsightsReport(patterns: buckets.sorted().map { names[$0] }, from: since, until: now)
        for shard in shards {
            let slots = shard.slots.withLock { $0 }
            for (slot, tallies) in slots where slot >= first && slot <= kept.upperBound {
                for (key, tally) in tallies where buckets.contains(key.bucket) {
                    report.add(tally, key: key, slot: slot, pattern: names[key.bucket])
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
    /// By slot (seconds since 1970 divided by ``PullInsights/slotSeconds``).
    var series: [Int: PullTally] = [:]

    init(patterns: [String], from: Double?, until: Double) {
        self.patterns = patterns
        self.from = from
        self.until = until
    }

    /// The name the pulls of sessions with a configuration of their own are counted under.
    static let customPreset = "custom"

    /// The name a pull of no stated input is counted under.
    static let unstatedInput = "unknown"

    mutating func add(_ tally: PullTally, key: PullInsights.PullKey, slot: Int, pattern: String) {
        total.add(tally)
        byFeed[pattern, default: PullTally()].add(tally)
        byPreset[key.preset?.rawValue ?? Self.customPreset, default: PullTally()].add(tally)
        byInput[key.input?.rawValue ?? Self.unstatedInput, default: PullTally()].add(tally)
        byBand[key.band.rawValue, default: PullTally()].add(tally)
        series[slot, default: PullTally()].add(tally)
    }
}
