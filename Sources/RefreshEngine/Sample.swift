/// One measurement of the list's scroll position, as the page posts it.
public struct Sample: Sendable, Equatable, Codable {
    /// What the user's input was doing when the offset was measured.
    public enum Phase: String, Sendable, Codable, CaseIterable {
        /// A finger, mouse button or wheel is moving the list.
        case drag
        /// The input ended here (finger lifted, button released, wheel paused).
        case release
        /// The list moved on its own (momentum, layout change): never arms or triggers.
        case scroll
    }

    /// What the person moved the list with. The engine decides the same for every kind; the
    /// server counts pulls by it, so those who tune a list can tell a mouse drag from a finger.
    public enum Input: String, Sendable, Codable, CaseIterable {
        case touch
        case mouse
        /// A wheel or a trackpad's scrolling.
        case wheel
        case keyboard
        /// A program moved it (a test, a script, an app's own code).
        case program
    }

    /// Strictly increasing per session; an older one is ignored.
    public var seq: Int
    /// Milliseconds on the page's clock; carried so the engine never reads a clock itself.
    public var t: Double
    /// The displayed content offset (UIKit's `contentOffset.y`): negative when pulled
    /// down past the top, above `contentHeight - viewportHeight` when pulled up past the end.
    public var y: Double
    public var phase: Phase
    /// Omitted when unchanged since the previous sample.
    public var contentHeight: Double?
    public var viewportHeight: Double?
    /// Omitted when unchanged since the previous sample, or when the sender does not say.
    public var input: Input?

    public init(
        seq: Int, t: Double = 0, y: Double, phase: Phase = .drag,
        contentHeight: Double? = nil, viewportHeight: Double? = nil, input: Input? = nil
    ) {
        self.seq = seq
        self.t = t
        self.y = y
        self.phase = phase
        self.contentHeight = contentHeight
        self.viewportHeight = viewportHeight
        self.input = input
    }

    /// Largest offset or height taken as a real measurement rather than a bug or an attack.
    public static let largestLength = 10_000_000.0

    /// Throws for values no real page measures; the engine applies nothing from such a sample.
    public func validate() throws(SampleError) {
        guard seq >= 0 else { throw .outOfRange(field: "seq", reason: "must not be negative") }
        guard t.isFinite else { throw .notFinite(field: "t") }
        guard t >= 0 else { throw .outOfRange(field: "t", reason: "must not be negative") }
        guard y.isFinite else { throw .notFinite(field: "y") }
        guard abs(y) <= Self.largestLength else {
            throw .outOfRange(field: "y", reason: "must be within ±10000000")
        }
        try Self.checkHeight(contentHeight, "contentHeight")
        try Self.checkHeight(viewportHeight, "viewportHeight")
    }

    private static func checkHeight(_ value: Double?, _ field: String) throws(SampleError) {
        guard let value else { return }
        guard value.isFinite else { throw .notFinite(field: field) }
        guard value >= 0, value <= largestLength else {
            throw .outOfRange(field: field, reason: "must be from 0 to 10000000")
        }
    }
}

/// A sample whose values ``Sample/validate()`` accepted: the engine applies it without
/// checking again, so a sample the API decoded is checked once, where it is read.
@dynamicMemberLookup
public struct ValidSample: Sendable, Equatable {
    public let sample: Sample

    public init(_ sample: Sample) throws(SampleError) {
        try sample.validate()
        self.sample = sample
    }

    public subscript<Value>(dynamicMember path: KeyPath<Sample, Value>) -> Value { sample[keyPath: path] }
}

/// Why a sample was refused. Nothing of a refused sample is applied.
public enum SampleError: Error, Sendable, Equatable, CustomStringConvertible {
    case notFinite(field: String)
    case outOfRange(field: String, reason: String)

    public var field: String {
        switch self {
        case .notFinite(let field), .outOfRange(let field, _): field
        }
    }

    public var description: String {
        switch self {
        case .notFinite(let field): "\(field) must be a finite number"
        case .outOfRange(let field, let reason): "\(field) \(reason)"
        }
    }
}
