import Metrics
import NIOCore
import Prometheus
import RefreshEngine
import RefreshFeed
import Synchronization

/// What the server counts and times, exposed at `GET /metrics` in Prometheus's text format.
///
/// **One registry per server.** Every server that ``RefreshApplication/build(configuration:feed:metrics:logger:onServerRunning:)``
/// makes has its own (tests start many in one process, an app may run two), so nothing here
/// goes through the process-wide `MetricsSystem.bootstrap`. The instruments are swift-metrics
/// types (`Counter`, `Meter`, `Timer`) whose handlers ``registry`` made with the help text
/// Prometheus shows; code outside the server adds its own through ``factory``, and they show
/// up in the same scrape.
///
/// **The sample path takes no lock here.** A swift-prometheus `Counter` is a relaxed atomic
/// add; the counters a sample moves are made once, up front, so counting costs no lookup.
/// Its latency goes to a ``LatencyHistogram`` of atomic buckets rather than a swift-prometheus
/// histogram, which takes a lock per observation. Sessions and open streams are read when
/// scraped rather than kept up to date on every change.
public final class ServerMetrics: Sendable {
    /// Every metric of this server; a scrape lists its families in no particular order.
    public let registry: PrometheusCollectorRegistry
    /// Makes swift-metrics instruments in ``registry``, for code outside the server.
    public let factory: PrometheusMetricsFactory

    // MARK: Requests

    private struct RequestKey: Hashable {
        var route: String
        var status: Int
    }

    private let requests: Mutex<[RequestKey: CoreMetrics.Counter]>
    /// The two answers on the gesture's path, counted without a lookup.
    private let samplesAnswered: CoreMetrics.Counter
    private let streamsOpened: CoreMetrics.Counter
    private let streamsShed: CoreMetrics.Counter

    // MARK: Sessions, samples, streams

    private let sessions: Meter
    private let feedsActive: Meter
    private let openStreams: Meter
    private let samplesApplied: CoreMetrics.Counter
    private let samplesIgnored: CoreMetrics.Counter
    private let sampleRefusals: [SampleRefusal: CoreMetrics.Counter]
    /// From a samples request's arrival to its `state` event written to a stream.
    let sampleWrite: LatencyHistogram

    // MARK: Events

    private let replayHits: CoreMetrics.Counter
    private let replayMisses: CoreMetrics.Counter
    private let resets: [ResetCause: CoreMetrics.Counter]
    private let coalesced: CoreMetrics.Counter
    private let changesSentCounter: CoreMetrics.Counter
    private let replayChanges: CoreMetrics.Counter
    private let itemChanges: [ItemChange: CoreMetrics.Counter]
    private let upstreamEdits: CoreMetrics.Counter
    private let newsFanOut: Metrics.Timer

    // MARK: Feed

    private let actions: [ActionKey: CoreMetrics.Counter]
    private let feedUpdates: [Outcome: CoreMetrics.Counter]
    private let feedUpdateDuration: Metrics.Timer
    private let upstreamFetches: [Outcome: CoreMetrics.Counter]
    private let upstreamFetchDuration: Metrics.Timer
    private let upstreamItemsSkipped: [ItemRules.SkipReason: CoreMetrics.Counter]
    private let upstreamFieldsCut: [ItemRules.Field: CoreMetrics.Counter]
    private let upstreamWarnings: [UpstreamWarning: CoreMetrics.Counter]
    private let storeErrors: [StoreOperation: CoreMetrics.Counter]
    private let notificationReconnects: CoreMetrics.Counter

    // MARK: Pulls

    private struct PullKey: Hashable {
        var outcome: PullOutcome
        var input: Sample.Input?
    }

    private let pulls: [PullKey: CoreMetrics.Counter]
    private let pullDistance: ValueHistogram

    // MARK: Access

    private let authRefusals: [AccessRefusal: CoreMetrics.Counter]

