import RefreshFeed

/// Other instances' commits reach the registry through the store's listener, which knows it
/// only as a subscriber: a notification of a feed with sessions here makes that feed's news
/// read the head; the others are dropped unread.
extension FeedRegistry: HeadSubscriber {
    var watchedFeeds: [FeedName] { names }

    func knownHead(of feed: FeedName) -> FeedPosition? {
        news(of: feed)?.position
    }

    func headMayHaveMoved(in feed: FeedName) async {
        await news(of: feed)?.catchUp()
    }
}
