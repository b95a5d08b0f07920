import RefreshFeed

/// Other instances' commits reach the registry through the store's listener, which knows it
/// only as a subscriber: a notification of a feed with sessions here moves that feed's news
/// to the head it carried, or makes it read the head when it carried none; the others are
/// dropped unread.
extension FeedRegistry: HeadSubscriber {
    var watchedFeeds: [FeedName] { names }

    func knownHead(of feed: FeedName) -> FeedPosition? {
        news(of: feed)?.position
    }

    func headMayHaveMoved(in feed: FeedName) async {
        await news(of: feed)?.catchUp()
    }

    func headMoved(in feed: FeedName, to head: FeedHead) async {
        await news(of: feed)?.advance(to: head)
    }

    func knownVersion(of feed: FeedName) -> FeedVersion? {
        news(of: feed)?.version
    }

    func feedChanged(in feed: FeedName, from: FeedVersion?, to version: FeedVersion, changes: [FeedChange]?) async {
        await news(of: feed)?.changed(from: from, to: version, changes: changes)
    }
}
