import RefreshJSON

/// What a commit that changed a feed `NOTIFY`s: the feed, its head, its version and, when
/// they fit in a notice, what the commit did, as `NAME HEAD VERSION {"from", "item",
/// "changes"}` (a name holds no space): `from` is the feed's version before the commit, `item`
/// the newest item it added, `changes` the edits and removals it made, each the JSON the
/// store's functions write (`published` in milliseconds). A listener skips a notice it
/// already knows of without a read, and one that carries what it did needs no read at all:
/// each instance watching the feed would otherwise read the head once per publish. A notice
/// without the JSON (past PostgreSQL's 8000 bytes) is read: the head, and what changed since
/// the version the listener knew.
///
/// Older instances' forms are read too, for a rolling upgrade: `NAME HEAD ITEM` (the schema's
/// v4 and v5) and `NAME HEAD` (v3), which say nothing of versions. An instance of v4 or v5
/// reading the new form takes `VERSION …` for an item it cannot read and reads the head, as
/// for a notice without one; one from before the feeds must not write at all (docs/many-instances.md,
/// "Upgrading").
struct HeadNotice: Equatable, Sendable {
    let feed: FeedName
    let head: FeedPosition
    /// The newest item the commit added, when the notice carried it whole.
    let item: FeedItem?
    /// The feed's version after the commit; `nil` in an older instance's notice.
    let version: FeedVersion?
    /// The feed's version before it, when the notice said.
    let from: FeedVersion?
    /// The edits and removals it made, when the notice carried them.
    let changes: [FeedChange]?

    /// The form without the JSON.
    var payload: String {
        version.map { "\(feed.rawValue) \(head) \($0)" } ?? "\(feed.rawValue) \(head)"
    }

    init(
        feed: FeedName, head: FeedPosition, item: FeedItem? = nil, version: FeedVersion? = nil, from: FeedVersion? = nil,
        changes: [FeedChange]? = nil
    ) {
        self.feed = feed
        self.head = head
        self.item = item.map { item in
            var item = item
            item.position = item.position ?? head
            return item
        }
        self.version = version
        self.from = from
        self.changes = changes
    }

    /// `nil` for a payload that is not a notice (sent by hand, or by another version). What
    /// does not read as an item or a change is left out, so it is read instead of trusted.
    init?(payload: String) {
        let parts = payload.utf8.split(separator: UInt8(ascii: " "), maxSplits: 3, omittingEmptySubsequences: false).map(Array.init)
        guard parts.count >= 2, let feed = FeedName(String(decoding: parts[0], as: UTF8.self)),
            let head = FeedPosition(String(decoding: parts[1], as: UTF8.self))
        else { return nil }
        guard parts.count >= 3 else {
            self.init(feed: feed, head: head)
            return
        }
        if parts[2].first == UInt8(ascii: "{") {
            // An older instance's `NAME HEAD ITEM` (the item may itself hold spaces).
            let item = Array(payload.utf8.dropFirst(parts[0].count + parts[1].count + 2))
            self.init(feed: feed, head: head, item: Self.item(item))
            return
        }
        guard let version = FeedVersion(String(decoding: parts[2], as: UTF8.self)) else {
            // Neither a version nor an item: what it moved is read.
            self.init(feed: feed, head: head)
            return
        }
        guard parts.count == 4, case .object(let fields)? = try? JSONParser.parse(parts[3]) else {
            self.init(feed: feed, head: head, version: version)
            return
        }
        let from: FeedVersion? =
            if case .number(let number)? = fields["from"] { FeedVersion(exactly: number) } else { nil }
        var changes: [FeedChange]?
        if case .array(let list)? = fields["changes"] {
            let read = list.compactMap(Self.change)
            // A change that did not read is not guessed at: the listener reads them all.
            changes = read.count == list.count ? read : nil
        } else if fields["changes"] == nil {
            changes = []
        }
        let item: FeedItem? = if case .object? = fields["item"] { Self.item(fields["item"]!) } else { nil }
        self.init(feed: feed, head: head, item: item, version: version, from: from, changes: changes)
    }

    private static func item(_ json: [UInt8]) -> FeedItem? {
        (try? JSONParser.parse(json)).flatMap(item)
    }

    /// An item object of the store's functions, with every field ``ItemRules`` asks of a
    /// stored one.
    private static func item(_ value: JSONValue) -> FeedItem? {
        guard case .object(let fields) = value,
            case .string(let id)? = fields["id"], case .string(let title)? = fields["title"],
            let published = integer(fields["published"]),
            let summary = optionalText(fields["summary"]), let link = optionalText(fields["link"]),
            let author = optionalText(fields["author"])
        else { return nil }
        return FeedItem(
            id: id, title: title, summary: summary, link: link, author: author, published: Timestamp(milliseconds: published),
            position: integer(fields["position"]), version: integer(fields["version"]))
    }

    /// An edit (the item, with its position and version) or a removal (`removed`: its id).
    private static func change(_ value: JSONValue) -> FeedChange? {
        guard case .object(let fields) = value else { return nil }
        if case .string(let id)? = fields["removed"] {
            guard let position = integer(fields["position"]), let version = integer(fields["version"]) else { return nil }
            return .remove(id: id, position: position, version: version)
        }
        guard let item = item(value), item.position != nil, item.version != nil else { return nil }
        return .update(item)
    }

    private static func integer(_ value: JSONValue?) -> Int64? {
        guard case .number(let number)? = value, abs(number) <= JSONValue.largestExactInteger else { return nil }
        return Int64(exactly: number)
    }

    /// `.some(nil)` for a field absent or `null`, `nil` for one that is not text.
    private static func optionalText(_ value: JSONValue?) -> String?? {
        switch value {
        case nil, .null?: .some(nil)
        case .string(let text)?: .some(text)
        default: nil
        }
    }
}
