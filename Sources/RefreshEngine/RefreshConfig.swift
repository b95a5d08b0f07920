/// How a session's gestures behave: thresholds, trigger modes, held indicators and the
/// rubber band the page applies. Every number is in CSS pixels (points).
///
/// Start from a ``Preset`` and adjust with ``Overrides``; ``validate()`` rejects any
/// combination a finger could never satisfy or a page could not draw.
public struct RefreshConfig: Sendable, Equatable, Codable {
    /// When an armed edge starts its action.
    public enum TriggerMode: String, Sendable, Codable, CaseIterable {
        /// Web convention: armed past the threshold, the action starts when the finger lifts there.
        case release
        /// iOS convention: the action starts the moment the pull crosses the threshold.
        case cross
    }

    /// Where the list rests, against which pulls are measured.
    /// How the page hears of items the feed gained after what it shows. The engine does not
    /// use it; the server that owns the engine does.
    public enum NewsMode: String, Sendable, Codable, CaseIterable {
        /// A `news` event: the page offers "N new items", and a refresh brings them.
        case badge
        /// While the list rests at the top, the new items are prepended at once; otherwise
        /// as `badge`.
        case live
        /// Nothing until the page refreshes.
        case off
    }

    public enum Baseline: String, Sendable, Codable, CaseIterable {
        /// `y == 0` is the rest position (UIKit's `contentOffset.y`).
        case zero
        /// The first sample's offset is the rest position (`initialOffset` of the ios15 seed,
        /// for scroll views whose rest offset is shifted by bars or insets).
        case firstSample
    }

    /// Text the page shows next to the indicator, decided here so every client says the same.
    public struct Labels: Sendable, Equatable, Codable {
        /// Shown while pulling under the threshold.
        public var pull: String
        /// Shown while armed (release mode only: cross mode starts instead).
        public var release: String
        /// Shown while the action runs.
        public var active: String

        public init(pull: String, release: String, active: String) {
            self.pull = pull
            self.release = release
            self.active = active
        }
    }

    /// One edge of the list: the top refreshes, the bottom loads more.
    public struct Edge: Sendable, Equatable, Codable {
        /// A disabled edge never arms and reports no pull.
        public var enabled: Bool
        /// Pull distance at which the edge arms or triggers.
        public var threshold: Threshold
        public var trigger: TriggerMode
        /// How far the list stays pushed away from the edge while the action runs, so the
        /// spinner remains visible after the finger lifts.
        public var heldOffset: Double
        /// Height of the indicator; `reveal` is measured against it.
        public var indicatorHeight: Double
        public var labels: Labels

        public init(
            enabled: Bool, threshold: Threshold, trigger: TriggerMode, heldOffset: Double,
            indicatorHeight: Double = 50, labels: Labels
        ) {
            self.enabled = enabled
            self.threshold = threshold
            self.trigger = trigger
            self.heldOffset = heldOffset
            self.indicatorHeight = indicatorHeight
            self.labels = labels
        }
    }

    /// The resistance curve the page applies to finger travel `x` before posting the offset:
    /// `d = (1 − 1 / (x · coefficient / maxPull + 1)) · maxPull` (UIKit's rubber band with
    /// `maxPull` as its dimension), so `d` approaches but never reaches `maxPull`.
    public struct RubberBand: Sendable, Equatable, Codable {
        public var coefficient: Double
        public var maxPull: Double

        public init(coefficient: Double = 1, maxPull: Double = 400) {
            self.coefficient = coefficient
            self.maxPull = maxPull
        }

        /// The displayed pull for `travel` points of finger movement.
        public func displayed(travel: Double) -> Double {
            guard travel > 0 else { return 0 }
            return (1 - 1 / (travel * coefficient / maxPull + 1)) * maxPull
        }
    }

    public var top: Edge
    public var bottom: Edge
    /// Turn the arrow from 0° at 60 % of the threshold to 180° at the threshold.
    public var rotation: Bool
    /// Infinite scroll: load more before the user reaches the end of the list.
    public var prefetch: Bool
    /// How close the content's bottom must come to the viewport's bottom to prefetch.
    public var prefetchDistance: Double
    public var baseline: Baseline
    public var rubberBand: RubberBand
    public var news: NewsMode

