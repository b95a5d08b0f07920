import RefreshFeed

/// The items a session's page shows, as far as the server has sent them: what an action
/// reads the feed for, and what news is counted from.
struct PageWindow: Sendable {
    /// The feed's head when the newest items the page shows were read: what the feed
    /// gained after it is new to the page. `nil` until the page shows a first page.
    var shown: FeedPosition?
    /// The position of the oldest item the page shows: paging down goes on below it.
    var oldest: FeedPosition?

    /// `head`: the feed's head when the items were read, for reads that bring the page up to
    /// date (a refresh, or the first page).
    mutating func include(_ items: [FeedItem], op: ActionResult.Op, head: FeedPosition?) {
        if let head { shown = max(shown ?? 0, head) }
        guard let last = items.last?.position else { return }
        switch op {
        case .prepend:
            if oldest == nil { oldest = last }
        case .append:
            oldest = min(oldest ?? last, last)
        }
    }
}
