import Foundation
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// What a store acknowledges is what it keeps, byte for byte, in every store: ids that
/// `String` calls equal but whose bytes differ are two items, and a NUL, which SQLite would
/// cut at and PostgreSQL refuses, never reaches a database.
@Suite struct ExactItemTests {
    /// "café-x" precomposed (U+00E9) and decomposed (e + U+0301): canonically equivalent,
    /// so one `String`, but different bytes.
    static let composed = "caf\u{E9}-x"
    static let decomposed = "cafe\u{301}-x"

    @Test func theTwoIDsAreOneStringButNotTheSameBytes() {
        #expect(Self.composed == Self.decomposed)
        #expect(Array(Self.composed.utf8) != Array(Self.decomposed.utf8))
    }

    @Test(arguments: Store.allCases)
    func idsThatDifferOnlyByNormalizationAreTwoItems(store: Store) async throws {
        let feed = try await store.make()
        let published = Timestamp(milliseconds: 1_000)
        let echoed = try await feed.publish([
            FeedItem(id: Self.composed, title: "composed", published: published),
            FeedItem(id: Self.decomposed, title: "decomposed", published: published),
        ])
        #expect(echoed.map { Array($0.id.utf8) } == [Array(Self.composed.utf8), Array(Self.decomposed.utf8)])

        let stored = try await feed.older(than: nil, limit: 10).items
        #expect(stored.count == 2)
        let titles = Dictionary(stored.map { (Array($0.id.utf8), $0.title) }, uniquingKeysWith: { first, _ in first })
        #expect(titles[Array(Self.composed.utf8)] == "composed")
        #expect(titles[Array(Self.decomposed.utf8)] == "decomposed")
        #expect(try await feed.item(id: Self.decomposed).map { Array($0.title.utf8) } == Array("decomposed".utf8))
        #expect(try await feed.item(id: Self.composed).map { Array($0.title.utf8) } == Array("composed".utf8))
        let positions = [try await feed.position(of: Self.composed), try await feed.position(of: Self.decomposed)]
        #expect(Set(positions.compactMap { $0 }) == [1, 2])

        // Paging one at a time passes each once: ids compare by bytes, as the databases do.
        let first = try #require(try await feed.older(than: nil, limit: 1).items.first)
        let page = try await feed.older(than: first.position, limit: 1)
        let second = try #require(page.items.first, "paging past the first id finds the second")
        #expect(Array(second.id.utf8) != Array(first.id.utf8))
        #expect(!page.hasMore)
        #expect(try await feed.added(after: try #require(second.position), limit: 5).items == [first])

        // Publishing one again replaces that one only.
        _ = try await feed.publish([FeedItem(id: Self.decomposed, title: "decomposed again", published: published)])
        #expect(try await feed.item(id: Self.composed).map(\.title) == "composed")
        #expect(try await feed.item(id: Self.decomposed).map(\.title) == "decomposed again")
        #expect(try await feed.head()?.position == 2)
    }

    @Test(arguments: Store.allCases)
    func aBatchStoresTheLastOfEachIDAndEchoesExactlyThat(store: Store) async throws {
        let feed = try await store.make()
        let published = Timestamp(milliseconds: 1_000)
        let echoed = try await feed.publish([
            FeedItem(id: "k", title: "A", published: published),
            FeedItem(id: "other", title: "O", published: published),
            FeedItem(id: "k", title: "B", published: published),
        ])
        #expect(echoed.map(\.title) == ["O", "B"])
        #expect(try await feed.item(id: "k")?.title == "B")
        #expect(try await feed.older(than: nil, limit: 10).items.count == 2)
    }

    static let withNUL: [FeedItem] = [
        FeedItem(id: "k\u{0}A", title: "A", published: Timestamp(milliseconds: 1)),
        FeedItem(id: "k", title: "t\u{0}", published: Timestamp(milliseconds: 1)),
        FeedItem(id: "k", title: "t", summary: "s\u{0}", published: Timestamp(milliseconds: 1)),
        FeedItem(id: "k", title: "t", link: "https://example.com/\u{0}", published: Timestamp(milliseconds: 1)),
        FeedItem(id: "k", title: "t", author: "\u{0}", published: Timestamp(milliseconds: 1)),
    ]

