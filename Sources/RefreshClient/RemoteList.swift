/// The list a session's events describe, as one array an app renders: `items` put in above
/// or below, `changes` applied where the rows stand, `news` kept for a badge, a `reset` or a
/// replacement that starts over clearing it.
///
/// ```swift
/// var list = RemoteList()
/// for try await event in session.events {
///     if list.apply(event) { render(list.items) }
/// }
/// ```
public struct RemoteList: Sendable, Equatable {
    /// The rows, newest first, as the feed orders them; each id once.
    public private(set) var items: [FeedItem] = []
    /// Older items remain below the last row (a load-more brings them); `false` until the
    /// first page says.
    public private(set) var hasMore = false
    /// Items the feed gained that the list does not show yet; `nil` when there are none.
    public private(set) var news: News?
    /// The feed's version the rows are as of (that of the last `items` or `changes`).
    public private(set) var version: Int?

    public init() {}

    /// Applies one event of the session, in the order the session hands them on. Answers
    /// whether ``items``, ``hasMore`` or ``news`` changed, so that an app redraws only then.
    @discardableResult
    public mutating func apply(_ event: SessionEvent) -> Bool {
        let before = self
        switch event {
        case .items(let update):
            insert(update)
        case .changes(let changes):
            for change in changes.changes { apply(change) }
            version = changes.version
        case .news(let news):
            // A removal among the items it counted can bring the count to none.
            self.news = news.count > 0 ? news : nil
        case .reset, .replaced(resumed: false):
            self = RemoteList()
        case .state, .progress, .done, .replaced(resumed: true):
            break
        }
        return items != before.items || hasMore != before.hasMore || news != before.news
    }

    private mutating func insert(_ update: ItemsUpdate) {
        // Each id once: a row the update brings again takes the update's place and fields.
        let incoming = Set(update.items.map(\.id))
        items.removeAll { incoming.contains($0.id) }
        switch update.operation {
        case .prepend:
            items.insert(contentsOf: update.items, at: 0)
            // New items on top are those the news offered: a later `news` offers what is left.
            news = nil
        case .append:
            items.append(contentsOf: update.items)
        }
        hasMore = update.hasMore
        if let version = update.version { self.version = version }
    }

    private mutating func apply(_ change: ItemChange) {
        switch change {
        case .update(let item):
            guard let index = items.firstIndex(where: { $0.id == item.id }) else { return }
            items[index] = item
        case .remove(let id, _, _):
            items.removeAll { $0.id == id }
        }
    }
}
