import Foundation
import Testing

@testable import RefreshFeed

@Suite struct FeedParserTests {
    @Test func readsRSS() throws {
        let rss = """
            <?xml version="1.0"?>
            <rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>Blog</title>
            <item><title>First &amp; best</title><link>https://example.com/1</link><guid>urn:1</guid>
              <description><![CDATA[<p>Hello <b>world</b><script>alert(1)</script></p>]]></description>
              <pubDate>Sun, 22 Nov 2026 08:00:00 GMT</pubDate><dc:creator>Ann</dc:creator></item>
            <item><title>Second</title><link>https://example.com/2</link><pubDate>Sat, 21 Nov 2026 09:30:00 +0100</pubDate></item>
            </channel></rss>
            """
        let items = try FeedParser.parse(Data(rss.utf8), source: "test")
        #expect(items.count == 2)
        #expect(items[0].id == "urn:1")
        #expect(items[0].title == "First & best")
        #expect(items[0].summary == "Hello world", "what a script holds is not text")
        #expect(items[0].link == "https://example.com/1")
        #expect(items[0].author == "Ann")
        #expect(items[0].published == Timestamp(rfc3339: "2026-11-22T08:00:00Z"))
        #expect(items[1].id == "https://example.com/2")
        #expect(items[1].published == Timestamp(rfc3339: "2026-11-21T08:30:00Z"))
    }

    /// RSS 1.0 (RDF) names each item by its `rdf:about` attribute.
    @Test func readsAnRSS1ItemsIDFromItsRDFAboutAttribute() throws {
        let rdf = """
            <?xml version="1.0"?>
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
            <channel rdf:about="https://example.com/"><title>Old school</title></channel>
            <item rdf:about="https://example.com/a"><title>A</title><link>https://example.com/a?utm=x</link></item>
            <item rdf:about="https://example.com/b"><title>B</title><guid>urn:b</guid></item>
            </rdf:RDF>
            """
        let items = try FeedParser.parse(Data(rdf.utf8), source: "test")
        #expect(items.map(\.id) == ["https://example.com/a", "urn:b"], "rdf:about names the item; a guid inside wins")
    }

    @Test(arguments: [
        ("&amp;lt;b&amp;gt;", "&lt;b&gt;", "what an entity decodes to is not decoded again"),
        ("Tom &amp; Jerry &#8217;s &#x2019; &rsquo;", "Tom & Jerry ’s ’ ’", "named, decimal and hex"),
        ("a &unknown; b &#0; c &#xZZ; d & e &amp", "a &unknown; b &#0; c &#xZZ; d & e &amp", "anything else stays as written"),
        ("&mdash;&hellip;&nbsp;x", "—… x", "the ones feeds use"),
        ("Caf&eacute; &Eacute;t&eacute; &alpha;&le;&euro;", "Café Été α≤€", "every named reference of HTML 4, by case"),
    ])
    func decodesEntitiesInOnePass(text: String, expected: String, why: String) {
        #expect(PlainText.from(text) == expected, "\(why)")
    }

    @Test func readsAtom() throws {
        let atom = """
            <feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>
            <entry><title type="html">&lt;i&gt;Atom&lt;/i&gt; entry</title><id>tag:x,2026:1</id>
              <link rel="alternate" href="https://example.com/a"/><link rel="edit" href="https://example.com/edit"/>
              <updated>2026-11-22T08:00:00Z</updated><published>2026-11-20T08:00:00Z</published>
              <summary>Short</summary><author><name>Bo</name></author></entry>
            </feed>
            """
        let items = try FeedParser.parse(Data(atom.utf8), source: "test")
        #expect(items.count == 1)
        #expect(items[0].title == "Atom entry")
        #expect(items[0].id == "tag:x,2026:1")
        #expect(items[0].link == "https://example.com/a")
        #expect(items[0].author == "Bo")
        #expect(items[0].summary == "Short")
        #expect(items[0].published == Timestamp(rfc3339: "2026-11-20T08:00:00Z"))
    }

    @Test func readsJSONFeed() throws {
        let json = """
            {"version":"https://jsonfeed.org/version/1.1","title":"J","authors":[{"name":"Cy"}],
             "items":[{"id":"1","title":"Json","url":"https://example.com/j","content_html":"<p>Body</p>","date_published":"2026-11-22T08:00:00Z"},
                      {"id":2,"content_text":"Untitled but has text"}]}
            """
        let items = try FeedParser.parse(Data(json.utf8), source: "test")
        #expect(items.count == 2)
        #expect(items[0].title == "Json")
        #expect(items[0].summary == "Body")
        #expect(items[0].author == "Cy")
        #expect(items[1].id == "2")
        #expect(items[1].title == "Untitled but has text")
    }

    @Test(arguments: ["", "hello", "<rss><channel><item><title>x</title></channel></rss>", "<html><body/></html>", "{\"a\":1}", "{broken"])
    func refusesWhatIsNotAFeed(text: String) {
        #expect(throws: (any Error).self) { try FeedParser.parse(Data(text.utf8), source: "test") }
    }

    @Test(arguments: [
        ("Sun, 22 Nov 2026 08:00:00 GMT", "2026-11-22T08:00:00Z"),
        ("22 Nov 2026 09:00:00 +0100", "2026-11-22T08:00:00Z"),
        ("Sun, 22 Nov 26 03:00 EST", "2026-11-22T08:00:00Z"),
    ])
    func readsRFC822Dates(text: String, expected: String) {
        #expect(Timestamp(rfc822: text) == Timestamp(rfc3339: expected))
    }
}
