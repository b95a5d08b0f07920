/// Every feed of one server, by name: each store (memory, SQLite, PostgreSQL) holds them side
/// by side and hands out one feed at a time as a ``FeedSource``.
///
/// A view per feed rather than a name on every method: a session reads one feed for its
/// whole life, so the server picks the feed once (from the route or the session) and keeps
/// calling the ``FeedSource`` it already calls, whose contract for one feed is unchanged.
/// A name cannot be forgotten on one call and read another feed there. Each store is itself
/// the view of ``FeedName/main``, which keeps every place that knew one feed reading `main`.
public protocol FeedStore: Sendable {
    /// The feed called `name`, empty until something is published to it. Cheap: views share
    /// the store's connections and hold no items of their own.
    func feed(_ name: FeedName) -> any FeedSource
}
