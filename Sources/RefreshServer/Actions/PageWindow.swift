import RefreshFeed

/// The items a session's page shows, as far as the server has sent them: what an action
/// reads the feed for, what news is counted from, and which changes the page is told of.
struct PageWindow: Sendable, Equatable {
    /// The feed's head when the newest items the page shows were read: what the feed
    /// gained after it is new to the page. `nil` until the page shows a first page.
    var shown: FeedPosition?
    /// The position of the oldest item the page shows: paging down goes on below it.
    var oldest: FeedPosition?
    /// The feed's version the page shows its items as: a change after it, to an item of the
    /// window, is one the page has not seen. `nil` while the page shows none.
    var version: FeedVersion?

    /// The positions the page shows, oldest to newest; `nil` while it shows none.
    var positions: ClosedRange<FeedPosition>? {
        guard let oldest, let shown, oldest <= shown else { return nil }
        return oldest...shown
    }

    /// `head`: the feed's head when the items were read, for reads that bring the page up to
    /// date (a refresh, or the first page). Answers the positions the items added to the
    /// window, which are as of `version` (the read's), where the rest is as of the window's.
    @discardableResult
    mutating func include(
        _ items: [FeedItem], op: ActionResult.Op, head: FeedPosition?, version read: FeedVersion?
    )
        -> ClosedRange<FeedPosition>?
    {
        let before = positions
        if let head { shown = max(shown ?? 0, head) }
        if let last = items.last?.position {
            switch op {
            case .prepend:
                if oldest == nil { oldest = last }
            case .append:
                oldest = min(oldest ?? last, last)
            }
        }
        if version == nil { version = read }
        guard let after = positions else { return nil }
        guard let before else { return after }
        // The window grows at one end: the new part is what lies outside the old one.
        if after.upperBound > before.upperBound { return (before.upperBound + 1)...after.upperBound }
        if after.lowerBound < before.lowerBound { return after.lowerBound...(before.lowerBound - 1) }
        return nil
    }
}
