enum ItemDecoding {
    static let maxItems = 500

    /// One item, or `{"items": [...]}`; missing ids and times are filled in.
    static func decode(_ body: JSONValue, now: Timestamp) throws(APIError) -> [FeedItem] {
        let root = try JSONFields(body, path: "")
        guard root.has("items") else { return [try item(body, path: "", now: now, index: 0)] }
        let elements = try root.array("items") ?? []
        guard !elements.isEmpty else { throw .invalid("items", "must not be empty") }
        guard elements.count <= maxItems else { throw .outOfRange("items holds \(elements.count) items; at most \(maxItems) per request.") }
        var items: [FeedItem] = []
        for (index, element) in elements.enumerated() {
            items.append(try item(element, path: "items[\(index)]", now: now, index: index))
        }
        return items
    }

    private static func item(_ value: JSONValue, path: String, now: Timestamp, index: Int) throws(APIError) -> FeedItem {
        let fields = try JSONFields(value, path: path)
        try fields.rejectUnknown(["id", "title", "summary", "link", "author", "published"])
        let title = try text(fields, "title", limit: 500, required: true)!
        let published: Timestamp
        if let text = try fields.string("published") {
            guard let parsed = Timestamp(rfc3339: text) else {
                throw .invalid(fields.fieldPath("published"), "must be an RFC 3339 time such as 2026-11-22T08:00:00Z")
            }
            published = parsed
        } else {
            published = now
        }
        let link = try text(fields, "link", limit: 2000, required: false)
        if let link {
            let lower = link.lowercased()
            guard lower.hasPrefix("https://") || lower.hasPrefix("http://"), !link.contains(where: \.isWhitespace) else {
                throw .invalid(fields.fieldPath("link"), "must be an http or https URL")
            }
        }
        let id = try text(fields, "id", limit: 200, required: false) ?? generatedID(now: now, index: index)
        return FeedItem(
            id: id, title: title, summary: try text(fields, "summary", limit: 5000, required: false), link: link,
            author: try text(fields, "author", limit: 200, required: false), published: published)
    }

    private static func text(_ fields: JSONFields, _ key: String, limit: Int, required: Bool) throws(APIError) -> String? {
        guard let text = try fields.string(key) else {
            if required { throw .missing(fields.fieldPath(key), expected: "a string") }
            return nil
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            if required { throw .invalid(fields.fieldPath(key), "must not be empty") }
            return nil
        }
        guard trimmed.count <= limit else { throw .invalid(fields.fieldPath(key), "must be at most \(limit) characters") }
        return trimmed
    }

    private static func generatedID(now: Timestamp, index: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return "item-\(now.milliseconds)-\(index)-\(String(generator.next() as UInt32, radix: 36))"
    }
}

import Foundation
