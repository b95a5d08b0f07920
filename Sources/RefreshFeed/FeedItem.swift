import RefreshJSON

/// One entry of the list. Titles and summaries are plain text: clients must render them as
/// text, and the JSON encoder escapes `<`, `>` and `&` as a second guard.
///
/// Two items are equal when every field has the same bytes, as the stores keep them, not
/// when `String` would call them equal (it compares by canonical equivalence). Where a store
/// put the item (``position``) is not compared: an item given and the same item as stored
/// are equal.
public struct FeedItem: Sendable, Equatable {
    public var id: String
    public var title: String
    public var summary: String?
    public var link: String?
    public var author: String?
    public var published: Timestamp
    /// The position the item took in its feed, on an item a store gives back; `nil` on one
    /// not stored yet.
    public var position: FeedPosition?

    public init(
        id: String, title: String, summary: String? = nil, link: String? = nil, author: String? = nil, published: Timestamp,
        position: FeedPosition? = nil
    ) {
        self.id = id
        self.title = title
        self.summary = summary
        self.link = link
        self.author = author
        self.published = published
        self.position = position
    }

    /// Where the item stands among a batch's new items, which take positions oldest first.
    public var dateOrder: DateOrder { DateOrder(published: published, id: id) }

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

/// Items in the order of their dates, ties broken by `id` (compared by its UTF-8 bytes, as
/// ``ItemKey`` does): the order a batch's new items take positions in, so the newest of a
/// batch becomes the head. The list itself is ordered by position, which a republish with
/// another date never moves.
public struct DateOrder: Hashable, Sendable, Comparable {
    public var published: Timestamp
    public var id: String

    public init(published: Timestamp, id: String) {
        self.published = published
        self.id = id
    }

    /// Ascending in time.
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

/// Some items of the feed, newest first: in descending order of their positions, each with
/// its ``FeedItem/position``.
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
/// `head − p`. A republished id keeps its position, whatever its new date: the list is
/// ordered by position, so paging by positions never skips nor repeats an item that was
/// republished between two pages. 0 is the head of an empty feed.
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
        if let position = item.position { field("position", Int(position)) }
        endObject()
    }

    public mutating func items(_ items: [FeedItem]) {
        beginArray()
        for item in items { self.item(item) }
        endArray()
    }
}
