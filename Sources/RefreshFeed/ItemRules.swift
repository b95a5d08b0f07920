import Foundation

/// The limits every item keeps, whichever way it came: published through the API (a field
/// that breaks one is refused with `400`), pulled from an RSS, Atom or JSON Feed upstream (an
/// over-long text is cut, an item whose id or link cannot be kept is skipped and counted), or
/// handed to a store by code (refused with ``InvalidFeedItem``). One table, so the API, the
/// upstreams and the stores can never disagree on what an item may hold.
///
/// Lengths count Unicode scalars, as JSON Schema's `maxLength` counts code points, and not
/// `Character`s: one grapheme can carry any number of combining marks, so a limit in
/// characters would bound nothing. At 4 bytes a scalar at most, an id stays within 2,000
/// bytes, under PostgreSQL's limit for a B-tree entry.
///
/// U+0000 is refused everywhere: SQLite would store a text cut at it and PostgreSQL refuses
/// it, so an item holding one could never be stored as it was acknowledged.
public enum ItemRules {
    public enum Field: String, CaseIterable, Sendable {
        case id, title, summary, link, author
    }

    /// The most Unicode scalars each field may hold.
    public static func maxLength(of field: Field) -> Int {
        switch field {
        case .id: 500
        case .title: 500
        case .summary: 5000
        case .link: 2000
        case .author: 200
        }
    }

    /// A rule a field's value breaks.
    public enum Violation: Equatable, Sendable {
        case empty
        case containsNUL
        case tooLong(limit: Int)
        /// A link that is not an absolute `http` or `https` URL with a host, or holds white
        /// space or control characters.
        case notHTTP

        /// The end of a sentence that starts with the field's name.
        public var reason: String {
            switch self {
            case .empty: "must not be empty"
            case .containsNUL: "must not contain U+0000 (NUL)"
            case .tooLong(let limit): "must be at most \(limit) characters (Unicode code points)"
            case .notHTTP: "must be an http or https URL"
            }
        }
    }

    /// The first rule `value` breaks as `field`, or `nil`.
    public static func violation(of value: String, as field: Field) -> Violation? {
        if value.isEmpty { return .empty }
        if value.utf8.contains(0) { return .containsNUL }
        let limit = maxLength(of: field)
        if !fits(value, within: limit) { return .tooLong(limit: limit) }
        if field == .link, !isHTTPURL(value) { return .notHTTP }
        return nil
    }

    /// The first field of `item` that breaks a rule.
    public static func violation(of item: FeedItem) -> InvalidFeedItem? {
        let fields: [(Field, String?)] = [
            (.id, item.id), (.title, item.title), (.summary, item.summary), (.link, item.link), (.author, item.author),
        ]
        for case (let field, let value?) in fields {
            if let violation = violation(of: value, as: field) { return InvalidFeedItem(id: item.id, field: field, violation: violation) }
        }
        return nil
    }

    /// Throws for the first item of `items` that breaks a rule, so a store stores all of a
    /// batch or none of it.
    public static func check(_ items: [FeedItem]) throws(InvalidFeedItem) {
        for item in items {
            if let invalid = violation(of: item) { throw invalid }
        }
    }

    // MARK: - Upstream items

    /// Why an upstream item was left out; each is counted (`ptr_upstream_items_skipped_total`).
    public enum SkipReason: String, CaseIterable, Sendable {
        /// U+0000 in any field.
        case nul
        /// An id that is empty, over its length, or not a string (or a whole number) in a JSON Feed.
        case id
        /// A link that is over its length or not `http`/`https` once made absolute.
        case link
    }

    /// What a refresh does with one upstream item.
    public enum Admission: Equatable, Sendable {
        /// Stored as given here: over-long text fields cut, the link made absolute.
        case keep(FeedItem, cut: [Field])
        case skip(SkipReason)
    }

