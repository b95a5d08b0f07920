/// Who hears from a ``HeadListener`` that a feed's head moved (the server's news hub, which
/// tells that feed's sessions): the listener only wakes it, so the store knows nothing of who
/// listens.
///
/// The subscriber says which feeds it watches (those it has sessions for) rather than the
/// listener telling every feed: an instance serves a few of the store's feeds, and after a
/// reconnection the listener reads those feeds' heads in one query and wakes the subscriber
/// for each that moved while it was away, which stays exact at the cost of what is watched.
public protocol HeadSubscriber: Sendable {
    /// The feeds read after each (re)connection and by the slow poll.
    var watchedFeeds: [FeedName] { get }
    /// The newest position the subscriber already knows in `feed`, so a burst of
    /// notifications costs one read of the head, not one each; `nil` for a feed it does not
    /// watch, whose notifications are dropped unread.
    func knownHead(of feed: FeedName) -> FeedPosition?
    /// The head of `feed` may have moved: read it and tell whoever waits for it. Called after
    /// a notification for a watched feed, after each (re)connection and by the slow poll for a
    /// watched feed whose head is past the known one.
    func headMayHaveMoved(in feed: FeedName) async
    /// The head of `feed` moved to `head`, committed and visible to every reader: tell whoever
    /// waits for it, without reading it again. Called for notices that carried their item, one
    /// call at a time per feed: notices that come during a call keep only the newest head for
    /// the next.
    func headMoved(in feed: FeedName, to head: FeedHead) async
    /// The newest version of `feed` the subscriber knows; `nil` for a feed it does not watch.
    func knownVersion(of feed: FeedName) -> FeedVersion?
    /// Commits took `feed` from version `from` to `version`, committed and visible to every
    /// reader; `changes` are the edits and removals they made, when a notice carried them
    /// (`nil`, or a `from` the subscriber is not at: read what changed since the version it
    /// knows). Called in the order of the commits, one call at a time per feed.
    func feedChanged(in feed: FeedName, from: FeedVersion?, to version: FeedVersion, changes: [FeedChange]?) async
}
