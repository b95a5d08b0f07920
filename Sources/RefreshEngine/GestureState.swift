/// Which end of the list a gesture or an action concerns.
public enum Edge: String, Sendable, Codable, CaseIterable {
    case top
    case bottom
}

/// Everything the page needs to draw the indicator; the page decides nothing itself.
public struct GestureState: Sendable, Equatable, Codable {
    public enum Phase: String, Sendable, Codable, CaseIterable {
        case idle
        /// Pulled, but not yet past the threshold.
        case pulling
        /// Past the threshold, waiting for the release (release mode).
        case armed
        /// The top edge's refresh is running.
        case refreshing
        /// The bottom edge's load-more is running.
        case loading
    }

    /// The edge being pulled or held; `nil` when the list is at rest.
    public var edge: Edge?
    public var phase: Phase
    /// `min(1, distance / threshold)`.
    public var pull: Double
    /// How far the list is pulled past `edge`.
    public var distance: Double
    /// The arrow's rotation in degrees, 0…180.
    public var rotation: Double
    /// How far from the edge to draw the indicator: the distance, or the held offset while
    /// the action runs, whichever is larger.
    public var indicatorOffset: Double
    /// How much of the indicator is still hidden, ≤ 0: `min(0, indicatorOffset − indicatorHeight)`
    /// (the UIKit seed's `min(0, -(maxY - y + 50))`).
    public var reveal: Double
    public var label: String
    /// The last sample applied; `nil` before the first.
    public var seq: Int?

    public init(
        edge: Edge?, phase: Phase, pull: Double, distance: Double, rotation: Double,
        indicatorOffset: Double, reveal: Double, label: String, seq: Int?
    ) {
        self.edge = edge
        self.phase = phase
        self.pull = pull
        self.distance = distance
        self.rotation = rotation
        self.indicatorOffset = indicatorOffset
        self.reveal = reveal
        self.label = label
        self.seq = seq
    }

    public static func resting(seq: Int?) -> Self {
        Self(edge: nil, phase: .idle, pull: 0, distance: 0, rotation: 0, indicatorOffset: 0, reveal: 0, label: "", seq: seq)
    }
}

/// The seed `swiftui-lab`'s arrow: still below 60 % of the threshold, then turning
/// linearly to 180° at the threshold.
public func arrowRotation(distance: Double, threshold: Double) -> Double {
    let start = 0.6 * threshold
    let span = 0.4 * threshold
    // A threshold too small to have a span (never a validated one) turns at once.
    guard span > 0 else { return distance >= threshold ? 180 : 0 }
    return 180 * min(max(distance - start, 0), span) / span
}
