/// Identifies one refresh or load-more of one engine; increasing, never reused.
public struct ActionID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { String(rawValue) }
}

public enum ActionKind: String, Sendable, Codable, CaseIterable {
    case refresh
    case loadMore
}

/// What started an action; the owner may treat them differently (a prefetch is quiet).
public enum ActionOrigin: String, Sendable, Codable, CaseIterable {
    /// A pull past the threshold.
    case pull
    /// A button, a key or a program asked for it.
    case request
    /// Infinite scroll: the end of the content came near the viewport's bottom.
    case prefetch
}

/// An action the engine asks its owner to run.
public struct Job: Hashable, Sendable, Codable {
    public var id: ActionID
    public var kind: ActionKind
    public var origin: ActionOrigin

    public init(id: ActionID, kind: ActionKind, origin: ActionOrigin) {
        self.id = id
        self.kind = kind
        self.origin = origin
    }
}

/// How an action ended.
public enum Outcome: String, Sendable, Codable, CaseIterable {
    case completed
    case failed
    case cancelled
}

/// What the owner must do after an input, in this order: stop `cancel`, start `start`,
/// publish `state`. The engine has already forgotten a cancelled job.
public struct Effects: Equatable, Sendable {
    public var cancel: Job?
    public var start: Job?
    /// The state to publish; `nil` when the input changed nothing a page draws.
    public var state: GestureState?

    public init(cancel: Job? = nil, start: Job? = nil, state: GestureState? = nil) {
        self.cancel = cancel
        self.start = start
        self.state = state
    }

    public static let none = Effects()
}

/// The answer to a request for an action without a gesture.
public enum RequestResult: Equatable, Sendable {
    /// A new action; perform `effects` as after any input.
    case started(Job, Effects)
    /// The same kind of action is already running: the caller shares it.
    case joined(Job)
    /// Another action runs and has priority (a refresh while asking to load more).
    case refused(runningJob: Job)
}
