import RefreshFeed
import Synchronization

/// The feeds this server has sessions for, each with what its sessions share: its view of
/// the store, its news and its action runner (whose shared update makes the refreshes of one
/// feed that overlap one upstream pull). A feed is here while a session reads it, so what a
/// publish, a notification or the slow poll touches follows the feeds with sessions on this
/// instance, not every feed the store holds: a publish to a feed nobody reads here tells no
/// one, and a feed with one session costs one session's work whatever the others hold.
final class FeedRegistry: Sendable {
    private struct Entry {
        let services: Session.Services
        var sessions: Int
    }

    private let entries = Mutex<[FeedName: Entry]>([:])
    private let store: any FeedStore
    /// A server built over one ``FeedSource`` rather than a store holds `main` alone.
    private let holdsOnlyMain: Bool
    private let settings: SessionSettings
    let metrics: ServerMetrics
    /// The feed `/api/items` and `/readyz` read, always held.
    let main: any FeedSource

    /// `feed`: a ``FeedStore`` serves every feed; any other source is the feed `main`, and a
    /// server over it refuses other names.
    init(feed: any FeedSource, settings: SessionSettings, metrics: ServerMetrics) {
        let store = feed as? any FeedStore
        self.store = store ?? OneFeed(main: feed)
        holdsOnlyMain = store == nil
        self.settings = settings
        self.metrics = metrics
        main = MeteredFeed(store?.feed(.main) ?? feed, metrics: metrics)
    }

    /// The feed `name` as the routes read and write it, its store failures counted.
    func view(_ name: FeedName) throws(APIError) -> any FeedSource {
        if holdsOnlyMain, name != .main {
            throw APIError(.feedNotFound, "This server's store holds the feed main only.")
        }
        return name == .main ? main : MeteredFeed(store.feed(name), metrics: metrics)
    }

    /// What a new session of `name` works with, shared with the feed's other sessions here.
    /// The feed stays until as many ``leave(_:)`` calls.
    func join(_ name: FeedName) throws(APIError) -> Session.Services {
        let feed = try view(name)
        return entries.withLock { entries in
            if var entry = entries[name] {
                entry.sessions += 1
                entries[name] = entry
                return entry.services
            }
            let news = FeedNews(feed: feed, observer: metrics)
            let services = Session.Services(
                name: name, actions: ActionRunner(feed: feed, news: news, settings: settings.actions, observer: metrics), news: news,
                pageSize: settings.pageSize, metrics: metrics)
            entries[name] = Entry(services: services, sessions: 1)
            return services
        }
    }

    /// A session of `name` ended.
    func leave(_ name: FeedName) {
        entries.withLock { entries in
            guard var entry = entries[name] else { return }
            entry.sessions -= 1
            entries[name] = entry.sessions > 0 ? entry : nil
        }
    }

    /// The news of `name` while a session here reads it; `nil` when none does (nobody to tell).
    func news(of name: FeedName) -> FeedNews? {
        entries.withLock { $0[name]?.services.news }
    }

    /// The feeds with at least one session here.
    var active: Int { entries.withLock { $0.count } }

    /// The names of those feeds.
    var names: [FeedName] { entries.withLock { Array($0.keys) } }

    /// Every feed with sessions reads its head and tells them what moved: the slow poll, for
    /// news that came by a path that did not say so.
    func catchUpAll() async {
        let all = entries.withLock { $0.values.map(\.services.news) }
        for news in all where !Task.isCancelled { await news.catchUp() }
    }
}

/// A store of one feed, `main`: the source a server was built over. Other names never reach
/// it (``FeedRegistry/view(_:)`` refuses them).
private struct OneFeed: FeedStore {
    let main: any FeedSource

    func feed(_ name: FeedName) -> any FeedSource { main }
}
