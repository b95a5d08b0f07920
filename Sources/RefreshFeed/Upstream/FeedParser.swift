import Foundation
import RefreshJSON

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads RSS (2.0, 0.9x, 1.0 / RDF), Atom (1.0 and 0.3), JSON Feed (1.0 and 1.1) and CDF,
/// told apart by their content rather than their `Content-Type`, which upstreams often get
/// wrong; the bytes are made UTF-8 first (``FeedEncoding``). Titles, summaries and authors
/// come out as text, markup stripped only where the format says the value is markup. Items
/// come out as the feed has them; ``ItemRules/admit(_:base:)`` then holds them to the limits.
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

    /// A feed's entries in its order, and what was read leniently.
    struct Document {
        var entries: [Entry]
        var warnings: [UpstreamWarning] = []
    }

    /// `source`: the feed's URL, against which relative links and `xml:base` resolve.
    /// `contentType`: the HTTP `Content-Type` it came with, for its `charset`.
    static func read(_ data: Data, source: String, contentType: String? = nil) throws -> Document {
        let decoded: FeedEncoding.Decoded
        do {
            decoded = try FeedEncoding.utf8(data, contentType: contentType)
        } catch let error as FeedEncoding.Unsupported {
            throw Malformed(description: error.description)
        }
        let utf8 = decoded.data
        guard let first = utf8.first(where: { !" \t\r\n".utf8.contains($0) }) else {
            throw Malformed(description: "it is empty")
        }
        var document: Document
        switch first {
        case UInt8(ascii: "{"): document = try parseJSONFeed(utf8)
        case UInt8(ascii: "<"): document = Document(entries: try XMLFeedReader.read(utf8, base: URL(string: source)))
        default: throw Malformed(description: "it is neither XML nor JSON")
        }
        if decoded.fellBack { document.warnings.append(.notUTF8) }
        return document
    }

    /// The feed's entries in its order.
    static func entries(_ data: Data, source: String, contentType: String? = nil) throws -> [Entry] {
        try read(data, source: source, contentType: contentType).entries
    }

    /// The feed's items, without what could not be one.
    static func parse(_ data: Data, source: String, contentType: String? = nil) throws -> [FeedItem] {
        try entries(data, source: source, contentType: contentType).compactMap(\.item)
    }

    // MARK: - JSON Feed

    /// Read with the server's own strict parser, which tells `true` from `1` (Foundation's
    /// reads both as a number). An item's `id` is a string, as JSON Feed 1.1 says; a whole
    /// number is taken as its decimal text (JSON Feed 1.0 asked readers to coerce numbers);
    /// any other kind of id leaves the item out (``ItemRules/SkipReason/id``). A `version`
    /// written as `1.1` rather than its URL is read, with a warning.
    private static func parseJSONFeed(_ data: Data) throws -> Document {
        guard case .object(let root) = try? JSONParser.parse(Array(data)) else {
            throw Malformed(description: "it is not valid JSON")
        }
        var warnings: [UpstreamWarning] = []
        switch root["version"] {
        case .string(let version)? where version.hasPrefix("https://jsonfeed.org/version/") || version.hasPrefix("http://jsonfeed.org/version/"):
            break
        case .string(let version)? where ["1", "1.0", "1.1"].contains(version):
            warnings.append(.jsonFeedVersion)
        default:
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
        let items: [Entry] = entries.compactMap { value in
            guard case .object(let entry) = value else { return nil }
            var id: String?
            switch entry["id"] {
            case .string(let text)?: id = text
            case .number(let number)?:
                guard number == number.rounded(), abs(number) < 9_007_199_254_740_992 else { return .unusable(.id) }
                id = String(Int64(number))
            case nil, .null?: id = nil
            default: return .unusable(.id)
            }
            let link = string(entry["url"])
            let summary =
                PlainText.from(string(entry["summary"])) ?? PlainText.folded(string(entry["content_text"]))
                ?? PlainText.from(string(entry["content_html"]))
            let title = PlainText.folded(string(entry["title"])) ?? summary.map(PlainText.titleFrom) ?? link
            let dateText = string(entry["date_published"]) ?? string(entry["date_modified"])
            let published = dateText.flatMap(Timestamp.init(feedDate:))
            guard let title, let id = id ?? EntryID.fallback(link: link, date: dateText, summary: summary) else { return nil }
            return .item(
                FeedItem(
                    id: id, title: title, summary: summary, link: link, author: firstAuthor(entry) ?? feedAuthor,
                    published: published ?? Timestamp.now()),
                dated: published != nil)
        }
        return Document(entries: items, warnings: warnings)
    }
}

