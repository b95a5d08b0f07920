import Foundation
import Testing

@testable import RefreshFeed

@Suite struct ItemRulesTests {
    @Test(arguments: [
        ("https://example.com/a", true), ("HTTP://EXAMPLE.COM", true), ("http://x", true),
        ("javascript:alert(1)", false), ("https://", false), ("https:///path", false), ("http://?q", false),
        ("https://exa mple.com", false), ("https://example.com/\t", false), ("https://example.com/\u{A0}", false),
        ("ftp://example.com", false), ("data:text/html,hi", false), ("//example.com", false), ("mailto:a@b.c", false),
    ])
    func linksAreHTTPOrHTTPSWithAHost(link: String, valid: Bool) {
        #expect((ItemRules.violation(of: link, as: .link) == nil) == valid, "\(link.debugDescription)")
    }

    @Test func lengthsCountCodePointsNotCharacters() {
        let zalgo = String(repeating: "a\u{301}\u{302}\u{303}\u{304}\u{305}", count: 100)
        #expect(zalgo.count == 100)
        #expect(ItemRules.violation(of: zalgo, as: .title) == .tooLong(limit: 500))
        #expect(ItemRules.violation(of: String(repeating: "\u{1F600}", count: 500), as: .title) == nil)
        #expect(ItemRules.violation(of: String(repeating: "\u{1F600}", count: 501), as: .title) == .tooLong(limit: 500))
    }

    @Test func aCutNeverSplitsACharacterAndKeepsNoTrailingSpace() {
        #expect(ItemRules.cut("abc def", toLength: 4) == "abc")
        // "e" + U+0301 is one character of two scalars: it goes whole or not at all.
        #expect(ItemRules.cut("caf" + "e\u{301}" + "s", toLength: 4) == "caf")
        #expect(ItemRules.cut("caf" + "e\u{301}" + "s", toLength: 5) == "caf" + "e\u{301}")
        #expect(ItemRules.cut("\u{1F600}\u{1F601}", toLength: 1) == "\u{1F600}")
        // One character longer than the limit alone: its first scalars.
        #expect(ItemRules.cut("a\u{301}\u{302}\u{303}", toLength: 2).unicodeScalars.count == 2)
        #expect(ItemRules.cut("short", toLength: 10) == "short")
    }

    @Test func upstreamItemsAreCutOrSkipped() {
        let base = URL(string: "https://feeds.example/blog/feed.json")
        let published = Timestamp(milliseconds: 1)
        func admit(_ item: FeedItem) -> ItemRules.Admission { ItemRules.admit(item, base: base) }
        #expect(admit(FeedItem(id: String(repeating: "i", count: 501), title: "t", published: published)) == .skip(.id))
        #expect(admit(FeedItem(id: "", title: "t", published: published)) == .skip(.id))
        #expect(admit(FeedItem(id: "k", title: "t\u{0}", published: published)) == .skip(.nul))
        #expect(admit(FeedItem(id: "k", title: "t", link: "javascript:x", published: published)) == .skip(.link))
        #expect(
            admit(FeedItem(id: "k", title: "t", link: "https://e.x/" + String(repeating: "l", count: 2000), published: published)) == .skip(.link))
        let relative = admit(FeedItem(id: "k", title: "t", link: " ../post?id=1 ", published: published))
        #expect(relative == .keep(FeedItem(id: "k", title: "t", link: "https://feeds.example/post?id=1", published: published), cut: []))
        let long = admit(
            FeedItem(id: "k", title: String(repeating: "t", count: 600), author: String(repeating: "a", count: 300), published: published))
        guard case .keep(let kept, let cut) = long else {
            Issue.record("an item with long texts is kept")
            return
        }
        #expect(cut == [.title, .author])
        #expect(kept.title.count == 500)
        #expect(kept.author?.count == 200)
    }

    @Test func aJSONFeedIDMustBeAStringOrAWholeNumber() throws {
        let json = """
            {"version": "https://jsonfeed.org/version/1.1", "items": [
              {"id": true, "title": "boolean"}, {"id": 7, "title": "number"}, {"id": 1.5, "title": "fraction"},
              {"id": {"a": 1}, "title": "object"}, {"id": "s", "title": "string"}, {"url": "https://e.x/u", "title": "no id"}]}
            """
        let entries = try FeedParser.entries(Data(json.utf8), source: "test")
        #expect(entries.compactMap(\.item).map(\.id) == ["7", "s", "https://e.x/u"])
        #expect(entries.filter { $0 == .unusable(.id) }.count == 3, "true, 1.5 and an object are not ids")
    }
}
