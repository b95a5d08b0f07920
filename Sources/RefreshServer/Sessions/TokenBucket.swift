/// Rate limit of one session's samples: `rate` per second sustained, bursts up to one
/// second's worth.
struct TokenBucket: Sendable {
    let rate: Double
    private var tokens: Double
    private var updated: ContinuousClock.Instant

    init(rate: Double, now: ContinuousClock.Instant) {
        self.rate = rate
        self.tokens = rate
        self.updated = now
    }

    /// Takes `count` tokens, or answers how many whole seconds until they would be there.
    mutating func take(_ count: Int, now: ContinuousClock.Instant) -> Int? {
        let elapsed = now - updated
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        tokens = min(rate, tokens + seconds * rate)
        updated = now
        let needed = Double(count)
        if tokens >= needed {
            tokens -= needed
            return nil
        }
        return max(1, Int(((needed - tokens) / rate).rounded(.up)))
    }
}
