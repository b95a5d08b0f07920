import RefreshFeed

/// The hub hears of other instances' commits through the feed's listener, which knows it only
/// as a subscriber. It holds the news of `main` alone: the other feeds' notifications are
/// dropped unread.
extension NewsHub: HeadSubscriber {
    public var watchedFeeds: [FeedName] { [.main] }

    public func knownHead(of feed: FeedName) -> FeedPosition? {
        feed == .main ? position : nil
    }

    public func headMayHaveMoved(in feed: any FeedSource, named name: FeedName) async {
        guard name == .main else { return }
        await catchUp(with: feed)
    }
}
