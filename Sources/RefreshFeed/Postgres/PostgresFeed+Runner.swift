import Logging
import ServiceLifecycle

extension PostgresFeed {
    /// Runs the connection pool until the server stops (nothing reaches PostgreSQL without
    /// it), and meanwhile migrates the schema and seeds an empty feed, trying again until
    /// PostgreSQL answers.
    public struct Runner: Service {
        let feed: PostgresFeed
        let seed: [FeedItem]?
        let logger: Logger

        /// - Parameter seed: stored when the feed is found empty, once PostgreSQL answers.
        public init(feed: PostgresFeed, seed: [FeedItem]?, logger: Logger) {
            self.feed = feed
            self.seed = seed
            self.logger = logger
        }

        public func run() async throws {
            await cancelWhenGracefulShutdown {
                await withDiscardingTaskGroup { group in
                    group.addTask { await feed.client.run() }
                    group.addTask { await prepare() }
                }
            }
        }

        private func prepare() async {
            var wait: Duration = .milliseconds(200)
            while !Task.isCancelled {
                do {
                    try await feed.migrated()
                    if let seed, try await feed.isEmpty { try await feed.seed(seed) }
                    return
                } catch {
                    logger.warning(
                        "PostgreSQL is not ready; trying again", metadata: ["error": "\(String(reflecting: error))", "retryIn": "\(wait)"])
                    try? await Task.sleep(for: wait)
                    wait = min(wait * 2, .seconds(5))
                }
            }
        }
    }
}
