import Logging
import RefreshFeed

@testable import RefreshServer

extension ServerParts {
    /// The server's parts over `feed`, built as the app builds them, for a test.
    static func forTest(feed: any FeedSource = MemoryFeed(), configuration: ServerConfiguration = ServerConfiguration()) -> ServerParts {
        ServerParts(feed: feed, configuration: configuration, logger: Logger(label: "test"))
    }
}
