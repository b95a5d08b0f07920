import Foundation
import RefreshJSON

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads RSS 2.0 (and RSS 1.0 / RDF), Atom 1.0 and JSON Feed 1.1, told apart by their
/// content rather than their `Content-Type`, which upstreams often get wrong. Titles and
/// summaries come out as plain text: markup is stripped, entities decoded. Items come out as
/// the feed has them; ``ItemRules/admit(_:base:)`` then holds them to the limits.
enum FeedParser {
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    /// One entry of a feed: an item, or what could not be one and is counted as skipped.
    enum Entry: Equatable {
        /// `dated`: the feed gives the item a date that could be read. One without is dated
        /// now, and the store keeps the date it was first seen with (``UpstreamStore``).
        case item(FeedItem, dated: Bool)
        case unusable(ItemRules.SkipReason)

        var item: FeedItem? {
            if case .item(let item, _) = self { return item }
            return nil
        }
    }

    /// The feed's entries in its order.
    static func entries(_ data: Data, source: String) throws -> [Entry] {
        guard let first = data.first(where: { !" \t\r\n\u{FEFF}".utf8.contains($0) && $0 != 0xEF && $0 != 0xBB && $0 != 0xBF }) else {
            throw Malformed(description: "it is empty")
        }
        switch first {
        case UInt8(ascii: "{"): return try parseJSONFeed(data, source: source)
        case UInt8(ascii: "<"): return try parseXML(data, source: source)
        default: throw Malformed(description: "it is neither XML nor JSON")
        }
    }

    /// The feed's items, without what could not be one.
    static func parse(_ data: Data, source: String) throws -> [FeedItem] {
        try entries(data, source: source).compactMap(\.item)
    }

    // MARK: - JSON Feed

    /// Read with the server's own strict parser, which tells `true` from `1` (Foundation's
    /// reads both as a number). An item's `id` is a string, as JSON Feed 1.1 says; a whole
    /// number is taken as its decimal text (JSON Feed 1.0 asked readers to coerce numbers);
    /// any other kind of id leaves the item out (``ItemRules/SkipReason/id``).
    private static func parseJSONFeed(_ data: Data, source: String) throws -> [Entry] {
        guard case .object(let root) = try? JSONParser.parse(Array(data)) else {
            throw Malformed(description: "it is not valid JSON")
        }
        guard case .string(let version)? = root["version"], version.hasPrefix("https://jsonfeed.org/version/") else {
            throw Malformed(description: "it is JSON but not a JSON Feed (no jsonfeed.org version)")
        }
        guard case .array(let entries)? = root["items"] else { throw Malformed(description: "a JSON Feed needs an items array") }
        func string(_ value: JSONValue?) -> String? {
            if case .string(let text)? = value { return text }
            return nil
        }
        func firstAuthor(_ object: [String: JSONValue]) -> String? {
            if case .array(let authors)? = object["authors"], case .object(let first)? = authors.first { return string(first["name"]) }
            if case .object(let author)? = object["author"] { return string(author["name"]) }
            return nil
        }
        let feedAuthor = firstAuthor(root)
        return entries.compactMap { value in
            guard case .object(let entry) = value else { return nil }
            let id: String
            switch entry["id"] {
            case .string(let text)?: id = text
            case .number(let number)?:
                guard number == number.rounded(), abs(number) < 9_007_199_254_740_992 else { return .unusable(.id) }
                id = String(Int64(number))
            case nil, .null?:
                guard let url = string(entry["url"]) else { return nil }
                id = url
            default: return .unusable(.id)
            }
            let title = PlainText.from(string(entry["title"])) ?? PlainText.from(string(entry["content_text"])).map { String($0.prefix(120)) }
            guard let title else { return nil }
            let summary =
                PlainText.from(string(entry["summary"])) ?? PlainText.from(string(entry["content_text"]))
                ?? PlainText.from(string(entry["content_html"]))
            let published =
                string(entry["date_published"]).flatMap { Timestamp(rfc3339: $0) }
                ?? string(entry["date_modified"]).flatMap { Timestamp(rfc3339: $0) }
            return .item(
                FeedItem(
                    id: id, title: title, summary: summary, link: string(entry["url"]), author: firstAuthor(entry) ?? feedAuthor,
                    published: published ?? Timestamp.now()), dated: published != nil)
        }
    }

