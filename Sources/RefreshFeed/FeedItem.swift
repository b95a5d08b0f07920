import RefreshJSON

/// One entry of the list. Titles and summaries are plain text: clients must render them as
/// text, and the JSON encoder escapes `<`, `>` and `&` as a second guard.
///
/// Two items are equal when every field has the same bytes, as the stores keep them, not
/// when `String` would call them equal (it compares by canonical equivalence). Where a store
/// put the item (``position``) and which change made it (``version``) are not compared: an
/// item given and the same item as stored are equal.
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
    /// The feed's change that made the item as it is (its publish, or its last edit), on an
    /// item a store gives back; `nil` on one not stored yet.
    public var version: FeedVersion?

    public init(
        id: String, title: String, summary: String? = nil, link: String? = nil, author: String? = nil, published: Timestamp,
        position: FeedPosition? = nil, version: FeedVersion? = nil
    ) {
        self.id = id
        self.title = title
        self.summary = summary
        self.link = link
        self.author = author
        self.published = published
        self.position = position
        self.version = version
    }

    /// Whether `other` holds the same texts and link as this item: what makes an upstream's
    /// entry an edit of the stored item (its date, which a feed may give anew or not at all,
    /// is not compared).
    public func sameTexts(as other: FeedItem) -> Bool {
        var other = other
        other.published = published
        return self == other
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
    /// The feed's version when the page was read: its items are as they were then.
    public var version: FeedVersion
    /// More items lie beyond this page in the direction asked for.
    public var hasMore: Bool
    /// The feed's head when the page was read: a reader that shows this page has seen every
    /// item the feed gained up to here, so "what is new" starts after it.
    public var head: FeedPosition

    public init(items: [FeedItem], hasMore: Bool, head: FeedPosition, version: FeedVersion = 0) {
        self.items = items
        self.hasMore = hasMore
        self.head = head
        self.version = version
    }
}

/// Where an item stands in the order the feed gained its items: 1, 2, 3… with no gaps, each
/// new item taking the next. Positions are visible in order: a reader that has seen position
/// p never later finds a new item at p or below, so "new since p" is exact and counts as
/// `head − p`. A republished id keeps its position, whatever its new date: the list is
/// ordered by position, so paging by positions never skips nor repeats an item that was
/// republished between two pages. 0 is the head of an empty feed.
public typealias FeedPosition = Int64

/// A feed's change number: every change the store makes to a feed (an item published,
/// edited or removed) takes the next one, 1, 2, 3…, so a reader that has seen the feed as of
/// version v asks for what changed after it. Positions order the list; versions order its
/// changes. 0 is the version of a feed with none.
public typealias FeedVersion = Int64

/// The newest position of the feed and the newest item it still holds (the one at that
/// position, unless it was removed), with the feed's version.
public struct FeedHead: Sendable, Equatable {
    public var position: FeedPosition
    public var item: FeedItem
    public var version: FeedVersion

    public init(position: FeedPosition, item: FeedItem, version: FeedVersion = 0) {
        self.position = position
        self.item = item
        self.version = version
    }
}

/// One change to an item a page may show: its new content, where it stands, or its removal.
public enum FeedChange: Sendable, Equatable {
    /// The item as it now is, with its position and version.
    case update(FeedItem)
    /// The item left the feed: a tombstone of its id, the position it had and the version
    /// of its removal.
    case remove(id: String, position: FeedPosition, version: FeedVersion)

    public var version: FeedVersion {
        switch self {
        case .update(let item): item.version ?? 0
        case .remove(_, _, let version): version
        }
    }

    public var position: FeedPosition {
        switch self {
        case .update(let item): item.position ?? 0
        case .remove(_, let position, _): position
        }
    }

    public var id: String {
        switch self {
        case .update(let item): item.id
        case .remove(let id, _, _): id
        }
    }
}

/// What changed in some positions of a feed after a version, net: each item's newest change
/// (its last edit, or its removal), in version order.
public struct FeedChanges: Sendable, Equatable {
    public var changes: [FeedChange]
    /// The feed's version when they were read: a reader that applies them has seen every
    /// change of those positions up to it.
    public var version: FeedVersion

    public init(changes: [FeedChange], version: FeedVersion) {
        self.changes = changes
        self.version = version
    }
}

/// What one write did to a feed.
public struct FeedWrite: Sendable, Equatable {
    /// The items as stored, with their positions and versions, in the order given.
    public var stored: [FeedItem]
    /// The head the write's new items made, when it added any and the store knows it without
    /// another read (`nil`: whoever needs the head reads it).
    public var head: FeedHead?
    /// How many items it added.
    public var added: Int
    /// The changes it made to items the feed already held (edits and removals), which the
    /// pages that show them are told of.
    public var changes: [FeedChange]
    /// The feed's version after the write; 0 when the store does not say.
    public var version: FeedVersion

    public init(stored: [FeedItem], head: FeedHead? = nil, added: Int = 0, changes: [FeedChange] = [], version: FeedVersion = 0) {
        self.stored = stored
        self.head = head
        self.added = added
        self.changes = changes
        self.version = version
    }
}

/// An edit or a removal of an id the feed does not hold.
public struct FeedItemNotFound: Error, Equatable, Sendable {
    public let id: String

    public init(id: String) {
        self.id = id
    }
}

/// An edit or a removal asked to apply to a version of the item that is not its current one
/// (`If-Match`): nothing was changed.
public struct FeedVersionMismatch: Error, Equatable, Sendable {
    /// The item's current version.
    public let current: FeedVersion

    public init(current: FeedVersion) {
        self.current = current
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
        if let version = item.version { field("version", Int(version)) }
        endObject()
    }

    public mutating func items(_ items: [FeedItem]) {
        beginArray()
        for item in items { self.item(item) }
        endArray()
    }
}
