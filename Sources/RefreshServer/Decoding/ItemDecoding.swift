import Foundation
import RefreshFeed
import RefreshJSON

enum ItemDecoding {
    static let maxItems = 500

    /// An item as `POST /api/items` takes it: only `title` is required.
    struct Input: Decodable {
        var id: String?
        var title: String?
        var summary: String?
        var link: String?
        var author: String?
        var published: String?
    }

    private struct Batch: Decodable {
        var items: [Input]
    }

    /// One item, or `{"items": [...]}`; missing ids and times are filled in.
    static func decode(_ body: JSONValue, now: Timestamp) throws(APIError) -> [FeedItem] {
        let decoder = JSONValueDecoder<APIError>()
        guard case .object(let members) = body, let batch = members["items"], batch != .null else {
            return [try item(try decoder.decode(Input.self, from: body), path: "", now: now, index: 0)]
        }
        // Counted before any item is read, so an oversized batch costs nothing more.
        if case .array(let elements) = batch {
            guard !elements.isEmpty else { throw .invalid("items", "must not be empty") }
            guard elements.count <= maxItems else { throw .outOfRange("items holds \(elements.count) items; at most \(maxItems) per request.") }
        }
        var items: [FeedItem] = []
        for (index, input) in try decoder.decode(Batch.self, from: body).items.enumerated() {
            items.append(try item(input, path: "items[\(index)]", now: now, index: index))
        }
        return items
    }

    /// The body of `PUT …/items/{id}`: the item's new fields, which replace all of its
    /// current ones (a field left out is removed), but `published` when left out (the item
    /// keeps its time) and `id`, which must be the path's when given.
    static func replacement(_ body: JSONValue, of current: FeedItem) throws(APIError) -> FeedItem {
        guard case .object = body else { throw .wrongType("The body", expected: "an object", got: body) }
        let input = try JSONValueDecoder<APIError>().decode(Input.self, from: body)
        if let id = input.id, !id.utf8.elementsEqual(current.id.utf8) { throw .invalid("id", "must be the item's id in the path, or left out") }
        var replaced = try item(input, path: "", now: current.published, index: 0)
        replaced.id = current.id
        return replaced
    }

    /// The members a merge patch of an item may name.
    static let patchable: Set<String> = ["title", "summary", "link", "author", "published"]

    /// The item `current` with the JSON merge patch `body` applied (RFC 7396): a member sets
    /// its field, `null` removes it; `title` and `published` cannot be removed, `id` cannot
    /// change, and a member the item has not is refused rather than dropped.
    static func patched(_ body: JSONValue, of current: FeedItem) throws(APIError) -> FeedItem {
        guard case .object(let members) = body else {
            throw .invalid("The body", "must be a JSON merge patch: an object of the fields to change")
        }
        if members["id"] != nil { throw .invalid("id", "cannot be changed: the id names the item") }
        if let unknown = members.keys.sorted().first(where: { !patchable.contains($0) }) {
            throw .invalid(unknown, "is not a field of an item (title, summary, link, author, published)")
        }
        var input = Input(
            id: current.id, title: current.title, summary: current.summary, link: current.link, author: current.author,
            published: current.published.rfc3339)
        for (key, value) in members {
            let text: String?
            switch value {
            case .null:
                guard key != "title", key != "published" else { throw .invalid(key, "cannot be removed") }
                text = nil
            case .string(let string): text = string
            default: throw .wrongType(key, expected: "a string or null", got: value)
            }
            switch key {
            case "title": input.title = text
            case "summary": input.summary = text
            case "link": input.link = text
            case "author": input.author = text
            default: input.published = text
            }
        }
        return try item(input, path: "", now: current.published, index: 0)
    }

    private static func item(_ input: Input, path: String, now: Timestamp, index: Int) throws(APIError) -> FeedItem {
        func field(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
        let title = try text(input.title, .title, field("title"), required: true)!
        let published: Timestamp
        if let text = input.published {
            guard let parsed = Timestamp(rfc3339: text) else {
                throw .invalid(field("published"), "must be an RFC 3339 time such as 2026-11-22T08:00:00Z")
            }
            published = parsed
        } else {
            published = now
        }
        // Given here, before the store is asked: a publish answered 503 names it, and a
        // retry with it replaces rather than adds.
        let id = try text(input.id, .id, field("id"), required: false) ?? generatedID(now: now, index: index)
        return FeedItem(
            id: id, title: title, summary: try text(input.summary, .summary, field("summary"), required: false),
            link: try text(input.link, .link, field("link"), required: false),
            author: try text(input.author, .author, field("author"), required: false), published: published)
    }

    /// A field held to ``ItemRules``; an empty optional one counts as absent. Text a page
    /// shows (title, summary, author) is trimmed of surrounding white space first. An id is
    /// kept byte for byte, since ids are compared by their bytes: trimmed, `"a"` and `"a "`
    /// would be one item, each publish replacing the other. A link is kept as given too, so
    /// white space in it is refused, as the rules say, rather than cut off.
    private static func text(_ text: String?, _ rule: ItemRules.Field, _ path: String, required: Bool) throws(APIError) -> String? {
        guard let text else {
            if required { throw .missing(path, expected: "a string") }
            return nil
        }
        let trimmed = rule == .id || rule == .link ? text : text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            if required { throw .invalid(path, "must not be empty") }
            return nil
        }
        if let violation = ItemRules.violation(of: trimmed, as: rule) { throw .invalid(path, violation.reason) }
        return trimmed
    }

    private static func generatedID(now: Timestamp, index: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return "item-\(now.milliseconds)-\(index)-\(String(generator.next() as UInt32, radix: 36))"
    }
}
