import RefreshFeed

/// The feed reports what it did; the server's metrics count it from outside.
extension ServerMetrics: FeedObserver {
    public func feedUpdateFinished(_ outcome: FeedOutcome, in duration: Duration) {
        feedUpdated(Outcome(outcome), in: duration)
    }

    public func upstreamFetchFinished(_ outcome: FeedOutcome, in duration: Duration) {
        upstreamFetched(Outcome(outcome), in: duration)
    }

    public func upstreamItemSkipped(because reason: ItemRules.SkipReason) {
        upstreamItemSkipped(reason)
    }

    public func upstreamTextCut(in field: ItemRules.Field) {
        upstreamFieldCut(field)
    }

    public func upstreamWarning(_ warning: UpstreamWarning) {
        upstreamWarned(warning)
    }

    public func upstreamItemsEdited(_ count: Int) {
        upstreamEdited(count)
    }
}

extension ServerMetrics.Outcome {
    init(_ outcome: FeedOutcome) {
        switch outcome {
        case .completed: self = .completed
        case .failed: self = .failed
        case .cancelled: self = .cancelled
        }
    }
}
