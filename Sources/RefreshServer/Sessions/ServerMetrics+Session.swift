extension ServerMetrics {
    /// What a session's step counted (samples, resets, changes told, replays).
    func count(_ counts: SessionMachine.Counts) {
        samplesTaken(applied: counts.samplesApplied, ignored: counts.samplesIgnored)
        for cause in counts.resets { resetSent(cause) }
        if counts.changesSent > 0 { changesSent(counts.changesSent) }
        for _ in 0..<counts.replayHits { replayed(hit: true) }
        for _ in 0..<counts.replayMisses { replayed(hit: false) }
        if counts.coalesced > 0 { eventsCoalesced(counts.coalesced) }
        for _ in 0..<counts.resumedByVersion { resumedByVersion() }
    }
}