    public init() {
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        self.registry = registry
        self.factory = factory

        let counter = { (name: String, help: String, labels: [(String, String)]) in
            Self.counter(name, help, labels, registry: registry, factory: factory)
        }
        func gauge(_ name: String, _ help: String) -> Meter {
            let descriptor = MetricNameDescriptor(namespace: "ptr", metricName: name, unitName: "", helpText: help)
            return Meter(label: descriptor.name, dimensions: [], handler: registry.makeGauge(descriptor: descriptor), factory: factory)
        }
        func timer(_ name: String, _ help: String, buckets: [Duration]) -> Metrics.Timer {
            let descriptor = MetricNameDescriptor(namespace: "ptr", metricName: name, unitName: "seconds", helpText: help)
            let handler = registry.makeDurationHistogram(descriptor: descriptor, buckets: buckets)
            return Metrics.Timer(label: descriptor.name, dimensions: [], handler: handler, factory: factory)
        }

        /// A counter per key, the key's raw value under `label`.
        func counters<Key: Hashable & RawRepresentable<String>>(
            _ keys: some Sequence<Key>, _ name: String, _ help: String, by label: String
        ) -> [Key: CoreMetrics.Counter] {
            Dictionary(uniqueKeysWithValues: keys.map { ($0, counter(name, help, [(label, $0.rawValue)])) })
        }

        var pulls: [PullKey: CoreMetrics.Counter] = [:]
        for outcome in PullOutcome.allCases {
            for input in [nil] + Sample.Input.allCases.map(Optional.some) {
                pulls[PullKey(outcome: outcome, input: input)] = counter(
                    "pulls",
                    "Pulls by outcome (begun, armed, takenBack, refreshed, loadedMore, retriggered, short) and by what moved the list.",
                    [("outcome", outcome.rawValue), ("input", input?.rawValue ?? InsightsReport.unstatedInput)])
            }
        }
        self.pulls = pulls
        let distance = MetricNameDescriptor(
            namespace: "ptr", metricName: "pull_distance", unitName: "points", helpText: "How far pulls were pulled when they were released.")
        pullDistance = registry.makeValueHistogram(descriptor: distance, buckets: PullTally.distanceBounds)

        let samples = RequestKey(route: APIPattern.samples.description, status: 200)
        let events = RequestKey(route: APIPattern.events.description, status: 200)
        samplesAnswered = Self.requestCounter(samples, registry: registry, factory: factory)
        streamsOpened = Self.requestCounter(events, registry: registry, factory: factory)
        requests = Mutex([samples: samplesAnswered, events: streamsOpened])
        streamsShed = counter(
            "streams_shed", "Event streams told to come back later (200, retry:, closed) because the server or the client had too many.", [])

        sessions = gauge("sessions", "Live sessions.")
        feedsActive = gauge("feeds_active", "Feeds with at least one live session on this instance.")
        openStreams = gauge("open_streams", "Open event streams.")
        samplesApplied = counter("samples_applied", "Samples the gesture engine took.", [])
        samplesIgnored = counter("samples_ignored", "Samples ignored for an old seq (a retry or a reordered request).", [])
        sampleRefusals = counters(
            SampleRefusal.allCases, "sample_requests_refused", "Samples requests refused, by reason; a refused request changes nothing.", by: "reason"
        )
        sampleWrite = LatencyHistogram(
            name: "ptr_sample_write_seconds",
            help: "From a samples request's arrival to its state event written to the first stream of its session.",
            bounds: [
                .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
                .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                .milliseconds(100), .milliseconds(250), .seconds(1),
            ])

        replayHits = counter("replay_hits", "Reconnects with Last-Event-ID served from the replay buffer.", [])
        replayMisses = counter("replay_misses", "Reconnects with Last-Event-ID past the replay buffer, answered with reset.", [])
        resets = counters(
            ResetCause.allCases, "resets", "reset events sent, by cause: a stream's gap, or a refresh that replaced the list.", by: "cause")
        coalesced = counter("events_coalesced", "Superseded state and news events a stream never got: it was sent only the latest.", [])
        changesSentCounter = counter(
            "changes_sent", "Edits and removals of items sent to the pages that show them (a change counted once per page told).", [])
        replayChanges = counter(
            "replay_changes", "Reconnects past the replay buffer answered with what changed in the page's list instead of reset.", [])
        itemChanges = counters(
            ItemChange.allCases, "item_changes", "Items edited in place or removed through the API, by kind.", by: "kind")
        upstreamEdits = counter(
            "upstream_items_edited", "Stored items an upstream refresh edited in place: their entry's title, summary, link, author or date changed.",
            [])
        newsFanOut = timer(
            "news_fanout", "From the feed's head moving to the last event loop having written its streams' news.",
            buckets: [
                .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .microseconds(2_500_000), .seconds(5),
            ])

        actions = Dictionary(
            uniqueKeysWithValues: ActionKey.all.map { key in
                (
                    key,
                    counter(
                        "actions", "Refreshes and load-mores finished, by kind and outcome.",
                        [("kind", key.kind.rawValue), ("outcome", key.outcome.rawValue)])
                )
            })
        let slow: [Duration] = [
            .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .microseconds(2_500_000), .seconds(5), .seconds(10), .seconds(20), .seconds(30),
        ]
        feedUpdates = counters(
            Outcome.allCases, "feed_updates", "Feed updates from upstream (one shared by every refresh that joins it), by outcome.", by: "outcome")
        feedUpdateDuration = timer("feed_update_duration", "How long a feed update from upstream took.", buckets: slow)
        upstreamFetches = counters(
            Outcome.allCases, "upstream_fetches", "Fetches of one upstream feed (download, parse, store), by outcome.", by: "outcome")
        upstreamFetchDuration = timer("upstream_fetch_duration", "How long fetching one upstream feed took.", buckets: slow)
        upstreamItemsSkipped = counters(
            ItemRules.SkipReason.allCases, "upstream_items_skipped",
            "Upstream items left out, by reason: a NUL, an id or a link that breaks the item limits.", by: "reason")
        upstreamFieldsCut = counters(
            [ItemRules.Field.title, .summary, .author], "upstream_fields_cut", "Upstream item texts cut to their length limit, by field.", by: "field"
        )
        upstreamWarnings = counters(
            UpstreamWarning.allCases, "upstream_warnings",
            "Upstream feeds read leniently, by what they broke: a JSON Feed version that is not its URL, bytes that are not UTF-8.", by: "warning")
        storeErrors = counters(StoreOperation.allCases, "store_errors", "Failed reads and writes of the feed store.", by: "operation")
        notificationReconnects = counter(
            "notification_reconnects", "Times the PostgreSQL notification connection was lost and made again.", [])
        authRefusals = counters(
            AccessRefusal.allCases, "auth_refused", "Requests refused a feed for their token (401, 403), by reason; never by feed.", by: "reason")
    }

