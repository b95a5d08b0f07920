import Foundation
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Paging goes by positions, which a republish with another date never moves: a reader who
/// pages down through a list while items of it are republished sees every item once, in
/// the order the feed gained them, and `?before=ID` goes on from where that item stands.
@Suite struct RepublishPagingTests {
    private func ids(_ items: Any?) -> [String] {
        (items as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    private func republish(_ server: TestServer, _ id: String, published: String) async throws {
        let body = #"{"id":"\#(id)","title":"\#(id) republished","published":"\#(published)"}"#
        #expect(try await server.post("/api/items", body).status == 201)
    }

    /// A session's load-more after items it shows, and items it does not show yet, were
    /// republished far into the past and into the future.
    @Test func loadMoreNeitherRepeatsNorSkipsARepublishedItem() async throws {
        let all = items(30)
        try await TestServer.run(feed: MemoryFeed(items: all)) { server in
            let reply = try await server.post("/api/sessions", #"{"firstPage":true}"#)
            let id = try #require(reply.json["id"] as? String)
            let page = try #require(reply.json["firstPage"] as? [String: Any])
            var seen = ids(page["items"])
            #expect(seen == Array(all.map(\.id)[..<20]))
            // One it shows goes back in time; one below goes forward.
            try await republish(server, "item-3", published: "2001-01-01T00:00:00Z")
            try await republish(server, "item-25", published: "2090-01-01T00:00:00Z")
            let stream = try await server.events(id, lastEventID: 0)
            _ = try await server.post("/api/sessions/\(id)/load-more")
            let events = try await stream.events(until: "done")
            let loaded = try #require(events.first { $0.event == "items" })
            seen += ids(loaded.json["items"])
            #expect(seen == all.map(\.id), "each item once, where it stood")
            let republished = (loaded.json["items"] as? [[String: Any]] ?? []).first { $0["id"] as? String == "item-25" }
            #expect(republished?["title"] as? String == "item-25 republished")
            #expect(republished?["position"] as? Int == 5)
        }
    }

    /// `?before=ID` pages from where the item stands, even when it was republished with
    /// another date between two reads.
    @Test func beforeAnIDRepublishedBetweenTwoReadsGoesOnFromItsPlace() async throws {
        let all = items(18)
        try await TestServer.run(feed: MemoryFeed(items: all)) { server in
            let first = try await server.get("/api/items?limit=6")
            let firstIDs = ids(first.json["items"])
            #expect(firstIDs == Array(all.map(\.id)[..<6]))
            let last = try #require(firstIDs.last)
            for (published, from) in [("2095-05-05T00:00:00Z", 6), ("1999-05-05T00:00:00Z", 6)] {
                try await republish(server, last, published: published)
                let next = try await server.get("/api/items?limit=6&before=\(last)")
                #expect(ids(next.json["items"]) == Array(all.map(\.id)[from..<(from + 6)]), "republished at \(published)")
                #expect(next.json["hasMore"] as? Bool == true)
            }
            // And `after` goes back up from there.
            let newer = try await server.get("/api/items?limit=10&after=\(last)")
            #expect(ids(newer.json["items"]) == Array(all.map(\.id)[..<5]))
        }
    }
}
