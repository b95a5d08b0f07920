import RefreshJSON

/// What a commit that moved a feed's head `NOTIFY`s: the feed, its new head and, when it
/// fits in a notice, the head's item, as `NAME HEAD ITEM` (a name holds no space; the item is
/// the JSON object the publish function stored, `published` in milliseconds). A listener
/// skips a notice it already knows of without a read, and one that carries its item needs no
/// read at all: each instance watching the feed would otherwise read the head once per
/// publish. A notice without the item (`NAME HEAD`: an item too long for PostgreSQL's 8000
/// bytes, or the v3 function) is read as before.
///
/// An instance of a version before the item travelled (the schema's v3) parses `NAME HEAD`
/// but not the form with the item, and one before the feeds parses neither: either reads the
/// heads it watches on every notice it cannot parse, losing no news but falling behind under
/// a heavy stream of publishes, so it is best replaced soon. One from before the feeds must
/// not write at all, though: its statements know one head row and no feed column, and would
/// write across feeds. The schema's feeds migration therefore takes a stop of every older
/// instance (README, "Upgrading").
struct HeadNotice: Equatable, Sendable {
    let feed: FeedName
    let head: FeedPosition
    /// The item at `head`, when the notice carried it whole.
    let item: FeedItem?

    /// The form without the item, as the v3 function wrote it and the v4 one writes for an
    /// item too long to travel.
    var payload: String { "\(feed.rawValue) \(head)" }

    init(feed: FeedName, head: FeedPosition, item: FeedItem? = nil) {
        self.feed = feed
        self.head = head
        self.item = item.map { item in
            var item = item
            item.position = head
            return item
        }
    }

    /// `nil` for a payload that is not a notice (sent by hand, or by another version). An
    /// item that does not read as one is left out, so the head is read instead of trusted.
    init?(payload: String) {
        let parts = payload.utf8.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, let feed = FeedName(String(Substring(parts[0]))), let head = FeedPosition(Substring(parts[1])) else {
            return nil
        }
        self.init(feed: feed, head: head, item: parts.count == 3 ? Self.item(Array(parts[2])) : nil)
    }

    /// The publish function's item object, with every field ``ItemRules`` asks of a stored one.
    private static func item(_ json: [UInt8]) -> FeedItem? {
        guard case .object(let fields)? = try? JSONParser.parse(json),
            case .string(let id)? = fields["id"], case .string(let title)? = fields["title"],
            case .number(let milliseconds)? = fields["published"], abs(milliseconds) <= JSONValue.largestExactInteger,
            let published = Int64(exactly: milliseconds),
            let summary = optionalText(fields["summary"]), let link = optionalText(fields["link"]),
            let author = optionalText(fields["author"])
        else { return nil }
        return FeedItem(id: id, title: title, summary: summary, link: link, author: author, published: Timestamp(milliseconds: published))
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
