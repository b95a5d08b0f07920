/// Who hears from a ``HeadListener`` that the head moved (the server's news hub, which tells
/// its sessions): the listener only wakes it, so the feed knows nothing of who listens.
public protocol HeadSubscriber: Sendable {
    /// The newest position the subscriber already knows, so a burst of notifications costs
    /// one read of the head, not one each.
    var knownHead: FeedPosition { get }
    /// The head may have moved: read it from the feed and tell whoever waits for it. Called
    /// after each notification, after each (re)connection and by the slow poll.
    func headMayHaveMoved(in feed: any FeedSource) async
}
