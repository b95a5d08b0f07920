/// One entry of the list. Titles and summaries are plain text: clients must render them as
/// text, and the JSON encoder escapes `<`, `>` and `&` as a second guard.
public struct FeedItem: Sendable, Equatable {
    public var id: String
    public var title: String
    public var summary: String?
    public var link: String?
    public var author: String?
    public var published: Timestamp

    public init(id: String, title: String, summary: String? = nil, link: String? = nil, author: String? = nil, published: Timestamp) {
        self.id = id
        self.title = title
        self.summary = summary
        self.link = link
        self.author = author
        self.published = published
    }

    /// Where the item stands in the feed's order.
    public var cursor: FeedCursor { FeedCursor(published: published, id: id) }
}

/// A position in the feed: newest first by `published`, ties broken by `id` so that equal
/// timestamps never skip or repeat an item across pages.
public struct FeedCursor: Hashable, Sendable, Comparable {
    public var published: Timestamp
    public var id: String

    public init(published: Timestamp, id: String) {
        self.published = published
        self.id = id
    }

    /// Ascending in time; the feed lists in descending order.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.published, lhs.id) < (rhs.published, rhs.id)
    }
}

/// Some items of the feed, newest first.
public struct FeedPage: Sendable, Equatable {
    public var items: [FeedItem]
    /// More items lie beyond this page in the direction asked for.
    public var hasMore: Bool

    public init(items: [FeedItem], hasMore: Bool) {
        self.items = items
        self.hasMore = hasMore
    }
}

extension JSONWriter {
    mutating func item(_ item: FeedItem) {
        beginObject()
        field("id", item.id)
        field("title", item.title)
        if let summary = item.summary { field("summary", summary) }
        if let link = item.link { field("link", link) }
        if let author = item.author { field("author", author) }
        field("published", item.published.rfc3339)
        endObject()
    }

    mutating func items(_ items: [FeedItem]) {
        beginArray()
        for item in items { self.item(item) }
        endArray()
    }
}
