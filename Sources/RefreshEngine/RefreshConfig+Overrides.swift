extension RefreshConfig {
    /// A partial configuration: every field present replaces the preset's, every absent one
    /// keeps it. This is the `config` object of `POST /api/sessions`.
    public struct Overrides: Sendable, Equatable, Codable {
        public struct Labels: Sendable, Equatable, Codable {
            public var pull: String?
            public var release: String?
            public var active: String?

            public init(pull: String? = nil, release: String? = nil, active: String? = nil) {
                self.pull = pull
                self.release = release
                self.active = active
            }
        }

        public struct Edge: Sendable, Equatable, Codable {
            public var enabled: Bool?
            public var threshold: Threshold?
            public var trigger: TriggerMode?
            public var heldOffset: Double?
            public var indicatorHeight: Double?
            public var labels: Labels?

            public init(
                enabled: Bool? = nil, threshold: Threshold? = nil, trigger: TriggerMode? = nil,
                heldOffset: Double? = nil, indicatorHeight: Double? = nil, labels: Labels? = nil
            ) {
                self.enabled = enabled
                self.threshold = threshold
                self.trigger = trigger
                self.heldOffset = heldOffset
                self.indicatorHeight = indicatorHeight
                self.labels = labels
            }
        }

        public struct RubberBand: Sendable, Equatable, Codable {
            public var coefficient: Double?
            public var maxPull: Double?

            public init(coefficient: Double? = nil, maxPull: Double? = nil) {
                self.coefficient = coefficient
                self.maxPull = maxPull
            }
        }

        public var top: Edge?
        public var bottom: Edge?
        public var rotation: Bool?
        public var prefetch: Bool?
        public var prefetchDistance: Double?
        public var baseline: Baseline?
        public var rubberBand: RubberBand?
        public var news: NewsMode?

        public init(
            top: Edge? = nil, bottom: Edge? = nil, rotation: Bool? = nil, prefetch: Bool? = nil,
            prefetchDistance: Double? = nil, baseline: Baseline? = nil, rubberBand: RubberBand? = nil,
            news: NewsMode? = nil
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

    /// This configuration with `overrides` applied, validated as a whole.
    public func applying(_ overrides: Overrides) throws(ConfigError) -> RefreshConfig {
        var config = self
        config.top.apply(overrides.top)
        config.bottom.apply(overrides.bottom)
        config.rotation = overrides.rotation ?? rotation
        config.prefetch = overrides.prefetch ?? prefetch
        config.prefetchDistance = overrides.prefetchDistance ?? prefetchDistance
        config.baseline = overrides.baseline ?? baseline
        config.news = overrides.news ?? news
        config.rubberBand.coefficient = overrides.rubberBand?.coefficient ?? rubberBand.coefficient
        config.rubberBand.maxPull = overrides.rubberBand?.maxPull ?? rubberBand.maxPull
        try config.validate()
        return config
    }
}

extension RefreshConfig.Edge {
    fileprivate mutating func apply(_ overrides: RefreshConfig.Overrides.Edge?) {
        guard let overrides else { return }
        enabled = overrides.enabled ?? enabled
        threshold = overrides.threshold ?? threshold
        trigger = overrides.trigger ?? trigger
        heldOffset = overrides.heldOffset ?? heldOffset
        indicatorHeight = overrides.indicatorHeight ?? indicatorHeight
        labels.pull = overrides.labels?.pull ?? labels.pull
        labels.release = overrides.labels?.release ?? labels.release
        labels.active = overrides.labels?.active ?? labels.active
    }
}
