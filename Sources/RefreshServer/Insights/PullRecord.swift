import RefreshEngine

/// What one pull came to, as a session's ``PullTracker`` saw it end: the figures insights
/// aggregate, and nothing that names the person, the session or the feed.
struct PullRecord: Sendable, Equatable {
    /// What moved the list, when the page or the client said.
    var input: Sample.Input?
    var band: ViewportBand
    /// Whether it went past the threshold (release mode's `armed`, or a crossing that started the action).
    var armed: Bool
    /// The action it started, if any.
    var trigger: ActionKind?
    /// It started an action within ``PullTracker/retriggerWindow`` of the one before: the
    /// first one likely did not seem to work.
    var retriggered: Bool
    /// How far it was pulled, at most.
    var farthest: Double
    /// The distance when the finger (button, wheel) let go; `nil` when it came back to rest
    /// without a release.
    var releaseDistance: Double?
    /// Milliseconds on the page's clock from its first sample to its release.
    var duration: Double?

    /// Pulls shorter than this many points are taken as accidental.
    static let shortestIntended = 10.0

    /// Armed, then taken back under the threshold before the release: no action.
    var takenBack: Bool { armed && trigger == nil }
    var short: Bool { farthest < Self.shortestIntended }
}

/// What pulls are counted as, for the metrics' `outcome` label and the API's fields.
enum PullOutcome: String, CaseIterable, Sendable {
    case begun
    case armed
    case takenBack
    case refreshed
    case loadedMore
    case retriggered
    case short

    /// Whether `record` counts under this outcome.
    func counts(_ record: PullRecord) -> Bool {
        switch self {
        case .begun: true
        case .armed: record.armed
        case .takenBack: record.takenBack
        case .refreshed: record.trigger == .refresh
        case .loadedMore: record.trigger == .loadMore
        case .retriggered: record.retriggered
        case .short: record.short
        }
    }
}

/// Screen heights, in bands wide enough that no band names a device, and few enough to keep
/// every counter fixed in size.
enum ViewportBand: String, CaseIterable, Sendable {
    case unknown
    /// Phones in landscape, small phones.
    case under600 = "0-599"
    /// Most phones in portrait.
    case from600 = "600-899"
    /// Tall phones, laptops, tablets in landscape.
    case from900 = "900-1199"
    /// Desktops, tablets in portrait.
    case from1200 = "1200+"

    init(viewportHeight: Double?) {
        guard let height = viewportHeight else {
            self = .unknown
            return
        }
        switch height {
        case ..<600: self = .under600
        case ..<900: self = .from600
        case ..<1200: self = .from900
        default: self = .from1200
        }
    }
}
