/// How long to wait before asking again, as the page waits: what the server asked for, else a
/// backoff that doubles from one second, capped at 25 s, plus up to a fifth more at random
/// (at least a quarter second's worth), so that the clients a busy server turned away in one
/// instant do not all come back in one instant.
struct Backoff {
    static let first = Duration.seconds(1)
    static let longest = Duration.seconds(25)

    private(set) var next = Backoff.first

    /// The wait for this failure; the next one without a `Retry-After` waits twice as long.
    mutating func delay(retryAfter: Duration? = nil) -> Duration {
        let base = min(retryAfter ?? next, Self.longest)
        next = min(next * 2, Self.longest)
        return Self.jittered(base)
    }

    mutating func reset() { next = Self.first }

    static func jittered(_ base: Duration) -> Duration {
        let spread = max(base / 5, .milliseconds(250))
        return base + spread * Double.random(in: 0..<1)
    }
}
