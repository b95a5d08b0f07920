import RefreshJSON

/// One entry of the list. Titles and summaries are plain text: clients must render them as
/// text, and the JSON encoder escapes `<`, `>` and `&` as a second guard.
///
/// Two items are equal when every field has the same bytes, as the stores keep them, not
/// when `String` would call them equal (it compares by canonical equivalence).
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

    public static func == (lhs: Self, rhs: Self) -> Bool {
        func same(_ lhs: String?, _ rhs: String?) -> Bool {
            switch (lhs, rhs) {
            case (nil, nil): true
            case (let lhs?, let rhs?): lhs.utf8.elementsEqual(rhs.utf8)
            default: false
            }
        }
        return lhs.published == rhs.published && same(lhs.id, rhs.id) && same(lhs.title, rhs.title) && same(lhs.summary, rhs.summary)
            && same(lhs.link, rhs.link) && same(lhs.author, rhs.author)
    }
}

/// A position in the feed: newest first by `published`, ties broken by `id` so that equal
/// timestamps never skip or repeat an item across pages. Ids compare by their UTF-8 bytes,
/// as the databases order them (``ItemKey``).
public struct FeedCursor: Hashable, Sendable, Comparable {
    public var published: Timestamp
    public var id: String

    public init(published: Timestamp, id: String) {
        self.published = published
        self.id = id
    }

    /// Ascending in time; the feed lists in descending order.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.published != rhs.published ? lhs.published < rhs.published : ItemKey.precedes(lhs.id, rhs.id)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.published == rhs.published && ItemKey(lhs.id) == ItemKey(rhs.id)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(published)
        hasher.combine(ItemKey(id))
    }
}

/// Some items of the feed, newest first.
public struct FeedPage: Sendable, Equatable {
    public var items: [FeedItem]
    /// More items lie beyond this page in the direction asked for.
    public var hasMore: Bool
    /// The feed's head when the page was read: a reader that shows this page has seen every
    /// item the feed gained up to here, so "what is new" starts after it.
    public var head: FeedPosition

    public init(items: [FeedItem], hasMore: Bool, head: FeedPosition) {
        self.items = items
        self.hasMore = hasMore
        self.head = head
    }
}

/// Where an item stands in the order the feed gained its items: 1, 2, 3… with no gaps, each
/// new item taking the next. Positions are visible in order: a reader that has seen position
/// p never later finds a new item at p or below, so "new since p" is exact and counts as
/// `head − p`. A republished id keeps its position; 0 is the head of an empty feed.
public typealias FeedPosition = Int64

/// The newest position of the feed and the item that took it.
public struct FeedHead: Sendable, Equatable {
    public var position: FeedPosition
    public var item: FeedItem

    public init(position: FeedPosition, item: FeedItem) {
        self.position = position
        self.item = item
    }
}

extension JSONWriter {
    /// The one way an item is written, in events and answers alike, so every client reads
    /// the same members.
    public mutating func item(_ item: FeedItem) {
        beginObject()
        field("id", item.id)
        field("title", item.title)
        if let summary = item.summary { field("summary", summary) }
        if let link = item.link { field("link", link) }
        if let author = item.author { field("author", author) }
        field("published", item.published.rfc3339)
        endObject()
    }

    public mutating func items(_ items: [FeedItem]) {
        beginArray()
        for item in items { self.item(item) }
        endArray()
    }
}