    @Test(arguments: Store.allCases)
    func anItemWithANULIsRefusedWithItsBatchAndNothingIsStored(store: Store) async throws {
        let feed = try await store.make()
        for item in Self.withNUL {
            let fine = FeedItem(id: "fine", title: "Fine", published: Timestamp(milliseconds: 2))
            let error = await #expect(throws: (any Error).self) { try await feed.publish([fine, item]) }
            #expect(error is InvalidFeedItem, "\(String(reflecting: error)): a NUL is the item's fault, not the store's")
        }
        #expect(try await feed.head() == nil, "nothing of the refused batches was stored")
    }

    @Test(arguments: Store.allCases)
    func itemsOverTheLimitsAreRefusedByTheStoreToo(store: Store) async throws {
        let feed = try await store.make()
        let published = Timestamp(milliseconds: 1)
        let invalid = [
            FeedItem(id: String(repeating: "i", count: 501), title: "t", published: published),
            FeedItem(id: "k", title: String(repeating: "t", count: 501), published: published),
            FeedItem(id: "k", title: "t", link: "javascript:alert(1)", published: published),
            FeedItem(id: "", title: "t", published: published),
        ]
        for item in invalid {
            await #expect(throws: InvalidFeedItem.self) { try await feed.publish([item]) }
        }
        #expect(try await feed.head() == nil)
        let longest = FeedItem(
            id: String(repeating: "\u{1F600}", count: 500), title: String(repeating: "t", count: 500), summary: String(repeating: "s", count: 5000),
            link: "https://example.com/" + String(repeating: "l", count: 1980), author: String(repeating: "a", count: 200), published: published)
        #expect(try await feed.publish([longest]) == [longest])
        #expect(try await feed.item(id: longest.id) == longest, "an id of 2,000 bytes is stored and found")
    }
}

