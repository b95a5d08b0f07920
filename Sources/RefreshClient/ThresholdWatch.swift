import RefreshEngine

/// Which side of a threshold a position is on, as the server judges it from the session's
/// config: the sample that lands on the other side of one than the sample before it is the
/// one whose answer changes the label (or, with the `cross` trigger, starts the action), so
/// it is the one sample worth sending without waiting for its turn (``SampleQueue``, rule 5).
///
/// It decides only when a sample goes out: what the app shows is still the server's answer,
/// and a wrong guess here costs a request sent early, nothing else. The page's
/// `ThresholdWatch` (session.js) is the same rule, and the shared table of cases
/// (`Tests/fixtures/sample-queue-cases.json`) holds both to it.
struct ThresholdWatch {
    private enum Side { case under, top, bottom }

    /// Each edge's threshold while that edge is enabled; a `fit` one is measured against the
    /// viewport's last known height, as the engine measures it.
    private let top: RefreshConfig.Threshold?
    private let bottom: RefreshConfig.Threshold?
    private let firstSampleIsRest: Bool
    /// Where the list rests, once the first sample has said so.
    private var rest: Double?
    private var contentHeight: Double?
    private var viewportHeight: Double?
    private var side = Side.under

    /// Without a config (no session yet), no sample crosses anything.
    init(_ config: RefreshConfig?) {
        top = config.flatMap { $0.top.enabled ? $0.top.threshold : nil }
        bottom = config.flatMap { $0.bottom.enabled ? $0.bottom.threshold : nil }
        firstSampleIsRest = config?.baseline == .firstSample
    }

    /// Whether `sample` is past a threshold the sample before it was not past, or back under
    /// one it was past; every sample is noted, a release too.
    mutating func crosses(_ sample: Sample) -> Bool {
        // As the server does: with `firstSample`, the rest position is the first offset seen.
        let rest = self.rest ?? (firstSampleIsRest ? sample.y : 0)
        self.rest = rest
        contentHeight = sample.contentHeight ?? contentHeight
        viewportHeight = sample.viewportHeight ?? viewportHeight
        let offset = sample.y - rest
        var maxY = 0.0
        if let contentHeight, let viewportHeight { maxY = contentHeight - viewportHeight }
        var side = Side.under
        if let top, -offset >= top.points(viewportHeight: viewportHeight) {
            side = .top
        } else if let bottom, maxY > 0, offset - maxY >= bottom.points(viewportHeight: viewportHeight) {
            side = .bottom
        }
        defer { self.side = side }
        return side != self.side
    }
}