/// How an entry without an id of its own is named: by its link, else by a digest of what
/// does not change when its title does (its date and its text), never by its title, so a
/// retitled entry stays one item edited in place. One with none of them cannot be told
/// apart from a retitled one, and is left out (``ItemRules/SkipReason/id``).
enum EntryID {
    static func fallback(link: String?, date: String?, summary: String?) -> String? {
        if let link, !link.isEmpty { return link }
        let parts = [date, summary].map { $0?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "" }
        guard parts.contains(where: { !$0.isEmpty }) else { return nil }
        return "digest:" + digest(parts.joined(separator: "\u{0}"))
    }

    /// 128 bits of two FNV-1a hashes, as hexadecimal: stable across runs and machines,
    /// unlike `Hasher`.
    static func digest(_ text: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in text.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            second = second &+ (second >> 29)
        }
        return hex(first) + hex(second)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// Markup from upstreams made into text: tags dropped, entities decoded, white space
/// folded. What remains is shown with `textContent`, never parsed as HTML.
enum PlainText {
    /// HTML made text. A `<` that does not start a tag (`2 < 3`) stays; a block element
    /// parts the words around it, an inline one does not (`H<sub>2</sub>O` is `H2O`).
    static func from(_ markup: String?) -> String? {
        guard let markup else { return nil }
        var text = ""
        var rest = Substring(markup)
        while let open = rest.firstIndex(of: "<") {
            text += rest[..<open]
            let after = rest[rest.index(after: open)...]
            if after.hasPrefix("!--") {
                // A comment, to its end (or to the end of the text).
                rest = after.range(of: "-->").map { after[$0.upperBound...] } ?? ""
                continue
            }
            guard let next = after.first, next.isLetter || next == "/" || next == "!" || next == "?",
                let close = after.firstIndex(of: ">")
            else {
                text.append("<")
                rest = after
                continue
            }
            let name = after.drop { $0 == "/" }.prefix { $0.isLetter || $0.isNumber }.lowercased()
            if blocks.contains(name) { text.append(" ") }
            rest = after[after.index(after: close)...]
            if name == "script" || name == "style", next != "/" {
                // What a script or a style holds is not text.
                rest = rest.range(of: "</\(name)", options: .caseInsensitive).map { rest[$0.lowerBound...] } ?? ""
            }
        }
        text += rest
        return folded(decodingEntities(text))
    }

    /// Text as the feed gave it, its white space folded: nothing is taken for markup.
    static func folded(_ text: String?) -> String? {
        guard let text else { return nil }
        let folded = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return folded.isEmpty ? nil : folded
    }

    /// The title a reader shows for an entry without one: the start of its text.
    static func titleFrom(_ text: String) -> String {
        guard text.count > 120 else { return text }
        let start = text.prefix(120)
        let word = start.lastIndex(of: " ").map { start[..<$0] } ?? start
        return word + "…"
    }

