import RefreshFeed

/// The hub hears of other instances' commits through the feed's listener, which knows it only
/// as a subscriber.
extension NewsHub: HeadSubscriber {
    public var knownHead: FeedPosition { position }

    public func headMayHaveMoved(in feed: any FeedSource) async {
        await catchUp(with: feed)
    }
}
