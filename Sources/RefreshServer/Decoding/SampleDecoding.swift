import RefreshEngine
import RefreshFeed
import RefreshJSON

extension JSONFields where Refusal == APIError {
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
    static func decode(_ body: JSONValue, maxCount: Int) throws(APIError) -> [ValidSample] {
        let root = try JSONFields<APIError>(body, path: "")
        guard root.has("samples") else { return [try sample(body, path: "")] }
        if root.members.count > 1 { try root.rejectUnknown(["samples"]) }
        let elements = try root.array("samples") ?? []
        guard elements.count <= maxCount else {
            throw APIError(.tooManySamples, "\(elements.count) samples in one request; at most \(maxCount) are accepted.", retryAfter: 1)
        }
        var samples: [ValidSample] = []
        samples.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            samples.append(try sample(element, path: "samples[\(index)]"))
        }
        return samples
    }

    /// One sample, read member by member as ``SampleField`` declares them; any other member is
    /// refused, as in every body the API reads.
    static func sample(_ value: JSONValue, path: String) throws(APIError) -> ValidSample {
        let fields = try JSONFields<APIError>(value, path: path)
        // One lookup per member; the sorted search for the message only when one is unknown.
        if fields.members.keys.contains(where: { SampleField(rawValue: $0) == nil }) { try fields.rejectUnknown(SampleField.names) }
        var draft = SampleDraft()
        for field in SampleField.allCases {
            switch field.value {
            case .wholeNumber: if let number = try fields.finiteInt(field.rawValue) { draft.set(field, Double(number)) }
            case .number: if let number = try fields.finiteDouble(field.rawValue) { draft.set(field, number) }
            case .phase: draft.phase = try fields.choice(field.rawValue, Sample.Phase.self)
            case .input: draft.input = try fields.choice(field.rawValue, Sample.Input.self)
            }
            if draft.missing == field, let expected = field.required { throw .missing(fields.fieldPath(field.rawValue), expected: expected) }
        }
        guard let sample = draft.sample else { throw .missing(fields.fieldPath("seq"), expected: "a whole number") }
        do {
            return try ValidSample(sample)
        } catch {
            let prefix = path.isEmpty ? "" : "\(path)."
            throw .outOfRange("\(prefix)\(error.description).")
        }
    }
}

/// The body of `POST /api/sessions`, as the API defines it: every member optional, none
/// other accepted.
struct SessionRequest: Decodable {
    /// The feed's name as sent; ``feedName()`` checks it.
    var feed: String?
    var preset: Preset?
    var config: RefreshConfig.Overrides?
    var resume: ResumeDecoding.Input?
    /// The feed's first page in the answer, so that a page shows its rows one round trip
    /// after it asked for its session rather than after a stream and a load-more.
    var firstPage: Bool?

    /// An empty body is `{}`.
    static func decode(_ body: JSONValue?) throws(APIError) -> SessionRequest {
        try JSONValueDecoder<APIError>().decode(SessionRequest.self, from: body ?? .object([:]))
    }

    /// The feed the session reads; `main` when none is named.
    func feedName() throws(APIError) -> FeedName {
        guard let feed else { return .main }
        return try FeedName.decoded(feed, field: "feed")
    }
}

/// `"resume": {"head": POSITION, "oldest": ID, "version"?: VERSION, "pagedThrough"?: POSITION}`
/// in a new session's body: what the page already shows. `head` is the last `head` its
/// `items` events said, `oldest` its last item, `version` the last version its `items` and
/// `changes` events said. `pagedThrough` (the head its list started from),
/// which pages sent while the list was ordered by date, is checked and no longer needed:
/// paging down goes by positions, below the oldest item's.
enum ResumeDecoding {
    struct Input: Decodable {
        var head: Int?
        var oldest: String?
        var pagedThrough: Int?
        var version: Int?
    }

    struct Resume {
        var head: FeedPosition
        var oldest: String
        /// The feed's version the page shows its rows as (`nil` from a page that does not
        /// say): the new session tells it what changed in them since.
        var version: FeedVersion?
    }

    static func decode(_ body: JSONValue?) throws(APIError) -> Resume? {
        guard let resume = try SessionRequest.decode(body).resume else { return nil }
        guard let head = resume.head else { throw .invalid("resume.head", "is required: the head the page's items were read at") }
        guard head >= 0 else { throw .outOfRange("resume.head must be at least 0.") }
        guard let oldest = resume.oldest, !oldest.isEmpty else {
            throw .invalid("resume.oldest", "is required: the id of the last item the page shows")
        }
        if let violation = ItemRules.violation(of: oldest, as: .id), violation == .containsNUL { throw .invalid("resume.oldest", violation.reason) }
        if let pagedThrough = resume.pagedThrough, !(0...head).contains(pagedThrough) {
            throw .outOfRange("resume.pagedThrough must be 0…head.")
        }
        if let version = resume.version, version < 0 { throw .outOfRange("resume.version must be at least 0.") }
        return Resume(head: FeedPosition(head), oldest: oldest, version: resume.version.map(FeedVersion.init))
    }
}

enum ConfigDecoding {
    /// `{"preset"?: NAME, "config"?: {...}}` → a validated configuration.
    static func decode(_ body: JSONValue?) throws(APIError) -> RefreshConfig {
        let request = try SessionRequest.decode(body)
        let preset = request.preset ?? .standard
        guard let overrides = request.config else { return preset.config }
        do {
            return try preset.config.applying(overrides)
        } catch {
            throw .outOfRange("config.\(error.field) \(error.reason).")
        }
    }
}

// The API reads these by their raw values; a refusal lists them.
extension Preset: JSONChoice {}
extension RefreshConfig.TriggerMode: JSONChoice {}
extension RefreshConfig.NewsMode: JSONChoice {}
extension RefreshConfig.Baseline: JSONChoice {}
extension Sample.Input: JSONChoice {}

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
        switch edge.threshold {
        case .points(let points): field("threshold", points)
        case .fit: field("threshold", "fit")
        }
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