    /// Whether text from a field that may hold either (an RSS title) reads as HTML, as feed
    /// readers guess it: a closing tag or an entity of HTML. `2 < 3` and `the <blink> tag`
    /// are text.
    static func looksLikeHTML(_ text: String) -> Bool {
        guard text.contains("<") || text.contains("&") else { return false }
        var rest = Substring(text)
        while let open = rest.range(of: "</") {
            let name = rest[open.upperBound...].prefix { $0.isLetter || $0.isNumber }
            if !name.isEmpty, rest[open.upperBound...].dropFirst(name.count).first == ">", htmlElements.contains(name.lowercased()) {
                return true
            }
            rest = rest[open.upperBound...]
        }
        rest = Substring(text)
        while let ampersand = rest.firstIndex(of: "&") {
            let after = rest[rest.index(after: ampersand)...]
            if let semicolon = after.prefix(12).firstIndex(of: ";"), character(for: after[..<semicolon]) != nil { return true }
            rest = after
        }
        return false
    }

    /// HTML elements that break a line: text on either side of one is separate words.
    static let blocks: Set<String> = [
        "p", "div", "br", "hr", "li", "ul", "ol", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre",
        "table", "tr", "td", "th", "thead", "tbody", "section", "article", "header", "footer", "figure", "figcaption", "img",
    ]

    private static let htmlElements: Set<String> =
        blocks.union([
            "a", "abbr", "b", "big", "cite", "code", "del", "dfn", "em", "font", "i", "ins", "kbd", "mark", "q", "s", "samp",
            "small", "span", "strike", "strong", "sub", "sup", "tt", "u", "var", "blink", "center", "nobr",
        ])

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

    static func character(for name: Substring) -> Character? {
        if name.hasPrefix("#") {
            let digits = name.dropFirst()
            let value = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
            guard let value, value != 0, let scalar = Unicode.Scalar(value) else { return nil }
            return Character(scalar)
        }
        return named[String(name)]
    }

