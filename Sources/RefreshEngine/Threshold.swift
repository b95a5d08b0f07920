extension RefreshConfig {
    /// How far an edge must be pulled to arm or trigger: a fixed number of points, or one that
    /// fits the screen the list is on.
    ///
    /// A fixed threshold is too far on a small phone and too near on a tablet; `fit` is the
    /// rule users of home-assistant/iOS arrived at (its PR #5270): 20 % of the viewport's
    /// height, at most 148 points and at least 64. The engine applies it to the height each
    /// sample reports, so a page that rotates or resizes gets the threshold of its new size.
    /// In JSON it is a number, or the string `"fit"`.
    public enum Threshold: Sendable, Equatable, Codable, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
        case points(Double)
        case fit

        /// The share of the viewport's height a `fit` threshold takes, between its bounds.
        public static let fitShare = 0.2
        /// The bounds of a `fit` threshold.
        public static let fitRange = 64.0...148.0

        public init(integerLiteral value: Int) { self = .points(Double(value)) }
        public init(floatLiteral value: Double) { self = .points(value) }

        /// The threshold in force for a viewport `viewportHeight` points tall. Until a sample
        /// has said the height, a `fit` threshold is the rule's largest: an unknown screen is
        /// not assumed to be a small one, where a short pull would already fire.
        public func points(viewportHeight: Double?) -> Double {
            switch self {
            case .points(let points):
                return points
            case .fit:
                guard let viewportHeight else { return Self.fitRange.upperBound }
                return min(Self.fitRange.upperBound, max(Self.fitRange.lowerBound, viewportHeight * Self.fitShare))
            }
        }

        /// The largest value it can take, against which a configuration is validated.
        var largest: Double {
            switch self {
            case .points(let points): points
            case .fit: Self.fitRange.upperBound
            }
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let word = try? container.decode(String.self), word == "fit" {
                self = .fit
            } else {
                // Anything else must be a number: the decoder says where it is not one.
                self = .points(try container.decode(Double.self))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .points(let points): try container.encode(points)
            case .fit: try container.encode("fit")
            }
        }
    }
}