    // MARK: - RSS and Atom

    private static func parseXML(_ data: Data, source: String) throws -> [Entry] {
        let reader = XMLFeedReader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        guard parser.parse(), !reader.mismatched, reader.isBalanced else {
            if reader.mismatched || !reader.isBalanced, parser.parserError == nil {
                throw Malformed(description: "it is not well-formed XML (unbalanced tags near line \(parser.lineNumber))")
            }
            let reason = parser.parserError.map { ($0 as NSError).localizedDescription } ?? "unknown error"
            throw Malformed(description: "it is not well-formed XML (line \(parser.lineNumber): \(reason))")
        }
        guard reader.kind != nil else {
            throw Malformed(description: "it is XML but not RSS or Atom (root <\(reader.root ?? "?")>)")
        }
        return reader.entries
    }
}

/// Collects entries from RSS (`<item>`) or Atom (`<entry>`) as the parser walks the document.
private final class XMLFeedReader: NSObject, XMLParserDelegate {
    enum Kind { case rss, atom }

    var root: String?
    var kind: Kind?
    var entries: [FeedParser.Entry] = []
    /// An end tag that does not close the open element: some parsers recover, we refuse.
    private(set) var mismatched = false
    var isBalanced: Bool { path.isEmpty }
    private var entry: [String: String]?
    private var text = ""
    private var path: [String] = []

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:])
    {
        if root == nil {
            root = name
            switch name.lowercased() {
            case "rss", "rdf:rdf": kind = .rss
            case "feed": kind = .atom
            default: parser.abortParsing()
            }
        }
        path.append(name)
        text = ""
        if name == "item" || name == "entry" {
            entry = [:]
            // RSS 1.0 names an item by its rdf:about attribute; a <guid> or <id> inside wins.
            if let about = attributes["rdf:about"], !about.isEmpty { entry?["about"] = about }
        } else if entry != nil, name == "link", let href = attributes["href"] {
            let rel = attributes["rel"] ?? "alternate"
            if rel == "alternate" || entry?["link"] == nil { entry?["link"] = href }
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        text += string
    }

    func parser(_ parser: XMLParser, foundCDATA block: Data) {
        text += String(decoding: block, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard path.last == name else {
            mismatched = true
            parser.abortParsing()
            return
        }
        defer {
            path.removeLast()
            text = ""
        }
        guard entry != nil else { return }
        if name == "item" || name == "entry" {
            if let item = makeEntry() { entries.append(item) }
            entry = nil
            return
        }
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !value.isEmpty else { return }
        let parent = path.count >= 2 ? path[path.count - 2] : ""
        let key: String? =
            switch name {
            case "title" where parent == "item" || parent == "entry": "title"
            case "link" where parent == "item": "link"
            case "guid": "id"
            case "id" where parent == "entry": "id"
            case "description", "summary": "summary"
            case "content", "content:encoded": entry?["summary"] == nil ? "summary" : nil
            case "pubDate", "published", "dc:date": "published"
            case "updated": entry?["published"] == nil ? "published" : nil
            case "author", "dc:creator": "author"
            case "name" where parent == "author": "author"
            default: nil
            }
        let preferred = (key == "summary" && (name == "description" || name == "summary")) || name == "published" || name == "pubDate"
        if let key, entry?[key] == nil || preferred {
            entry?[key] = value
        }
    }

    private func makeEntry() -> FeedParser.Entry? {
        guard let entry else { return nil }
        let title = PlainText.from(entry["title"]) ?? PlainText.from(entry["summary"]).map { String($0.prefix(120)) }
        guard let title else { return nil }
        let id = entry["id"] ?? entry["about"] ?? entry["link"] ?? title
        let published = entry["published"].flatMap { Timestamp(rfc3339: $0) ?? Timestamp(rfc822: $0) }
        // Lengths and links are held to ItemRules with the other formats' items, in one place.
        return .item(
            FeedItem(
                id: id, title: title, summary: PlainText.from(entry["summary"]), link: entry["link"],
                author: PlainText.from(entry["author"]), published: published ?? Timestamp.now()),
            dated: published != nil)
    }
}

/// Markup from upstreams made into text: tags dropped, entities decoded, white space
/// folded. What remains is shown with `textContent`, never parsed as HTML.
enum PlainText {
    static func from(_ markup: String?) -> String? {
        guard let markup else { return nil }
        var text = ""
        var inTag = false
        for character in markup {
            if character == "<" {
                inTag = true
                continue
            }
            if character == ">", inTag {
                inTag = false
                text.append(" ")
                continue
            }
            if !inTag { text.append(character) }
        }
        let folded = decodingEntities(text).split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return folded.isEmpty ? nil : folded
    }

    /// Decodes every entity in one pass from left to right, so what one entity decodes to is
    /// never read as the start of another (`&amp;lt;` is `&lt;`, whatever the order of a
    /// table). Numeric ones (`&#8217;`, `&#x2019;`) and the named ones feeds use; anything
    /// else, or a code point that is not a character, stays as written.
    static func decodingEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var decoded = ""
        var rest = Substring(text)
        while let ampersand = rest.firstIndex(of: "&") {
            decoded += rest[..<ampersand]
            let after = rest.index(after: ampersand)
            if let semicolon = rest[after...].prefix(12).firstIndex(of: ";"),
                let character = character(for: rest[after..<semicolon])
            {
                decoded.append(character)
                rest = rest[rest.index(after: semicolon)...]
            } else {
                decoded.append("&")
                rest = rest[after...]
            }
        }
        decoded += rest
        return decoded
    }

    private static func character(for name: Substring) -> Character? {
        if name.hasPrefix("#") {
            let digits = name.dropFirst()
            let value = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
            guard let value, value != 0, let scalar = Unicode.Scalar(value) else { return nil }
            return Character(scalar)
        }
        return named[String(name)]
    }

    private static let named: [String: Character] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": " ",
        "lsquo": "‘", "rsquo": "’", "ldquo": "“", "rdquo": "”", "sbquo": "‚", "bdquo": "„",
        "ndash": "–", "mdash": "—", "hellip": "…", "bull": "•", "middot": "·", "laquo": "«", "raquo": "»",
        "copy": "©", "reg": "®", "trade": "™", "deg": "°", "euro": "€", "pound": "£", "yen": "¥", "cent": "¢",
        "times": "×", "divide": "÷", "para": "¶", "sect": "§", "shy": "\u{AD}",
    ]
}