    private static func counter(
        _ name: String, _ help: String, _ labels: [(String, String)], registry: PrometheusCollectorRegistry, factory: PrometheusMetricsFactory
    ) -> CoreMetrics.Counter {
        let descriptor = MetricNameDescriptor(namespace: "ptr", metricName: name, unitName: "total", helpText: help)
        let handler = registry.makeCounter(descriptor: descriptor, labels: labels)
        return CoreMetrics.Counter(label: descriptor.name, dimensions: labels, handler: handler, factory: factory)
    }

    private static func requestCounter(
        _ key: RequestKey, registry: PrometheusCollectorRegistry, factory: PrometheusMetricsFactory
    ) -> CoreMetrics.Counter {
        counter(
            "http_requests", "Requests answered, by route pattern and status.", [("route", key.route), ("status", String(key.status))],
            registry: registry, factory: factory)
    }

    // MARK: - Requests

    /// A request answered, under its route's pattern (the route table's, or an ``APIPattern``).
    func requestAnswered(route: String, status: Int) {
        let key = RequestKey(route: route, status: status)
        let counter = requests.withLock { requests in
            if let counter = requests[key] { return counter }
            let counter = Self.requestCounter(key, registry: registry, factory: factory)
            requests[key] = counter
            return counter
        }
        counter.increment()
    }

    /// A samples request answered `200`.
    func sampleRequestAnswered() {
        samplesAnswered.increment()
    }

    /// A session's engine took `applied` samples and ignored `ignored` for an old `seq`.
    func samplesTaken(applied: Int, ignored: Int) {
        if applied > 0 { samplesApplied.increment(by: applied) }
        if ignored > 0 { samplesIgnored.increment(by: ignored) }
    }

    /// A samples request refused; `code` is the ``APIError``'s, `nil` for a failure of the server.
    func sampleRequestRefused(code: ErrorCode?) {
        sampleRefusals[SampleRefusal(code: code)]?.increment()
    }

    /// A samples request's state event reached a stream: `arrived` is when the request did.
    func sampleWritten(arrived: ContinuousClock.Instant, now: ContinuousClock.Instant = .now) {
        sampleWrite.record(now - arrived)
    }

    func streamOpened() {
        streamsOpened.increment()
    }

    /// A stream answered with "come back later" (it counts as a `200` answer too).
    func streamShed() {
        streamsShed.increment()
        streamsOpened.increment()
    }

    // MARK: - Events

    /// A stream reconnected with `Last-Event-ID`: `hit` when the replay buffer still held
    /// what it missed.
    func replayed(hit: Bool) {
        (hit ? replayHits : replayMisses).increment()
    }

    func resetSent(_ cause: ResetCause) {
        resets[cause]?.increment()
    }

    /// Changes sent to one page.
    func changesSent(_ count: Int) {
        changesSentCounter.increment(by: count)
    }

    /// A reconnect past the replay buffer answered with changes.
    func resumedByVersion() {
        replayChanges.increment()
    }

    /// An item edited or removed through the API.
    func itemChanged(_ kind: ItemChange) {
        itemChanges[kind]?.increment()
    }