    /// The named character references of HTML 4 (Latin-1, symbols, Greek, punctuation), which
    /// feeds' escaped HTML uses, and `apos`.
    private static let named: [String: Character] = [
        "AElig": "\u{C6}", "Aacute": "\u{C1}", "Acirc": "\u{C2}", "Agrave": "\u{C0}", "Alpha": "\u{391}", "Aring": "\u{C5}",
        "Atilde": "\u{C3}", "Auml": "\u{C4}", "Beta": "\u{392}", "Ccedil": "\u{C7}", "Chi": "\u{3A7}", "Dagger": "\u{2021}",
        "Delta": "\u{394}", "ETH": "\u{D0}", "Eacute": "\u{C9}", "Ecirc": "\u{CA}", "Egrave": "\u{C8}", "Epsilon": "\u{395}",
        "Eta": "\u{397}", "Euml": "\u{CB}", "Gamma": "\u{393}", "Iacute": "\u{CD}", "Icirc": "\u{CE}", "Igrave": "\u{CC}",
        "Iota": "\u{399}", "Iuml": "\u{CF}", "Kappa": "\u{39A}", "Lambda": "\u{39B}", "Mu": "\u{39C}", "Ntilde": "\u{D1}",
        "Nu": "\u{39D}", "OElig": "\u{152}", "Oacute": "\u{D3}", "Ocirc": "\u{D4}", "Ograve": "\u{D2}", "Omega": "\u{3A9}",
        "Omicron": "\u{39F}", "Oslash": "\u{D8}", "Otilde": "\u{D5}", "Ouml": "\u{D6}", "Phi": "\u{3A6}", "Pi": "\u{3A0}",
        "Prime": "\u{2033}", "Psi": "\u{3A8}", "Rho": "\u{3A1}", "Scaron": "\u{160}", "Sigma": "\u{3A3}", "THORN": "\u{DE}",
        "Tau": "\u{3A4}", "Theta": "\u{398}", "Uacute": "\u{DA}", "Ucirc": "\u{DB}", "Ugrave": "\u{D9}", "Upsilon": "\u{3A5}",
        "Uuml": "\u{DC}", "Xi": "\u{39E}", "Yacute": "\u{DD}", "Yuml": "\u{178}", "Zeta": "\u{396}", "aacute": "\u{E1}",
        "acirc": "\u{E2}", "acute": "\u{B4}", "aelig": "\u{E6}", "agrave": "\u{E0}", "alefsym": "\u{2135}", "alpha": "\u{3B1}",
        "amp": "&", "and": "\u{2227}", "ang": "\u{2220}", "aring": "\u{E5}", "asymp": "\u{2248}", "atilde": "\u{E3}",
        "auml": "\u{E4}", "bdquo": "\u{201E}", "beta": "\u{3B2}", "brvbar": "\u{A6}", "bull": "\u{2022}", "cap": "\u{2229}",
        "ccedil": "\u{E7}", "cedil": "\u{B8}", "cent": "\u{A2}", "chi": "\u{3C7}", "circ": "\u{2C6}", "clubs": "\u{2663}",
        "cong": "\u{2245}", "copy": "\u{A9}", "crarr": "\u{21B5}", "cup": "\u{222A}", "curren": "\u{A4}", "dArr": "\u{21D3}",
        "dagger": "\u{2020}", "darr": "\u{2193}", "deg": "\u{B0}", "delta": "\u{3B4}", "diams": "\u{2666}", "divide": "\u{F7}",
        "eacute": "\u{E9}", "ecirc": "\u{EA}", "egrave": "\u{E8}", "empty": "\u{2205}", "emsp": "\u{2003}", "ensp": "\u{2002}",
        "epsilon": "\u{3B5}", "equiv": "\u{2261}", "eta": "\u{3B7}", "eth": "\u{F0}", "euml": "\u{EB}", "euro": "\u{20AC}",
        "exist": "\u{2203}", "fnof": "\u{192}", "forall": "\u{2200}", "frac12": "\u{BD}", "frac14": "\u{BC}", "frac34": "\u{BE}",
        "frasl": "\u{2044}", "gamma": "\u{3B3}", "ge": "\u{2265}", "gt": ">", "hArr": "\u{21D4}", "harr": "\u{2194}",
        "hearts": "\u{2665}", "hellip": "\u{2026}", "iacute": "\u{ED}", "icirc": "\u{EE}", "iexcl": "\u{A1}", "igrave": "\u{EC}",
        "image": "\u{2111}", "infin": "\u{221E}", "int": "\u{222B}", "iota": "\u{3B9}", "iquest": "\u{BF}", "isin": "\u{2208}",
        "iuml": "\u{EF}", "kappa": "\u{3BA}", "lArr": "\u{21D0}", "lambda": "\u{3BB}", "lang": "\u{2329}", "laquo": "\u{AB}",
        "larr": "\u{2190}", "lceil": "\u{2308}", "ldquo": "\u{201C}", "le": "\u{2264}", "lfloor": "\u{230A}",
        "lowast": "\u{2217}", "loz": "\u{25CA}", "lrm": "\u{200E}", "lsaquo": "\u{2039}", "lsquo": "\u{2018}", "lt": "<",
        "macr": "\u{AF}", "mdash": "\u{2014}", "micro": "\u{B5}", "middot": "\u{B7}", "minus": "\u{2212}", "mu": "\u{3BC}",
        "nabla": "\u{2207}", "nbsp": "\u{A0}", "ndash": "\u{2013}", "ne": "\u{2260}", "ni": "\u{220B}", "not": "\u{AC}",
        "notin": "\u{2209}", "nsub": "\u{2284}", "ntilde": "\u{F1}", "nu": "\u{3BD}", "oacute": "\u{F3}", "ocirc": "\u{F4}",
        "oelig": "\u{153}", "ograve": "\u{F2}", "oline": "\u{203E}", "omega": "\u{3C9}", "omicron": "\u{3BF}",
        "oplus": "\u{2295}", "or": "\u{2228}", "ordf": "\u{AA}", "ordm": "\u{BA}", "oslash": "\u{F8}", "otilde": "\u{F5}",
        "otimes": "\u{2297}", "ouml": "\u{F6}", "para": "\u{B6}", "part": "\u{2202}", "permil": "\u{2030}", "perp": "\u{22A5}",
        "phi": "\u{3C6}", "pi": "\u{3C0}", "piv": "\u{3D6}", "plusmn": "\u{B1}", "pound": "\u{A3}", "prime": "\u{2032}",
        "prod": "\u{220F}", "prop": "\u{221D}", "psi": "\u{3C8}", "quot": "\u{22}", "rArr": "\u{21D2}", "radic": "\u{221A}",
        "rang": "\u{232A}", "raquo": "\u{BB}", "rarr": "\u{2192}", "rceil": "\u{2309}", "rdquo": "\u{201D}", "real": "\u{211C}",
        "reg": "\u{AE}", "rfloor": "\u{230B}", "rho": "\u{3C1}", "rlm": "\u{200F}", "rsaquo": "\u{203A}", "rsquo": "\u{2019}",
        "sbquo": "\u{201A}", "scaron": "\u{161}", "sdot": "\u{22C5}", "sect": "\u{A7}", "shy": "\u{AD}", "sigma": "\u{3C3}",
        "sigmaf": "\u{3C2}", "sim": "\u{223C}", "spades": "\u{2660}", "sub": "\u{2282}", "sube": "\u{2286}", "sum": "\u{2211}",
        "sup": "\u{2283}", "sup1": "\u{B9}", "sup2": "\u{B2}", "sup3": "\u{B3}", "supe": "\u{2287}", "szlig": "\u{DF}",
        "tau": "\u{3C4}", "there4": "\u{2234}", "theta": "\u{3B8}", "thetasym": "\u{3D1}", "thinsp": "\u{2009}",
        "thorn": "\u{FE}", "tilde": "\u{2DC}", "times": "\u{D7}", "trade": "\u{2122}", "uArr": "\u{21D1}", "uacute": "\u{FA}",
        "uarr": "\u{2191}", "ucirc": "\u{FB}", "ugrave": "\u{F9}", "uml": "\u{A8}", "upsih": "\u{3D2}", "upsilon": "\u{3C5}",
        "uuml": "\u{FC}", "weierp": "\u{2118}", "xi": "\u{3BE}", "yacute": "\u{FD}", "yen": "\u{A5}", "yuml": "\u{FF}",
        "zeta": "\u{3B6}", "zwj": "\u{200D}", "zwnj": "\u{200C}",
        "apos": "'",
    ]
}

extension Timestamp {
    /// A date as feeds write them: RFC 3339, the W3C's profile of ISO 8601 with its shorter
    /// forms (`2003-12-13`, `2003-12-13T18:30Z`, no zone read as UTC), or RFC 822.
    init?(feedDate text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let stamp = Timestamp(rfc3339: trimmed) ?? Timestamp(w3cdtf: trimmed) ?? Timestamp(rfc822: trimmed) else { return nil }
        self = stamp
    }

    /// `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, then `Thh:mm`, `:ss`, a fraction and a zone, each optional.
    init?(w3cdtf text: String) {
        guard let match = text.wholeMatch(of: Self.w3cdtf) else { return nil }
        func part(_ index: Int, _ fallback: String) -> String {
            match.output[index].substring.map(String.init) ?? fallback
        }
        var zone = part(8, "Z")
        if zone.count == 5 { zone.insert(":", at: zone.index(zone.startIndex, offsetBy: 3)) }  // +0100
        let stamp = "\(part(1, ""))-\(part(2, "01"))-\(part(3, "01"))T\(part(4, "00")):\(part(5, "00")):\(part(6, "00"))\(part(7, ""))\(zone)"
        self.init(rfc3339: stamp)
    }

    private nonisolated(unsafe) static let w3cdtf = try! Regex(
        #"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*([Zz]|[+-]\d{2}:?\d{2})?)?)?)?"#)

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
