/// How long to wait before asking again: what the server asked for (up to five minutes, so
/// a mistaken `Retry-After` does not silence a client for good), else a backoff that doubles
/// from one second up to 25 s; plus up to a fifth more at random (at least a quarter second's
/// worth), so that the clients a busy server turned away in one instant do not all come back
/// in one instant.
struct Backoff {
    static let first = Duration.seconds(1)
    static let longest = Duration.seconds(25)
    static let longestAsked = Duration.seconds(300)

    private(set) var next = Backoff.first

    /// The wait for this failure; the next one without a `Retry-After` waits twice as long.
    mutating func delay(retryAfter: Duration? = nil) -> Duration {
        let base = retryAfter.map { min($0, Self.longestAsked) } ?? next
        next = min(next * 2, Self.longest)
        return Self.jittered(base)
    }

    mutating func reset() { next = Self.first }

    static func jittered(_ base: Duration) -> Duration {
        let spread = max(base / 5, .milliseconds(250))
        return base + spread * Double.random(in: 0..<1)
    }
}
