import Foundation
import Testing

@testable import RefreshFeed

/// Feeds as they are found, each with the fields a feed reader must store for it: text that
/// is text, markup that is markup, links against `xml:base`, dates in every form feeds
/// write, ids that survive a retitle, prefixed roots, CDF, JSON Feed as the specification's
/// examples write it, and every common encoding (made from one text in each, below).
@Suite struct FeedCorpusTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func read(_ name: String, source: String = "https://example.org/feed", contentType: String? = nil) throws -> FeedParser.Document {
        try FeedParser.read(Data(contentsOf: fixtures.appendingPathComponent(name)), source: source, contentType: contentType)
    }

    static func items(_ name: String, source: String = "https://example.org/feed") throws -> [String: FeedItem] {
        let items = try read(name, source: source).entries.compactMap(\.item)
        return Dictionary(items.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    static func date(_ text: String) -> Timestamp? { Timestamp(rfc3339: text) }

    @Test func rssTitlesAreTextAndDescriptionsAreHTML() throws {
        let items = try Self.items("rss-text-and-markup.xml")
        #expect(items["lt"]?.title == "2 < 3")
        #expect(items["lt"]?.summary == "Less < more")
        #expect(items["blink"]?.title == "History of the <blink> tag")
        #expect(items["code"]?.title == "<code>", "a title that is only a bracketed word is kept")
        #expect(items["att"]?.title == "AT&T & friends", "escaped HTML entities in a title read as HTML")
        #expect(items["bold"]?.title == "Bold news")
        #expect(items["bold"]?.summary == "One Two three H2O", "blocks part words, inline elements do not, styles and comments are not text")
        #expect(items["curly"]?.title == "Curly “quotes” — dash")
        #expect(items["untitled"]?.title == "An entry without a title takes the start of its text, as readers show it.")
        #expect(items["dc"]?.title == "Only a Dublin Core title")
        #expect(items["author"]?.author == "Ann Example")
        #expect(items["nothing"] == nil, "an entry with nothing to show is left out")
        #expect(items.count == 9)
    }

    @Test func atomTextConstructsAreReadByTheirType() throws {
        let items = try Self.items("atom-text-constructs.xml")
        #expect(items["urn:text"]?.title == "Use <b> for bold")
        #expect(items["urn:text"]?.summary == "Text stays <as written>")
        #expect(items["urn:text"]?.author == "Feed Author", "the feed's author, for an entry without one")
        #expect(items["urn:html"]?.title == "Escaped & decoded")
        #expect(items["urn:html"]?.summary == "HTML content")
        #expect(items["urn:html"]?.author == "Entry Author")
        #expect(items["urn:xhtml"]?.title == "An XHTML title")
        #expect(items["urn:xhtml"]?.summary == "First Second & last")
        #expect(items["urn:untitled"]?.title == "Only a summary")
        #expect(items["urn:html"]?.published == Self.date("2026-11-20T09:00:00Z"))
    }

    @Test func atom03ModesAndDates() throws {
        let items = try Self.items("atom03.xml")
        let base64 = try #require(items["tag:example.org,2026:base64"])
        #expect(base64.title == "Base64 title")
        #expect(base64.link == "https://example.org/base64")
        #expect(base64.published == Self.date("2026-11-19T11:00:00Z"), "issued before modified")
        let escaped = try #require(items["tag:example.org,2026:escaped"])
        #expect(escaped.title == "Escaped title")
        #expect(escaped.summary == "Inline markup")
        #expect(escaped.published == Self.date("2026-11-18T00:00:00Z"))
    }

    @Test func linksResolveAgainstXMLBase() throws {
        let atom = try Self.items("xml-base.xml", source: "https://example.org/feed.atom")
        #expect(atom["urn:base-1"]?.link == "https://example.org/blog/2026/first.html")
        #expect(atom["urn:base-2"]?.link == "https://example.org/second.html", "the alternate page, not the self link")
        #expect(atom["urn:base-3"]?.link == "https://cdn.example.net/a/b/third")
        let rss = try Self.items("rss-relative-links.xml", source: "https://news.example.com/rss")
        #expect(rss["https://news.example.com/archive/one"]?.title == "Archived")
        #expect(rss["https://news.example.com/section/two.html"]?.title == "Relative to the channel")
        #expect(rss["https://news.example.com/p/3"]?.link == "https://news.example.com/p/3", "a permalink guid is the link")
        #expect(rss["urn:uuid:4"]?.link == nil, "a guid that is not a permalink is not")
    }

    @Test func aPrefixedRSSRootIsRSS() throws {
        let item = try #require(Self.items("prefixed-root.xml")["https://example.com/prefixed"])
        #expect(item.title == "Prefixed item")
        #expect(item.published == Self.date("2026-11-19T10:00:00Z"))
    }

    @Test func dublinCoreAndW3CDates() throws {
        let items = try Self.items("rdf-dates.xml")
        #expect(items["https://example.com/dc-date"]?.published == Self.date("2026-11-17T09:30:00Z"))
        #expect(items["https://example.com/issued"]?.published == Self.date("2026-11-16T00:00:00Z"))
        #expect(items["https://example.com/modified"]?.published == Self.date("2026-11-01T00:00:00Z"))
        #expect(items["https://example.com/creator"]?.author == "Dee")
        let undated = try Self.read("rdf-dates.xml").entries.filter { if case .item(_, false) = $0 { true } else { false } }
        #expect(undated.isEmpty)
    }

    /// Ids come from the entry's id or guid, else its link, else a digest of its date and
    /// text: a retitled entry keeps its id. One with nothing but a title is left out.
    @Test func idsSurviveARetitle() throws {
        let text = try String(contentsOf: Self.fixtures.appendingPathComponent("rss-stable-ids.xml"), encoding: .utf8)
        let retitled = text.replacingOccurrences(of: "TITLE-", with: "Retitled ")
        let before = try FeedParser.read(Data(text.utf8), source: "https://example.org/feed").entries
        let after = try FeedParser.read(Data(retitled.utf8), source: "https://example.org/feed").entries
        #expect(before.compactMap(\.item?.id) == after.compactMap(\.item?.id))
        let ids = before.compactMap(\.item?.id)
        #expect(ids.count == 3)
        #expect(ids.first == "https://example.com/a")
        #expect(ids.dropFirst().allSatisfy { $0.hasPrefix("digest:") } && Set(ids).count == 3)
        #expect(before.last == .unusable(.id))
        #expect(after.compactMap(\.item?.title).first == "Retitled A")
    }

    @Test func cdfItems() throws {
        let item = try #require(Self.items("cdf.xml")["https://example.com/cdf/1"])
        #expect(item.title == "A CDF item")
        #expect(item.summary == "What it says")
        #expect(item.published == Self.date("2026-11-14T10:00:00Z"))
    }

    @Test func jsonFeedItemsWithoutTitles() throws {
        let items = try Self.items("jsonfeed-spec.json")
        #expect(items["2"]?.title == "This is a second item.")
        #expect(items["1"]?.title == "Hello, world!")
        #expect(items["1"]?.summary == "Hello, world!")
        #expect(try Self.read("jsonfeed-spec.json").warnings.isEmpty)
    }

    @Test func aJSONFeedVersionWrittenShortIsReadWithAWarning() throws {
        let document = try Self.read("jsonfeed-short-version.json")
        #expect(document.warnings == [.jsonFeedVersion])
        let items = document.entries.compactMap(\.item)
        #expect(items.map(\.id) == ["v1", "https://example.org/no-id"])
        #expect(items.last?.title == "No id, no title")
    }

    @Test func aRootThatIsNotAFeedIsSaidSo() throws {
        #expect {
            try Self.read("opml.xml")
        } throws: { error in
            "\(error)" == "it is XML but not RSS, Atom or CDF (root <opml>)"
        }
    }

    // MARK: - Encodings

    static let title = "Café – don’t"

    static func rss(declaring encoding: String?) -> String {
        let declaration = encoding.map { "<?xml version=\"1.0\" encoding=\"\($0)\"?>" } ?? "<?xml version=\"1.0\"?>"
        return declaration + "<rss version=\"2.0\"><channel><title>E</title><item><title>\(title)</title><guid>e</guid></item></channel></rss>"
    }

    static func windows1252(_ text: String) -> Data {
        let table: [Character: UInt8] = ["é": 0xE9, "–": 0x96, "’": 0x92]
        return Data(text.map { table[$0] ?? UInt8($0.asciiValue!) })
    }

    static let encoded: [(String, Data, String?)] = [
        ("UTF-8 with a byte-order mark", Data([0xEF, 0xBB, 0xBF]) + Data(rss(declaring: "utf-8").utf8), nil),
        ("UTF-16LE with a mark", Data([0xFF, 0xFE]) + rss(declaring: "utf-16").data(using: .utf16LittleEndian)!, nil),
        ("UTF-16BE with a mark", Data([0xFE, 0xFF]) + rss(declaring: "utf-16").data(using: .utf16BigEndian)!, nil),
        ("UTF-16LE without a mark", rss(declaring: "UTF-16LE").data(using: .utf16LittleEndian)!, nil),
        ("UTF-16BE without a mark, declared utf-16", rss(declaring: "utf-16").data(using: .utf16BigEndian)!, nil),
        ("UTF-32LE with a mark", Data([0xFF, 0xFE, 0, 0]) + rss(declaring: "utf-32").data(using: .utf32LittleEndian)!, nil),
        ("UTF-32BE with a mark", Data([0, 0, 0xFE, 0xFF]) + rss(declaring: "utf-32").data(using: .utf32BigEndian)!, nil),
        ("UTF-32BE without a mark", rss(declaring: "utf-32").data(using: .utf32BigEndian)!, nil),
        ("windows-1252 named only by the HTTP charset", windows1252(rss(declaring: nil)), "application/rss+xml; charset=windows-1252"),
        ("a quoted HTTP charset", windows1252(rss(declaring: nil)), "text/xml; charset=\"cp1252\""),
        ("windows-1252 bytes in a feed declared Latin-1", windows1252(rss(declaring: "ISO-8859-1")), nil),
        ("UTF-8 by the HTTP charset, whatever the declaration", Data(rss(declaring: "iso-8859-1").utf8), "application/xml; charset=utf-8"),
        ("UTF-16 by the HTTP charset", Data([0xFF, 0xFE]) + rss(declaring: nil).data(using: .utf16LittleEndian)!, "application/xml; charset=utf-16"),
    ]

    @Test(arguments: encoded)
    func everyCommonEncodingIsRead(what: String, data: Data, contentType: String?) throws {
        let document = try FeedParser.read(data, source: "https://example.org/feed", contentType: contentType)
        #expect(document.entries.compactMap(\.item?.title) == [Self.title], "\(what)")
        #expect(document.warnings.isEmpty, "\(what)")
    }

    @Test func bytesThatAreNotUTF8AreReadAsWindows1252WithAWarning() throws {
        let document = try FeedParser.read(Self.windows1252(Self.rss(declaring: nil)), source: "https://example.org/feed")
        #expect(document.entries.compactMap(\.item?.title) == [Self.title])
        #expect(document.warnings == [.notUTF8])
    }

    @Test func aJSONFeedInUTF16IsRead() throws {
        let json = #"{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"u","title":"Café – don’t"}]}"#
        let data = Data([0xFF, 0xFE]) + json.data(using: .utf16LittleEndian)!
        #expect(try FeedParser.parse(data, source: "https://example.org/feed").map(\.title) == [Self.title])
    }

    @Test func anEncodingThisServerDoesNotReadIsSaidSo() throws {
        #expect {
            try FeedParser.read(Data(Self.rss(declaring: "koi8-r").utf8), source: "https://example.org/feed")
        } throws: { error in
            "\(error)" == "it is in an encoding this server does not read (koi8-r)"
        }
    }
}
