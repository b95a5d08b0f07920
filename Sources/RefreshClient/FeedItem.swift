import Foundation

/// An item of a feed, as the server stores and serves it.
public struct FeedItem: Sendable, Hashable, Identifiable, Codable {
    /// Unique within its feed; compared by its bytes.
    public var id: String
    /// Plain text, never markup.
    public var title: String
    public var summary: String?
    public var link: String?
    public var author: String?
    public var published: Date
    /// Where the item stands in its feed (1, 2, 3… in the order the feed gained its items),
    /// which orders the list; a republish never moves it.
    public var position: Int?
    /// The feed's change that made the item as it is: its publish, or its last edit.
    public var version: Int?

    public init(
        id: String, title: String, summary: String? = nil, link: String? = nil, author: String? = nil, published: Date, position: Int? = nil,
        version: Int? = nil
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
}

/// An item to publish. One without `published` is given the time it is stored; one with an
/// id the feed has replaces it. One without `id` is given one: by ``RefreshClient/publish(_:to:attempts:)``
/// before its first attempt (so that a retry stores it once), by the server when it is
/// published with a single attempt.
public struct NewItem: Sendable, Hashable, Codable {
    public var id: String?
    public var title: String
    public var summary: String?
    public var link: String?
    public var author: String?
    public var published: Date?

    public init(id: String? = nil, title: String, summary: String? = nil, link: String? = nil, author: String? = nil, published: Date? = nil) {
        self.id = id
        self.title = title
        self.summary = summary
        self.link = link
        self.author = author
        self.published = published
    }
}

/// A page of a feed, newest first.
public struct ItemPage: Sendable, Hashable {
    public var items: [FeedItem]
    /// Older items remain below the page.
    public var hasMore: Bool

    public init(items: [FeedItem], hasMore: Bool) {
        self.items = items
        self.hasMore = hasMore
    }
}
