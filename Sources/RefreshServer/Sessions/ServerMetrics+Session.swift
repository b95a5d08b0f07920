extension ServerMetrics {
    /// What a session's step counted (samples, resets, changes told, replays).
    func count(_ counts: SessionMachine.Counts) {
        samplesTaken(applied: Int(counts.samplesApplied), ignored: Int(counts.samplesIgnored))
        for cause in counts.resets { resetSent(cause) }
        if counts.changesSent > 0 { changesSent(Int(counts.changesSent)) }
        for _ in 0..<counts.replayHits { replayed(hit: true) }
        for _ in 0..<counts.replayMisses { replayed(hit: false) }
        if counts.coalesced > 0 { eventsCoalesced(Int(counts.coalesced)) }
        for _ in 0..<counts.resumedByVersion { resumedByVersion() }
        for pull in counts.pulls { pulled(pull) }
    }
}
