import Foundation
import NIOCore

/// What a verified token says: whose it is, what it allows, until when.
struct AccessToken: Equatable, Sendable {
    /// `sub`: the owner a session created with this token belongs to.
    var subject: String?
    var rights: FeedRights
    /// `exp`: a stream opened with the token closes shortly before.
    var expires: Date
}

extension AccessToken {
    /// How long a stream opened with a token that expires at `expires` stays open: until a
    /// moment drawn from the last minute before it (from what is left, when less is), so that
    /// the streams of tokens minted together do not all close, and come back, in one instant.
    static func streamLife(
        until expires: Date, now: Date = Date(), draw: (ClosedRange<Double>) -> Double = { .random(in: $0) }
    )
        -> TimeAmount
    {
        // A token may say it expires in ten thousand years; no stream needs to know beyond one.
        let left = min(max(expires.timeIntervalSince(now), 0), longestLife)
        let closes = left - draw(0...min(left, closingWindow))
        return .nanoseconds(Int64(max(closes, 0) * 1e9))
    }

    /// The window before `exp` in which a stream closes.
    static let closingWindow: TimeInterval = 60
    /// The longest a stream stays open on one token, whatever its `exp`.
    static let longestLife: TimeInterval = 366 * 24 * 3600
}