extension Timestamp {
    /// RFC 822 / 1123 dates as RSS uses them: `Sun, 22 Nov 2026 08:00:00 GMT`, `+0100`, two-digit years.
    init?(rfc822 text: String) {
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        var parts = text.replacingOccurrences(of: ",", with: " ").split(separator: " ").map(String.init)
        if let first = parts.first, Int(first) == nil { parts.removeFirst() }
        guard parts.count >= 4, let day = Int(parts[0]), let monthIndex = months.firstIndex(of: String(parts[1].prefix(3)).lowercased()),
            var year = Int(parts[2])
        else { return nil }
        if year < 100 { year += year < 70 ? 2000 : 1900 }
        let clock = parts[3].split(separator: ":").compactMap { Int($0) }
        guard clock.count >= 2 else { return nil }
        let zone = parts.count > 4 ? parts[4].uppercased() : "GMT"
        let offsets = [
            "GMT": 0, "UT": 0, "UTC": 0, "Z": 0, "EST": -300, "EDT": -240, "CST": -360, "CDT": -300, "MST": -420, "MDT": -360, "PST": -480,
            "PDT": -420,
        ]
        var offset = offsets[zone]
        if offset == nil, zone.count == 5, let value = Int(zone.dropFirst()) {
            offset = (zone.hasPrefix("-") ? -1 : 1) * (value / 100 * 60 + value % 100)
        }
        let pad = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        let second = clock.count > 2 ? clock[2] : 0
        let minutes = offset ?? 0
        let sign = minutes < 0 ? "-" : "+"
        let stamp =
            "\(year)-\(pad(monthIndex + 1))-\(pad(day))T\(pad(clock[0])):\(pad(clock[1])):\(pad(second))\(sign)\(pad(abs(minutes) / 60)):\(pad(abs(minutes) % 60))"
        self.init(rfc3339: stamp)
    }
}
