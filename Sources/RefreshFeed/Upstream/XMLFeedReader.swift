import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Collects the entries of an RSS, RDF, Atom or CDF document as the parser walks it. Elements
/// are known by their namespace, not their prefix (`<r:rss>` is RSS); links resolve against
/// `xml:base`, nested, starting from the feed's URL; text constructs are read as their format
/// says (Atom's `type` and 0.3's `mode`, RSS's de-facto HTML descriptions), and an RSS title
/// is taken for HTML only when it reads as HTML.
final class XMLFeedReader: NSObject, XMLParserDelegate {
    /// The document's entries, or why it is not a feed. `data` is UTF-8 (``FeedEncoding``).
    static func read(_ data: Data, base: URL?) throws -> [FeedParser.Entry] {
        let reader = XMLFeedReader(base: base)
        let parser = XMLParser(data: data)
        parser.delegate = reader
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        let parsed = parser.parse()
        if let root = reader.notAFeed {
            throw FeedParser.Malformed(description: "it is XML but not RSS, Atom or CDF (root <\(root)>)")
        }
        guard parsed, !reader.mismatched, reader.isBalanced else {
            if reader.mismatched || !reader.isBalanced, parser.parserError == nil {
                throw FeedParser.Malformed(description: "it is not well-formed XML (unbalanced tags near line \(parser.lineNumber))")
            }
            let reason = parser.parserError.map { ($0 as NSError).localizedDescription } ?? "unknown error"
            throw FeedParser.Malformed(description: "it is not well-formed XML (line \(parser.lineNumber): \(reason))")
        }
        return reader.entries
    }

    private enum Kind { case rss, atom, cdf }

    /// How a text construct's content is to be read.
    private enum Markup {
        case text, html, xhtml
        /// HTML if it reads as HTML (an RSS title), else text.
        case guess
    }

    /// A field of an entry.
    private enum Term {
        case title, dcTitle, summary, content, link, guid, id, identifier, published, updated, author, authorName
    }

    /// The text construct being read: its descendants' text goes to `text`.
    private struct Capture {
        var term: Term
        var markup: Markup
        var base64: Bool
        var depth: Int
        var text = ""
    }

    /// What an entry has said so far.
    private struct Fields {
        var depth: Int
        var texts: [Term: String] = [:]
        var link: String?
        /// The rank of the link taken: an alternate HTML page beats an alternate, which beats any.
        var linkRank = -1
        var permalink: String?
        var published: [String] = []
        var updated: [String] = []
    }

    private let documentBase: URL?
    private var kind: Kind?
    /// The root's namespace: a prefixed RSS root's children share it.
    private var rootNamespace = ""
    private(set) var notAFeed: String?
    private(set) var entries: [FeedParser.Entry] = []
    /// An end tag that does not close the open element: some parsers recover, we refuse.
    private(set) var mismatched = false
    var isBalanced: Bool { path.isEmpty }
    /// The open elements' local names, and the `xml:base` in effect in each.
    private var path: [String] = []
    private var bases: [URL?] = []
    private var entry: Fields?
    private var capture: Capture?
    private var text = ""
    /// The feed's own author (Atom's `feed/author`), for entries without one.
    private var feedAuthor: String?
    private var inFeedAuthor = false

    private init(base: URL?) {
        documentBase = base
    }

    // MARK: - Namespaces

    private static let atom10 = "http://www.w3.org/2005/Atom"
    private static let atom03 = "http://purl.org/atom/ns#"
    private static let rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    private static let rss10 = "http://purl.org/rss/1.0/"
    private static let rss09 = "http://my.netscape.com/rdf/simple/0.9/"
    private static let dc = "http://purl.org/dc/elements/1.1/"
    private static let dcterms = "http://purl.org/dc/terms/"
    private static let content = "http://purl.org/rss/1.0/modules/content/"

    private func isFeedNamespace(_ namespace: String) -> Bool {
        switch kind {
        case .atom: namespace == Self.atom10 || namespace == Self.atom03 || namespace == rootNamespace
        case .rss, .cdf: namespace.isEmpty || namespace == rootNamespace || namespace == Self.rss10 || namespace == Self.rss09
        case nil: false
        }
    }

