/// What a commit that moved a feed's head `NOTIFY`s: the feed and its new head, as
/// `NAME HEAD` (a name holds no space), so a listener skips a notice it already knows of
/// without a read, and reads only the feed named.
///
/// An instance of an older version, which expects the head alone, cannot parse this and so
/// reads its head anyway, so it loses no news. It must not write, though: its statements
/// know one head row and no feed column, and would write across feeds. The schema's feeds
/// migration therefore takes a stop of every older instance (README, "Upgrading").
struct HeadNotice: Equatable, Sendable {
    let feed: FeedName
    let head: FeedPosition

    var payload: String { "\(feed.rawValue) \(head)" }

    init(feed: FeedName, head: FeedPosition) {
        self.feed = feed
        self.head = head
    }

    /// `nil` for a payload that is not a notice (sent by hand, or by another version).
    init?(payload: String) {
        guard let space = payload.lastIndex(of: " "), let feed = FeedName(String(payload[..<space])),
            let head = FeedPosition(payload[payload.index(after: space)...])
        else { return nil }
        self.init(feed: feed, head: head)
    }
}
