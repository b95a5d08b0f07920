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
    /// An upstream feed read leniently: it breaks its format in a way readers forgive.
    func upstreamWarning(_ warning: UpstreamWarning)
    /// Items an upstream refresh edited in place: their feed's entry changed its title,
    /// summary, link, author or date.
    func upstreamItemsEdited(_ count: Int)
}

/// How an upstream feed broke its format in a way it is still read.
public enum UpstreamWarning: String, CaseIterable, Sendable {
    /// A JSON Feed whose `version` is `1`, `1.0` or `1.1` rather than its jsonfeed.org URL.
    case jsonFeedVersion = "jsonfeed_version"
    /// Bytes that are not the UTF-8 the feed claims (or, saying nothing, is taken) to be,
    /// read as windows-1252.
    case notUTF8 = "not_utf8"
}

/// How a piece of the feed's work ended.
public enum FeedOutcome: String, CaseIterable, Sendable {
    case completed, failed, cancelled
}