/// The same through the API: every text field refuses a NUL with `400`, and a batch of ids
/// that differ only by normalization is stored as two items, as the answer says.
@Suite struct ExactItemAPITests {
    @Test(arguments: ["id", "title", "summary", "link", "author", "published"])
    func aNULInAnyFieldIsA400AndChangesNothing(field: String) async throws {
        try await TestServer.run(TestServer.configuration { $0.demo = false }) { server in
            var fields = [
                "id": "k", "title": "t", "summary": "s", "link": "https://example.com/x", "author": "a", "published": "2026-11-22T08:00:00Z",
            ]
            fields[field, default: ""] += "\\u0000B"
            let body = "{" + fields.map { "\"\($0.key)\":\"\($0.value)\"" }.joined(separator: ",") + "}"
            let reply = try await server.post("/api/items", body)
            #expect(reply.status == 400, "\(field): \(reply.text)")
            #expect(reply.json["error"] as? String == "invalid_value", "\(reply.text)")
            if field != "published" { #expect((reply.json["message"] as? String)?.contains("U+0000") == true, "\(reply.text)") }
            #expect((try await server.get("/api/items").json["items"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func aCursorOrAResumeWithANULIsA400() async throws {
        try await TestServer.run(TestServer.configuration { $0.demo = false }) { server in
            for query in ["before=k%00A", "after=%00"] {
                let reply = try await server.get("/api/items?\(query)")
                #expect(reply.status == 400, "\(query): \(reply.text)")
            }
            let resume = try await server.post("/api/sessions", #"{"resume": {"head": 1, "oldest": "k\u0000"}}"#)
            #expect(resume.status == 400, "\(resume.text)")
        }
    }

    @Test func idsThatDifferOnlyByNormalizationArePublishedAsTwoItems() async throws {
        try await TestServer.run(TestServer.configuration { $0.demo = false }) { server in
            let reply = try await server.post(
                "/api/items", #"{"items": [{"id": "caf\u00e9-x", "title": "A"}, {"id": "cafe\u0301-x", "title": "B"}]}"#)
            #expect(reply.status == 201, "\(reply.text)")
            let echoed = (reply.json["items"] as? [[String: Any]])?.compactMap { ($0["id"] as? String).map { Array($0.utf8) } }
            #expect(echoed == [Array(ExactItemTests.composed.utf8), Array(ExactItemTests.decomposed.utf8)])
            let listed = (try await server.get("/api/items").json["items"] as? [[String: Any]])?.compactMap {
                ($0["id"] as? String).map { Array($0.utf8) }
            }
            #expect(listed.map(Set.init) == [Array(ExactItemTests.composed.utf8), Array(ExactItemTests.decomposed.utf8)])
        }
    }

    /// Ids are compared by their bytes, white space included: three ids that differ only
    /// by the space around them are three items, and an id of spaces alone is kept too.
    @Test func idsThatDifferOnlyByWhiteSpaceAreThreeItems() async throws {
        try await TestServer.run(TestServer.configuration { $0.demo = false }) { server in
            let ids = ["a", "a\u{A0}", "\u{2003}a", " a\t", "   "]
            for (index, id) in ids.enumerated() {
                let body = String(decoding: try JSONSerialization.data(withJSONObject: ["id": id, "title": "t\(index)"]), as: UTF8.self)
                let reply = try await server.post("/api/feeds/spaces/items", body)
                #expect(reply.status == 201, "\(reply.text)")
                #expect((reply.json["items"] as? [[String: Any]])?.first?["id"] as? String == id)
            }
            let listed = (try await server.get("/api/feeds/spaces/items").json["items"] as? [[String: Any]])?.compactMap {
                ($0["id"] as? String).map { Array($0.utf8) }
            }
            #expect(listed.map(Set.init) == Set(ids.map { Array($0.utf8) }))
            #expect(try await server.get("/api/feeds/spaces").json["head"] as? Int == ids.count)
        }
    }

    @Test(arguments: [
        (#"{"id": "\#(String(repeating: "i", count: 501))", "title": "t"}"#, "id"),
        (#"{"title": "\#(String(repeating: "t", count: 501))"}"#, "title"),
        // 100 characters of 11 scalars each: short in Characters, 1,100 code points.
        (#"{"title": "\#(String(repeating: "a\u{301}\u{302}\u{303}\u{304}\u{305}\u{306}\u{307}\u{308}\u{309}\u{30A}", count: 100))"}"#, "title"),
        (#"{"title": "t", "summary": "\#(String(repeating: "s", count: 5001))"}"#, "summary"),
        (#"{"title": "t", "author": "\#(String(repeating: "a", count: 201))"}"#, "author"),
        (#"{"title": "t", "link": "https://example.com/\#(String(repeating: "l", count: 1981))"}"#, "link"),
        (#"{"title": "t", "link": "javascript:alert(1)"}"#, "link"),
        (#"{"title": "t", "link": "https://"}"#, "link"),
        // White space around a link is refused like white space in it, not cut off.
        (#"{"title": "t", "link": "https://example.com/\n"}"#, "link"),
        (#"{"title": "t", "link": " https://example.com/"}"#, "link"),
        (#"{"title": "t", "link": "https://example.com/\u2028"}"#, "link"),
    ])
    func aFieldOverItsLimitIsA400(body: String, field: String) async throws {
        try await TestServer.run(TestServer.configuration { $0.demo = false }) { server in
            let reply = try await server.post("/api/items", body)
            #expect(reply.status == 400, "\(field): \(reply.text)")
            #expect(reply.json["error"] as? String == "invalid_value")
            #expect((reply.json["message"] as? String)?.hasPrefix(field) == true, "\(reply.text)")
        }
    }

    @Test func aPublishTheStoreCannotTakeIs503AndNamesTheIDsToRetryWith() async throws {
        try await TestServer.run(TestServer.configuration { $0.demo = false }, feed: UnavailableFeed()) { server in
            let reply = try await server.post("/api/items", #"{"items": [{"title": "no id"}, {"id": "mine", "title": "with id"}]}"#)
            #expect(reply.status == 503, "\(reply.text)")
            #expect(reply.json["error"] as? String == "store_unavailable")
            #expect(reply.headers.first(name: "Retry-After") == "5")
            let ids = reply.json["ids"] as? [String]
            #expect(ids?.count == 2)
            #expect(ids?.first?.hasPrefix("item-") == true, "the server gave the first item its id before storing")
            #expect(ids?.last == "mine")
        }
    }
}

/// A store that cannot take writes now.
private struct UnavailableFeed: ForwardingFeed {
    let base = MemoryFeed()
    var forwarded: any FeedSource { base }
    func publishing(_ items: [FeedItem]) async throws -> FeedWrite { throw FeedStoreUnavailable("the test's store takes no writes") }
}
