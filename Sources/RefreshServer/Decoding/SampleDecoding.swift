import RefreshEngine

extension JSONFields {
    /// A number that must be finite: `1e999`, `NaN` and `Infinity` are refused with 422.
    func finiteDouble(_ key: String) throws(APIError) -> Double? {
        guard let number = try double(key) else { return nil }
        guard number.isFinite else { throw .outOfRange("\(fieldPath(key)) must be a finite number.") }
        return number
    }

    func finiteInt(_ key: String) throws(APIError) -> Int? {
        guard let number = try finiteDouble(key) else { return nil }
        return try int(key) ?? Int(number)
    }
}

enum SampleDecoding {
    /// One sample object, or `{"samples": [...]}`.
    static func decode(_ body: JSONValue, maxCount: Int) throws(APIError) -> [Sample] {
        let root = try JSONFields(body, path: "")
        guard root.has("samples") else { return [try sample(body, path: "")] }
        let elements = try root.array("samples") ?? []
        guard elements.count <= maxCount else {
            throw APIError(
                .tooManyRequests, "too_many_samples",
                "\(elements.count) samples in one request; at most \(maxCount) are accepted.", retryAfter: 1)
        }
        var samples: [Sample] = []
        samples.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            samples.append(try sample(element, path: "samples[\(index)]"))
        }
        return samples
    }

    static func sample(_ value: JSONValue, path: String) throws(APIError) -> Sample {
        let fields = try JSONFields(value, path: path)
        guard let seq = try fields.finiteInt("seq") else { throw .missing(fields.fieldPath("seq"), expected: "a whole number") }
        guard let y = try fields.finiteDouble("y") else { throw .missing(fields.fieldPath("y"), expected: "a number") }
        let phase = try fields.choice("phase", Sample.Phase.self) ?? .drag
        let sample = Sample(
            seq: seq, t: try fields.finiteDouble("t") ?? 0, y: y, phase: phase,
            contentHeight: try fields.finiteDouble("contentHeight"),
            viewportHeight: try fields.finiteDouble("viewportHeight"))
        do {
            try sample.validate()
        } catch {
            let prefix = path.isEmpty ? "" : "\(path)."
            throw .outOfRange("\(prefix)\(error.description).")
        }
        return sample
    }
}

/// `"resume": {"head": POSITION, "oldest": ID, "pagedThrough"?: POSITION}` in a new
/// session's body: what the page already shows. `head` is the last `head` its `items`
/// events said, `pagedThrough` the first (the head its list started from: paging down goes
/// only through items at or below it, as later ones came on top), `oldest` its last item.
enum ResumeDecoding {
    struct Resume {
        var head: FeedPosition
        var oldest: String
        var pagedThrough: FeedPosition
    }

    static func decode(_ body: JSONValue?) throws(APIError) -> Resume? {
        guard let body, let resume = try JSONFields(body, path: "").object("resume") else { return nil }
        try resume.rejectUnknown(["head", "oldest", "pagedThrough"])
        guard let head = try resume.int("head") else { throw .invalid("resume.head", "is required: the head the page's items were read at") }
        guard head >= 0 else { throw .outOfRange("resume.head must be at least 0.") }
        guard let oldest = try resume.string("oldest"), !oldest.isEmpty else { throw .invalid("resume.oldest", "is required: the id of the last item the page shows") }
        let pagedThrough = try resume.int("pagedThrough") ?? head
        guard (0...head).contains(pagedThrough) else { throw .outOfRange("resume.pagedThrough must be 0…head.") }
        return Resume(head: FeedPosition(head), oldest: oldest, pagedThrough: FeedPosition(pagedThrough))
    }
}

enum ConfigDecoding {
    /// `{"preset"?: NAME, "config"?: {...}}` → a validated configuration.
    static func decode(_ body: JSONValue?) throws(APIError) -> RefreshConfig {
        guard let body else { return Preset.standard.config }
        let root = try JSONFields(body, path: "")
        let preset = try root.choice("preset", Preset.self) ?? .standard
        guard let overrides = try root.object("config") else { return preset.config }
        do {
            return try preset.config.applying(try Self.overrides(overrides))
        } catch let error as ConfigError {
            throw .outOfRange("config.\(error.field) \(error.reason).")
        } catch let error as APIError {
            throw error
        } catch {
            throw .invalid("config", "is not valid")
        }
    }

    private static func overrides(_ fields: JSONFields) throws(APIError) -> RefreshConfig.Overrides {
        try fields.rejectUnknown(["top", "bottom", "rotation", "prefetch", "prefetchDistance", "baseline", "rubberBand", "news"])
        var overrides = RefreshConfig.Overrides()
        overrides.top = try fields.object("top").map { (edge) throws(APIError) in try Self.edge(edge) }
        overrides.bottom = try fields.object("bottom").map { (edge) throws(APIError) in try Self.edge(edge) }
        overrides.rotation = try fields.bool("rotation")
        overrides.prefetch = try fields.bool("prefetch")
        overrides.prefetchDistance = try fields.double("prefetchDistance")
        overrides.baseline = try fields.choice("baseline", RefreshConfig.Baseline.self)
        overrides.news = try fields.choice("news", RefreshConfig.NewsMode.self)
        if let band = try fields.object("rubberBand") {
            try band.rejectUnknown(["coefficient", "maxPull"])
            overrides.rubberBand = .init(coefficient: try band.double("coefficient"), maxPull: try band.double("maxPull"))
        }
        return overrides
    }

    private static func edge(_ fields: JSONFields) throws(APIError) -> RefreshConfig.Overrides.Edge {
        try fields.rejectUnknown(["enabled", "threshold", "trigger", "heldOffset", "indicatorHeight", "labels"])
        var edge = RefreshConfig.Overrides.Edge(
            enabled: try fields.bool("enabled"), threshold: try fields.double("threshold"),
            trigger: try fields.choice("trigger", RefreshConfig.TriggerMode.self),
            heldOffset: try fields.double("heldOffset"), indicatorHeight: try fields.double("indicatorHeight"))
        if let labels = try fields.object("labels") {
            try labels.rejectUnknown(["pull", "release", "active"])
            edge.labels = .init(pull: try labels.string("pull"), release: try labels.string("release"), active: try labels.string("active"))
        }
        return edge
    }
}

extension JSONWriter {
    mutating func config(_ config: RefreshConfig) {
        beginObject()
        key("top")
        edge(config.top)
        key("bottom")
        edge(config.bottom)
        field("rotation", config.rotation)
        field("prefetch", config.prefetch)
        field("prefetchDistance", config.prefetchDistance)
        field("baseline", config.baseline.rawValue)
        key("rubberBand")
        beginObject()
        field("coefficient", config.rubberBand.coefficient)
        field("maxPull", config.rubberBand.maxPull)
        endObject()
        field("news", config.news.rawValue)
        endObject()
    }

    private mutating func edge(_ edge: RefreshConfig.Edge) {
        beginObject()
        field("enabled", edge.enabled)
        field("threshold", edge.threshold)
        field("trigger", edge.trigger.rawValue)
        field("heldOffset", edge.heldOffset)
        field("indicatorHeight", edge.indicatorHeight)
        key("labels")
        beginObject()
        field("pull", edge.labels.pull)
        field("release", edge.labels.release)
        field("active", edge.labels.active)
        endObject()
        endObject()
    }
}