    /// An upstream item made to keep the rules: its title, summary and author cut to their
    /// lengths (on a character boundary), a relative link resolved against `base` (the
    /// feed's URL). An id or a link that cannot be kept as it is skips the item, since a cut
    /// id would name another item and a cut link would lead elsewhere.
    public static func admit(_ item: FeedItem, base: URL? = nil) -> Admission {
        let texts = [item.id, item.title, item.summary ?? "", item.link ?? "", item.author ?? ""]
        if texts.contains(where: { $0.utf8.contains(0) }) { return .skip(.nul) }
        if violation(of: item.id, as: .id) != nil { return .skip(.id) }
        var kept = item
        if let link = item.link {
            guard let absolute = absoluteLink(link, base: base), violation(of: absolute, as: .link) == nil else { return .skip(.link) }
            kept.link = absolute
        }
        var cut: [Field] = []
        func fit(_ text: String, _ field: Field) -> String {
            let limit = maxLength(of: field)
            guard !fits(text, within: limit) else { return text }
            cut.append(field)
            return Self.cut(text, toLength: limit)
        }
        kept.title = fit(item.title, .title)
        kept.summary = item.summary.map { fit($0, .summary) }
        kept.author = item.author.map { fit($0, .author) }
        return .keep(kept, cut: cut)
    }

    /// `text` cut to at most `limit` scalars, at the last character boundary that fits (a
    /// character is never split, unless one alone is longer than the limit), without white
    /// space left at its end.
    public static func cut(_ text: String, toLength limit: Int) -> String {
        guard !fits(text, within: limit) else { return text }
        var end = text.startIndex
        var scalars = 0
        for index in text.indices {
            let next = text.index(after: index)
            let length = text.unicodeScalars[index..<next].count
            guard scalars + length <= limit else { break }
            scalars += length
            end = next
        }
        if end == text.startIndex {
            // One character longer than the limit: its first scalars, rather than nothing.
            end = text.unicodeScalars.index(text.unicodeScalars.startIndex, offsetBy: limit)
        }
        var kept = text[..<end]
        while let last = kept.last, last.isWhitespace { kept.removeLast() }
        return String(kept)
    }

    /// Whether `text` holds at most `limit` scalars, without counting past the limit.
    static func fits(_ text: String, within limit: Int) -> Bool {
        // A scalar takes 1 to 4 UTF-8 bytes: most texts are decided by their byte count alone.
        let bytes = text.utf8.count
        if bytes <= limit { return true }
        if bytes > 4 * limit { return false }
        var count = 0
        for _ in text.unicodeScalars {
            count += 1
            if count > limit { return false }
        }
        return true
    }

    /// `http://` or `https://` (any case), then a host, and no white space or control
    /// character anywhere: what a page can put in an `href` without it meaning something else.
    static func isHTTPURL(_ link: String) -> Bool {
        let bytes = link.utf8
        guard !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }), !link.unicodeScalars.contains(where: { $0.properties.isWhitespace })
        else { return false }
        let lower = link.prefix(8).lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = link.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            rest = link.dropFirst(7)
        } else {
            return false
        }
        guard let first = rest.first else { return false }
        return first != "/" && first != "?" && first != "#"
    }

    /// An upstream's link made absolute: one with a scheme stays as it is (and passes or fails
    /// the rules as such); one without is resolved against the feed's URL, as a browser
    /// would resolve it on the feed's page.
    static func absoluteLink(_ link: String, base: URL?) -> String? {
        let trimmed = link.trimmingCharacters(in: .whitespacesAndNewlines)
        if hasScheme(trimmed) { return trimmed }
        guard let base, !trimmed.isEmpty, let resolved = URL(string: trimmed, relativeTo: base)?.absoluteString else { return nil }
        return resolved
    }

    /// RFC 3986: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`.
    private static func hasScheme(_ text: String) -> Bool {
        let scheme = text.utf8.prefix { $0 != UInt8(ascii: ":") }
        guard scheme.count < text.utf8.count, let first = scheme.first else { return false }
        func isLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
        return isLetter(first)
            && scheme.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || "+-.".utf8.contains($0) }
    }
}

/// An item that breaks one of ``ItemRules``: a store refuses the whole batch it is in, and the
/// API answers `400 invalid_value`.
public struct InvalidFeedItem: Error, Equatable, Sendable, CustomStringConvertible {
    public let id: String
    public let field: ItemRules.Field
    public let violation: ItemRules.Violation

    public var description: String {
        "The item's \(field.rawValue) \(violation.reason)."
    }
}