    public init(
        top: Edge, bottom: Edge, rotation: Bool, prefetch: Bool, prefetchDistance: Double = 300,
        baseline: Baseline = .zero, rubberBand: RubberBand = RubberBand(), news: NewsMode = .badge
    ) {
        self.news = news
        self.top = top
        self.bottom = bottom
        self.rotation = rotation
        self.prefetch = prefetch
        self.prefetchDistance = prefetchDistance
        self.baseline = baseline
        self.rubberBand = rubberBand
    }
}

extension RefreshConfig {
    private enum CodingKeys: String, CodingKey {
        case top, bottom, rotation, prefetch, prefetchDistance, baseline, rubberBand, news
    }

    /// `news` came later than the other fields: a configuration stored before it decodes
    /// with the default, `badge`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            top: try container.decode(Edge.self, forKey: .top),
            bottom: try container.decode(Edge.self, forKey: .bottom),
            rotation: try container.decode(Bool.self, forKey: .rotation),
            prefetch: try container.decode(Bool.self, forKey: .prefetch),
            prefetchDistance: try container.decode(Double.self, forKey: .prefetchDistance),
            baseline: try container.decode(Baseline.self, forKey: .baseline),
            rubberBand: try container.decode(RubberBand.self, forKey: .rubberBand),
            news: try container.decodeIfPresent(NewsMode.self, forKey: .news) ?? .badge)
    }
}

extension RefreshConfig.Labels {
    public static let top = Self(pull: "Pull to refresh", release: "Release to refresh", active: "Refreshing…")
    public static let bottom = Self(pull: "Pull up to load more", release: "Release to load more", active: "Loading…")
}

/// A configuration that cannot work, with the field at fault and why.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Dotted path of the field, as in the JSON form: `top.heldOffset`.
    public var field: String
    public var reason: String

    public var description: String { "\(field) \(reason)" }
}

extension RefreshConfig {
    /// Limits beyond which a number is a mistake rather than a design choice.
    static let largestLength = 100_000.0
    static let longestLabel = 200

    /// Throws the first problem found, so an API can answer with one clear reason.
    public func validate() throws(ConfigError) {
        try Self.check(rubberBand.maxPull, "rubberBand.maxPull", above: 0, upTo: Self.largestLength)
        try Self.check(rubberBand.coefficient, "rubberBand.coefficient", above: 0, upTo: 100)
        try Self.check(prefetchDistance, "prefetchDistance", atLeast: 0, upTo: Self.largestLength)
        for (name, edge) in [("top", top), ("bottom", bottom)] {
            let limit = rubberBand.maxPull
            // A threshold divides the pull and the arrow's turn: below a point, a finger's
            // smallest move is a full pull, and a subnormal one turns the arrow by NaN.
            if case .points(let points) = edge.threshold {
                try Self.check(points, "\(name).threshold", atLeast: 1, upTo: Self.largestLength)
            }
            try Self.check(edge.heldOffset, "\(name).heldOffset", above: 0, upTo: Self.largestLength)
            try Self.check(edge.indicatorHeight, "\(name).indicatorHeight", above: 0, upTo: Self.largestLength)
            guard edge.threshold.largest < limit else {
                throw ConfigError(
                    field: "\(name).threshold",
                    reason: "must be below rubberBand.maxPull (\(Self.format(limit))): a pull could never reach it")
            }
            guard edge.heldOffset <= limit else {
                throw ConfigError(
                    field: "\(name).heldOffset",
                    reason: "must not exceed rubberBand.maxPull (\(Self.format(limit))): the list cannot be held further than it can be pulled")
            }
            // Counted in Unicode scalars, not characters: one character can carry any number
            // of combining marks, and every state event and sample answer carries the label.
            for (labelName, label) in [("pull", edge.labels.pull), ("release", edge.labels.release), ("active", edge.labels.active)]
            where label.unicodeScalars.count > Self.longestLabel {
                throw ConfigError(
                    field: "\(name).labels.\(labelName)", reason: "must be at most \(Self.longestLabel) characters (Unicode code points)")
            }
        }
    }

    private static func check(_ value: Double, _ field: String, above low: Double, upTo high: Double) throws(ConfigError) {
        guard value.isFinite, value > low, value <= high else {
            throw ConfigError(field: field, reason: "must be a finite number greater than \(format(low)) and at most \(format(high))")
        }
    }

    private static func check(_ value: Double, _ field: String, atLeast low: Double, upTo high: Double) throws(ConfigError) {
        guard value.isFinite, value >= low, value <= high else {
            throw ConfigError(field: field, reason: "must be a finite number from \(format(low)) to \(format(high))")
        }
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