    // MARK: - Parser events

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:])
    {
        let namespace = namespaceURI ?? ""
        let base =
            attributes["xml:base"].flatMap { URL(string: $0, relativeTo: bases.last ?? documentBase)?.absoluteURL } ?? bases.last ?? documentBase
        if kind == nil {
            guard recognise(root: name, namespace: namespace) else {
                notAFeed = qualifiedName ?? name
                parser.abortParsing()
                return
            }
        }
        path.append(name)
        bases.append(base)
        text = ""
        if var capture {
            // Inside a text construct: its elements are its markup.
            if PlainText.blocks.contains(name.lowercased()) { capture.text += " " }
            self.capture = capture
            return
        }
        if entry == nil {
            if isEntry(name, namespace) {
                entry = Fields(depth: path.count)
                if let about = attributes["rdf:about"], !about.isEmpty { entry?.texts[.identifier] = about }
                if kind == .cdf {
                    if let href = attributes["HREF"] ?? attributes["href"] { entry?.link = resolve(href) }
                    if let modified = attributes["LASTMOD"] ?? attributes["lastmod"] { entry?.updated.append(modified) }
                }
            } else if kind == .atom, name == "author", path.count == 2 {
                inFeedAuthor = true
            }
            return
        }
        guard let term = term(name, namespace, parent: path.count >= 2 ? path[path.count - 2] : "") else { return }
        switch term {
        case .title, .dcTitle, .summary, .content:
            let (markup, base64) = markup(for: term, name: name, namespace: namespace, attributes: attributes)
            capture = Capture(term: term, markup: markup, base64: base64, depth: path.count)
        case .link where kind == .atom:
            takeAtomLink(attributes)
        case .guid:
            if attributes["isPermaLink"]?.lowercased() != "false" { entry?.permalink = "" }  // filled at its end
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if capture != nil { capture?.text += string } else { text += string }
    }

    func parser(_ parser: XMLParser, foundCDATA block: Data) {
        let string = String(decoding: block, as: UTF8.self)
        if capture != nil { capture?.text += string } else { text += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard path.last == name else {
            mismatched = true
            parser.abortParsing()
            return
        }
        let namespace = namespaceURI ?? ""
        defer {
            path.removeLast()
            bases.removeLast()
            text = ""
        }
        if let capture {
            if capture.depth == path.count {
                if entry?.texts[capture.term] == nil { entry?.texts[capture.term] = read(capture) }
                self.capture = nil
            } else if PlainText.blocks.contains(name.lowercased()) {
                self.capture?.text += " "
            }
            return
        }
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard var fields = entry else {
            if inFeedAuthor, name == "name" { feedAuthor = PlainText.folded(value) }
            if inFeedAuthor, name == "author", path.count == 2 { inFeedAuthor = false }
            return
        }
        if path.count == fields.depth {
            if let made = makeEntry(fields) { entries.append(made) }
            entry = nil
            return
        }
        guard !value.isEmpty, let term = term(name, namespace, parent: path.count >= 2 ? path[path.count - 2] : "") else { return }
        switch term {
        case .link where kind != .atom:
            if fields.link == nil { fields.link = resolve(value) }
        case .guid:
            fields.texts[.guid] = fields.texts[.guid] ?? value
            // A permalink guid is the entry's link when it is a web address as written.
            let web = value.lowercased().hasPrefix("http://") || value.lowercased().hasPrefix("https://")
            fields.permalink = fields.permalink == "" && web ? value : nil
        case .id, .identifier, .author, .authorName:
            fields.texts[term] = fields.texts[term] ?? value
        case .published:
            fields.published.append(value)
        case .updated:
            fields.updated.append(value)
        default:
            break
        }
        entry = fields
    }

    // MARK: - Reading

    private func recognise(root name: String, namespace: String) -> Bool {
        rootNamespace = namespace
        switch name {
        case "rss": kind = .rss
        case "RDF" where namespace == Self.rdf: kind = .rss
        case "feed" where namespace == Self.atom10 || namespace == Self.atom03 || namespace.isEmpty: kind = .atom
        case _ where name.uppercased() == "CHANNEL" && namespace.isEmpty: kind = .cdf
        default: return false
        }
        return true
    }

    private func isEntry(_ name: String, _ namespace: String) -> Bool {
        switch kind {
        case .rss: name == "item" && isFeedNamespace(namespace)
        case .atom: name == "entry" && isFeedNamespace(namespace)
        case .cdf: name.uppercased() == "ITEM"
        case nil: false
        }
    }

    /// The field an element of an entry holds, by its namespace and local name.
    private func term(_ name: String, _ namespace: String, parent: String) -> Term? {
        switch namespace {
        case Self.dc:
            return switch name {
            case "title": .dcTitle
            case "description": .summary
            case "date": .published
            case "creator": .author
            case "identifier": .identifier
            default: nil
            }
        case Self.dcterms:
            return switch name {
            case "issued", "created", "date": .published
            case "modified": .updated
            default: nil
            }
        case Self.content:
            return name == "encoded" ? .content : nil
        default:
            break
        }
        guard isFeedNamespace(namespace) || (kind == .cdf) else { return nil }
        switch kind {
        case .atom:
            return switch name {
            case "title": .title
            case "summary": .summary
            case "content": .content
            case "link": .link
            case "id": .id
            case "published", "issued", "created": .published
            case "updated", "modified": .updated
            case "name" where parent == "author": .authorName
            default: nil
            }
        case .cdf:
            return switch name.uppercased() {
            case "TITLE": .title
            case "ABSTRACT": .summary
            default: nil
            }
        default:
            return switch name {
            case "title": .title
            case "description": .summary
            case "link": .link
            case "guid": .guid
            case "pubDate": .published
            case "author": .author
            default: nil
            }
        }
    }

    /// How a text construct reads: Atom says so in `type` (and 0.3 in `mode`), RSS's
    /// descriptions are HTML, its titles are guessed.
    private func markup(for term: Term, name: String, namespace: String, attributes: [String: String]) -> (Markup, base64: Bool) {
        guard kind == .atom, isFeedNamespace(namespace) else {
            switch term {
            case .title, .dcTitle: return (.guess, false)
            default: return (kind == .cdf ? .guess : .html, false)
            }
        }
        let type = attributes["type"]?.lowercased() ?? "text"
        var markup: Markup =
            switch type {
            case "html", "text/html": .html
            case "xhtml", "application/xhtml+xml": .xhtml
            default: .text
            }
        if namespace == Self.atom03 {
            switch attributes["mode"]?.lowercased() {
            case "base64": return (markup, true)
            case "escaped": break
            default: if markup == .html { markup = .xhtml }  // inline markup, as elements
            }
        }
        return (markup, false)
    }

    /// A text construct's content as text.
    private func read(_ capture: Capture) -> String? {
        var raw = capture.text
        if capture.base64 {
            guard let data = Data(base64Encoded: raw.filter { !$0.isWhitespace }) else { return nil }
            raw = String(decoding: data, as: UTF8.self)
        }
        switch capture.markup {
        case .text, .xhtml: return PlainText.folded(raw)
        case .html: return PlainText.from(raw)
        case .guess: return PlainText.looksLikeHTML(raw) ? PlainText.from(raw) : PlainText.folded(raw)
        }
    }

    /// Atom's links: the alternate HTML page, else an alternate, else the first.
    private func takeAtomLink(_ attributes: [String: String]) {
        guard let href = attributes["href"], !href.isEmpty else { return }
        let rel = attributes["rel"] ?? "alternate"
        let type = attributes["type"]?.lowercased()
        let rank = rel == "alternate" ? (type == nil || type == "text/html" ? 2 : 1) : 0
        guard rank > entry?.linkRank ?? 0 || entry?.link == nil else { return }
        entry?.link = resolve(href)
        entry?.linkRank = rank
    }

    /// A link resolved against the `xml:base` in effect (the feed's URL at the least).
    private func resolve(_ link: String) -> String {
        let trimmed = link.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let base = bases.last ?? documentBase, let url = URL(string: trimmed, relativeTo: base) else { return trimmed }
        return url.absoluteString
    }

    /// The entry, or nothing when it has nothing at all to show.
    private func makeEntry(_ fields: Fields) -> FeedParser.Entry? {
        let texts = fields.texts
        let summary = texts[.summary] ?? texts[.content]
        let link = fields.link ?? fields.permalink.flatMap { $0.isEmpty ? nil : $0 }
        let dates = fields.published + fields.updated
        let published = dates.lazy.compactMap(Timestamp.init(feedDate:)).first
        guard let title = texts[.title] ?? texts[.dcTitle] ?? summary.map(PlainText.titleFrom) ?? link else { return nil }
        let stated = [texts[.guid], texts[.id], texts[.identifier]].lazy.compactMap { $0 }.first { !$0.isEmpty }
        guard let id = stated ?? EntryID.fallback(link: link, date: dates.first, summary: summary) else { return .unusable(.id) }
        let author = (texts[.authorName] ?? texts[.author]).map(Self.authorName) ?? feedAuthor
        return .item(
            FeedItem(id: id, title: title, summary: summary, link: link, author: author, published: published ?? Timestamp.now()),
            dated: published != nil)
    }

    /// RSS's `author` is an address, often followed by the name: `ann@example.com (Ann)`.
    private static func authorName(_ text: String) -> String {
        let folded = PlainText.folded(text) ?? text
        if folded.hasSuffix(")"), let open = folded.firstIndex(of: "("), folded[..<open].contains("@") {
            let name = folded[folded.index(after: open)..<folded.index(before: folded.endIndex)].trimmingCharacters(in: .whitespaces)
            if !name.isEmpty { return name }
        }
        return folded
    }
}