    func upstreamWarned(_ warning: UpstreamWarning) {
        upstreamWarnings[warning]?.increment()
    }

    func upstreamEdited(_ count: Int) {
        upstreamEdits.increment(by: count)
    }

    /// Superseded events a stream skipped.
    func eventsCoalesced(_ count: Int) {
        coalesced.increment(by: count)
    }

    func newsFannedOut(in duration: Duration) {
        newsFanOut.record(duration: duration)
    }

    // MARK: - Feed

    func actionFinished(_ kind: ActionKey.Kind, _ outcome: Outcome) {
        actions[ActionKey(kind: kind, outcome: outcome)]?.increment()
    }

    func feedUpdated(_ outcome: Outcome, in duration: Duration) {
        feedUpdates[outcome]?.increment()
        feedUpdateDuration.record(duration: duration)
    }

    func upstreamFetched(_ outcome: Outcome, in duration: Duration) {
        upstreamFetches[outcome]?.increment()
        upstreamFetchDuration.record(duration: duration)
    }

    /// An upstream item left out because it breaks ``ItemRules``.
    func upstreamItemSkipped(_ reason: ItemRules.SkipReason) {
        upstreamItemsSkipped[reason]?.increment()
    }

    /// An upstream item's text cut to its field's length.
    func upstreamFieldCut(_ field: ItemRules.Field) {
        upstreamFieldsCut[field]?.increment()
    }

    func storeFailed(_ operation: StoreOperation) {
        storeErrors[operation]?.increment()
    }

    /// The PostgreSQL notification connection (`LISTEN`) was lost and is up again; call it
    /// on each reconnection, not on the first connection. A rising count means the instance
    /// keeps losing its connection to the database; its news then arrive by the slow poll.
    public func notificationReconnected() {
        notificationReconnects.increment()
    }

    /// A request was refused a feed for its token, or for the lack of one.
    /// A pull ended: counted under each outcome it had.
    func pulled(_ pull: PullRecord) {
        for outcome in PullOutcome.allCases where outcome.counts(pull) {
            pulls[PullKey(outcome: outcome, input: pull.input)]?.increment()
        }
        if let distance = pull.releaseDistance { pullDistance.record(distance) }
    }

    func authRefused(_ reason: AccessRefusal) {
        authRefusals[reason]?.increment()
    }

    // MARK: - Scrape

    /// The text exposition (format 0.0.4), with the gauges read now.
    func exposition(sessions: Int, openStreams: Int, feedsActive: Int) -> ByteBuffer {
        self.sessions.set(sessions)
        self.feedsActive.set(feedsActive)
        self.openStreams.set(openStreams)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16 * 1024)
        registry.emit(into: &bytes)
        // The registry has no place for a collector of another kind: the lock-free histogram
        // follows its families.
        sampleWrite.emit(into: &bytes)
        return ByteBuffer(bytes: bytes)
    }

    // MARK: - Labels

    /// Why a samples request was refused: a bounded set, whatever the error's message.
    enum SampleRefusal: String, CaseIterable, Sendable {
        case rateLimited = "rate_limited"
        case tooManySamples = "too_many_samples"
        case outOfRange = "out_of_range"
        case badInput = "bad_input"
        case unknownSession = "unknown_session"
        case tooLarge = "too_large"
        case other

        init(code: ErrorCode?) {
            switch code {
            case .rateLimited: self = .rateLimited
            case .tooManySamples: self = .tooManySamples
            case .outOfRange: self = .outOfRange
            case .sessionNotFound: self = .unknownSession
            case .bodyTooLarge: self = .tooLarge
            case .malformedJSON, .invalidType, .missingField, .invalidValue: self = .badInput
            default: self = .other
            }
        }
    }

    enum ItemChange: String, CaseIterable, Sendable {
        case edit, remove
    }

    enum ResetCause: String, CaseIterable, Sendable {
        /// A stream asked for events the replay buffer no longer has.
        case gap
        /// A refresh brought more new items than it sends: the page's list starts over.
        case listReplaced = "list_replaced"
    }

    enum Outcome: String, CaseIterable, Sendable {
        case completed, failed, cancelled
    }

    struct ActionKey: Hashable, Sendable {
        enum Kind: String, CaseIterable, Sendable {
            case refresh
            case loadMore
        }

        var kind: Kind
        var outcome: ServerMetrics.Outcome

        static var all: [ActionKey] {
            Kind.allCases.flatMap { kind in ServerMetrics.Outcome.allCases.map { ActionKey(kind: kind, outcome: $0) } }
        }
    }

    enum StoreOperation: String, CaseIterable, Sendable {
        case read, write
    }
}
