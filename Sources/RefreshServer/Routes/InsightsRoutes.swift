import Foundation
import Hummingbird
import RefreshEngine
import RefreshFeed
import RefreshJSON

/// `GET /api/insights?since=&feed=`: how people pull this instance's lists, as
/// ``PullInsights`` counted them. Each instance answers for itself and says which it is; a
/// cluster's figures are the sum of its instances' (Prometheus sums `ptr_pulls_total`).
struct InsightsRoutes: Sendable {
    typealias Context = ServerRequestContext

    let insights: PullInsights
    let access: AccessControl
    /// The name the answer gives this instance: `--instance`, else the host's name.
    let instance: String

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let query = request.uri.queryParameters
        var since: Double?
        if let text = query["since"] {
            guard let time = Timestamp(rfc3339: String(text)) else {
                throw APIError.invalid("since", "must be an RFC 3339 time, such as 2026-11-22T08:00:00Z")
            }
            since = Double(time.milliseconds) / 1000
        }
        var requested: FeedPattern?
        if let text = query["feed"] {
            do {
                requested = try FeedPattern(String(text))
            } catch {
                throw APIError(.invalidFeed, "feed \(error.description).")
            }
        }
        let buckets = try access.insightsBuckets(of: insights.patterns, requested: requested, .init(request.headers), client: context.client)
        let report = insights.report(since: since, buckets: Set(buckets))
        return JSONResponse.make(.ok, request: request, headers: [.cacheControl: "no-store"]) { json in
            json.insights(report, instance: instance)
        }
    }
}

extension JSONWriter {
    mutating func insights(_ report: InsightsReport, instance: String) {
        beginObject()
        field("instance", instance)
        field("since", report.from.map { Self.time($0) })
        field("until", Self.time(report.until))
        key("feeds")
        beginArray()
        for pattern in report.patterns { value(pattern) }
        endArray()
        key("distanceBounds")
        numbers(PullTally.distanceBounds)
        key("durationBounds")
        numbers(PullTally.durationBounds)
        key("thresholds")
        beginObject()
        for preset in Preset.allCases {
            key(preset.rawValue)
            beginObject()
            for (name, edge) in [("top", preset.config.top), ("bottom", preset.config.bottom)] where edge.enabled {
                key(name)
                value(edge.threshold.points(viewportHeight: nil))
            }
            endObject()
        }
        endObject()
        key("fit")
        beginObject()
        field("share", RefreshConfig.Threshold.fitShare)
        field("min", RefreshConfig.Threshold.fitRange.lowerBound)
        field("max", RefreshConfig.Threshold.fitRange.upperBound)
        endObject()
        key("total")
        tally(report.total)
        for (name, tallies) in [("byFeed", report.byFeed), ("byPreset", report.byPreset), ("byInput", report.byInput), ("byBand", report.byBand)] {
            key(name)
            beginObject()
            for (name, counted) in tallies.sorted(by: { $0.key < $1.key }) {
                key(name)
                tally(counted)
            }
            endObject()
        }
        field("resolution", PullInsights.slotSeconds)
        key("series")
        beginArray()
        for (slot, counted) in report.series.sorted(by: { $0.key < $1.key }) {
            beginObject()
            field("at", Self.time(Double(slot * PullInsights.slotSeconds)))
            outcomes(counted)
            endObject()
        }
        endArray()
        endObject()
    }

    private mutating func tally(_ tally: PullTally) {
        beginObject()
        outcomes(tally)
        for (name, histogram, bounds) in [
            ("distance", tally.distance, PullTally.distanceBounds), ("duration", tally.duration, PullTally.durationBounds),
        ] {
            key(name)
            beginObject()
            key("counts")
            beginArray()
            for count in histogram.counts(bounds) { value(count) }
            endArray()
            field("sum", histogram.sum)
            endObject()
        }
        endObject()
    }

    private mutating func outcomes(_ tally: PullTally) {
        for outcome in PullOutcome.allCases {
            key(outcome.rawValue)
            value(tally[outcome])
        }
    }

    private mutating func numbers(_ numbers: [Double]) {
        beginArray()
        for number in numbers { value(number) }
        endArray()
    }

    private static func time(_ seconds: Double) -> String {
        Timestamp(milliseconds: Int64((seconds * 1000).rounded(.down))).rfc3339
    }
}
