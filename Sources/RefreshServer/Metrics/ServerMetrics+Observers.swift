import RefreshEngine

/// The metrics observe the hub and the actions from outside: each reports to a protocol of
/// its own, and the metrics count what they are told.
extension ServerMetrics: NewsObserver, ActionObserver {
    func actionFinished(_ kind: ActionKind, _ outcome: ActionOutcome) {
        let counted: Outcome =
            switch outcome {
            case .completed: .completed
            case .failed: .failed
            case .cancelled: .cancelled
            }
        actionFinished(kind == .refresh ? .refresh : .loadMore, counted)
    }
}
