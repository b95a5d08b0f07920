import RefreshFeed

extension Session {
    /// What a session works with, each given by its store when it is made (those of its feed
    /// shared with the feed's other sessions): none is reached through another.
    struct Services: Sendable {
        /// The feed the session reads, for its whole life.
        let name: FeedName
        /// Runs the session's refreshes and load-mores, reporting back through a closure.
        let actions: ActionRunner
        /// The feed's head, for `news` and live prepends; told which streams open and close.
        let news: FeedNews
        /// Items per live read.
        let pageSize: Int
        let metrics: ServerMetrics
    }
}
