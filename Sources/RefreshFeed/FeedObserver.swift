/// What the feed reports as it works, for whoever counts it (the server's metrics): the feed
/// says what happened and knows nothing of how it is counted, so metrics observe it from
/// outside.
public protocol FeedObserver: Sendable {
    /// An update (shared by every refresh that joined it) ended.
    func feedUpdateFinished(_ outcome: FeedOutcome, in duration: Duration)
    /// One upstream feed's fetch ended.
    func upstreamFetchFinished(_ outcome: FeedOutcome, in duration: Duration)
    /// An upstream item left out because it breaks ``ItemRules``.
    func upstreamItemSkipped(because reason: ItemRules.SkipReason)
    /// An upstream item's text cut to its field's length.
    func upstreamTextCut(in field: ItemRules.Field)
    /// Items an upstream refresh edited in place: their feed's entry changed its title,
    /// summary, link, author or date.
    func upstreamItemsEdited(_ count: Int)
}

/// How a piece of the feed's work ended.
public enum FeedOutcome: String, CaseIterable, Sendable {
    case completed, failed, cancelled
}
