import Foundation
import NIOHTTP1
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Edits and removals over real HTTP: the item routes, and the `changes` events that reach
/// exactly the pages that show what changed.
@Suite struct ChangesTests {
    /// Three items in `main`, published oldest first: `item-2` (version 1) … `item-0` (3).
    static func threeItems() -> MemoryFeed { MemoryFeed(items: items(3)) }

    /// A session on `feed` that shows its first page, its stream open and past the opening
    /// state.
    private func showing(_ server: TestServer, feed: String = "main", news: String = "badge") async throws -> (id: String, stream: EventReader) {
        let reply = try await server.post("/api/sessions", #"{"feed":"\#(feed)","firstPage":true,"config":{"news":"\#(news)"}}"#)
        #expect(reply.status == 201)
        let id = try #require(reply.json["id"] as? String)
        #expect(reply.json["firstPage"] != nil)
        let stream = try await server.events(id)
        #expect(try await stream.nextEvent().event == "state")
        return (id, stream)
    }

    private func changes(_ event: SSE) -> [[String: Any]] {
        event.json["changes"] as? [[String: Any]] ?? []
    }

    private func putItem(_ server: TestServer, _ path: String, _ body: String, headers: [(String, String)] = []) async throws -> TestServer.Reply {
        try await server.request(.PUT, path, body: body, headers: headers)
    }

    private func patchItem(_ server: TestServer, _ path: String, _ body: String, headers: [(String, String)] = []) async throws -> TestServer.Reply {
        try await server.request(.PATCH, path, body: body, headers: [("Content-Type", "application/merge-patch+json")] + headers)
    }

    // MARK: - The routes

    @Test func oneItemIsReadWithItsVersionAsETag() async throws {
        try await TestServer.run(feed: Self.threeItems()) { server in
            let reply = try await server.get("/api/items/item-0")
            #expect(reply.status == 200)
            #expect(reply.json["id"] as? String == "item-0")
            #expect(reply.json["version"] as? Int == 3 && reply.json["position"] as? Int == 3)
            #expect(reply.headers["ETag"].first == #""3""#)
            let same = try await server.get("/api/feeds/main/items/item-0", headers: [("If-None-Match", #""3""#)])
            #expect(same.status == 304 && same.body.isEmpty)
            #expect(same.headers["ETag"].first == #""3""#)
            #expect(try await server.get("/api/items/item-0", headers: [("If-None-Match", #""2""#)]).status == 200)
            let missing = try await server.get("/api/items/nothing")
            #expect(missing.status == 404 && missing.json["error"] as? String == "not_found")
        }
    }

    @Test func putReplacesTheItemWhereItStandsAndPatchChangesSomeFields() async throws {
        try await TestServer.run(feed: Self.threeItems()) { server in
            let before = try await server.get("/api/items/item-1").json
            let put = try await putItem(server, "/api/items/item-1", #"{"title":"Corrected","summary":"A summary","author":"Ann"}"#)
            #expect(put.status == 200)
            #expect(put.json["title"] as? String == "Corrected" && put.json["summary"] as? String == "A summary")
            #expect(put.json["version"] as? Int == 4)
            #expect(put.json["position"] as? Int == before["position"] as? Int)
            #expect(put.json["published"] as? String == before["published"] as? String, "kept when left out")
            #expect(put.headers["ETag"].first == #""4""#)

            let patched = try await patchItem(server, "/api/feeds/main/items/item-1", #"{"summary":null,"link":"https://example.com/1"}"#)
            #expect(patched.status == 200)
            #expect(patched.json["summary"] == nil && patched.json["link"] as? String == "https://example.com/1")
            #expect(patched.json["title"] as? String == "Corrected" && patched.json["author"] as? String == "Ann")
            #expect(patched.json["version"] as? Int == 5)

            // Replacing an item with what it holds changes nothing, not even its version.
            let same = try await putItem(server, "/api/items/item-1", #"{"title":"Corrected","link":"https://example.com/1","author":"Ann"}"#)
            #expect(same.status == 200 && same.json["version"] as? Int == 5)

            let page = try await server.get("/api/items").json["items"] as? [[String: Any]] ?? []
            #expect(page.compactMap { $0["id"] as? String } == ["item-0", "item-1", "item-2"], "nothing moved")
        }
    }

    @Test func deleteRemovesTheItemForGood() async throws {
        try await TestServer.run(feed: Self.threeItems()) { server in
            let removed = try await server.request(.DELETE, "/api/items/item-1")
            #expect(removed.status == 204 && removed.body.isEmpty)
            #expect(try await server.get("/api/items/item-1").status == 404)
            #expect(try await server.request(.DELETE, "/api/items/item-1").status == 404)
            let page = try await server.get("/api/items").json["items"] as? [[String: Any]] ?? []
            #expect(page.compactMap { $0["id"] as? String } == ["item-0", "item-2"])
            // Published again, the id is a new item, on top.
            let again = try await server.post("/api/items", #"{"id":"item-1","title":"Back"}"#)
            #expect(again.status == 201)
            let top = try await server.get("/api/items").json["items"] as? [[String: Any]] ?? []
            #expect(top.first?["id"] as? String == "item-1" && top.first?["position"] as? Int == 4)
        }
    }

    @Test func ifMatchGuardsEveryWrite() async throws {
        try await TestServer.run(feed: Self.threeItems()) { server in
            let stale = try await putItem(server, "/api/items/item-0", #"{"title":"Stale"}"#, headers: [("If-Match", #""2""#)])
            #expect(stale.status == 412 && stale.json["error"] as? String == "precondition_failed")
            let weak = try await patchItem(server, "/api/items/item-0", #"{"title":"Weak"}"#, headers: [("If-Match", #"W/"3""#)])
            #expect(weak.status == 412, "a weak tag never matches")
            #expect(try await server.request(.DELETE, "/api/items/item-0", headers: [("If-Match", #""1", "2""#)]).status == 412)
            #expect(try await server.get("/api/items/item-0").json["title"] as? String == "item 0", "nothing changed")

            let current = try await patchItem(server, "/api/items/item-0", #"{"title":"Current"}"#, headers: [("If-Match", #""1", "3""#)])
            #expect(current.status == 200 && current.json["version"] as? Int == 4)
            let any = try await patchItem(server, "/api/items/item-0", #"{"title":"Any"}"#, headers: [("If-Match", "*")])
            #expect(any.status == 200)
            #expect(try await server.request(.DELETE, "/api/items/item-0", headers: [("If-Match", #""5""#)]).status == 204)
            // `*` matches an item that exists; there is none now.
            #expect(try await patchItem(server, "/api/items/item-0", #"{"title":"x"}"#, headers: [("If-Match", "*")]).status == 404)
        }
    }

    @Test(arguments: [
        (#"[]"#, "not an object"),
        (#"{"title":null}"#, "removes the title"),
        (#"{"published":null}"#, "removes the date"),
        (#"{"id":"other"}"#, "changes the id"),
        (#"{"colour":"red"}"#, "a member items have not"),
        (#"{"title":""}"#, "an empty title"),
        (#"{"title":"\#(String(repeating: "x", count: 501))"}"#, "a title past its limit"),
        (#"{"link":"javascript:alert(1)"}"#, "a link that is not http"),
        (#"{"published":"yesterday"}"#, "a date that is not a date"),
        (#"{"title":"x""#, "not JSON"),
    ])
    func aBadPatchIsRefusedAndChangesNothing(body: String, why: String) async throws {
        try await TestServer.run(feed: Self.threeItems()) { server in
            let reply = try await patchItem(server, "/api/items/item-0", body)
            #expect(reply.status == 400, "\(why): \(reply.text)")
            #expect(reply.json["error"] as? String != nil && reply.json["message"] as? String != nil)
            let item = try await server.get("/api/items/item-0").json
            #expect(item["title"] as? String == "item 0" && item["version"] as? Int == 3, "\(why)")
        }
    }

    @Test func aBadReplacementIsRefusedAndChangesNothing() async throws {
        try await TestServer.run(feed: Self.threeItems()) { server async throws in
            #expect(try await putItem(server, "/api/items/item-0", #"{"id":"item-1","title":"x"}"#).status == 400, "another id")
            #expect(try await putItem(server, "/api/items/item-0", #"{"summary":"no title"}"#).status == 400)
            #expect(try await putItem(server, "/api/items/item-0", "").status == 400)
            let unquoted = try await putItem(server, "/api/items/item-0", #"{"title":"x"}"#, headers: [("If-Match", "3")])
            #expect(unquoted.status == 400 && unquoted.json["error"] as? String == "invalid_precondition", "not quoted")
            #expect(try await putItem(server, "/api/feeds/bad%20name/items/item-0", #"{"title":"x"}"#).status == 400)
            #expect(try await server.get("/api/items/item-0").json["version"] as? Int == 3)
        }
    }

    @Test func editingAndRemovingNeedThePublishRight() async throws {
        let configuration = TestServer.configuration { $0.publishToken = "secret-token" }
        try await TestServer.run(configuration, feed: Self.threeItems()) { server in
            let refused = try await putItem(server, "/api/items/item-0", #"{"title":"x"}"#)
            #expect(refused.status == 401)
            #expect(try await patchItem(server, "/api/items/item-0", #"{"title":"x"}"#, headers: [("Authorization", "Bearer wrong")]).status == 401)
            #expect(try await server.request(.DELETE, "/api/items/item-0").status == 401)
            #expect(try await server.get("/api/items/item-0").json["version"] as? Int == 3, "reading needs no right")
            let allowed = try await patchItem(server, "/api/items/item-0", #"{"title":"x"}"#, headers: [("Authorization", "Bearer secret-token")])
            #expect(allowed.status == 200)
        }
    }

    // MARK: - Changes to the pages

    /// An edit and a removal of rows a page shows reach its stream at once, each once, in
    /// version order; a page of another feed hears nothing.
    @Test func aChangeReachesThePagesThatShowItAndNoOther() async throws {
        try await TestServer.run(feed: Self.threeItems()) { server in
            #expect(try await server.post("/api/feeds/other/items", #"{"id":"o","title":"Other"}"#).status == 201)
            let (_, page) = try await showing(server)
            let (_, other) = try await showing(server, feed: "other")

            #expect(try await patchItem(server, "/api/items/item-1", #"{"title":"Corrected"}"#).status == 200)
            let edit = try await page.nextEvent()
            #expect(edit.event == "changes")
            #expect(edit.json["version"] as? Int == 4)
            let update = try #require(changes(edit).first)
            #expect(update["op"] as? String == "update")
            #expect((update["item"] as? [String: Any])?["title"] as? String == "Corrected")
            #expect((update["item"] as? [String: Any])?["version"] as? Int == 4)

            #expect(try await server.request(.DELETE, "/api/items/item-0").status == 204)
            let removal = try await page.nextEvent()
            #expect(removal.event == "changes" && removal.json["version"] as? Int == 5)
            let removed = try #require(changes(removal).first)
            #expect(removed["op"] as? String == "remove" && removed["id"] as? String == "item-0")
            #expect(removed["position"] as? Int == 3 && removed["version"] as? Int == 5)

            // Posting the id again with the same fields changes nothing and tells no one.
            #expect(
                try await server.post("/api/items", #"{"id":"item-1","title":"Corrected","published":"\#(items(3)[1].published.rfc3339)"}"#).status
                    == 201)
            #expect(try await server.post("/api/feeds/other/items", #"{"id":"o","title":"Other, edited"}"#).status == 201)
            let otherEdit = try await other.nextEvent()
            #expect(otherEdit.event == "changes")
            #expect(try await server.request(.DELETE, "/api/feeds/other/items/o").status == 204)
            #expect(try await other.nextEvent().event == "changes")
            // The first page heard nothing of the other feed: its next event is a state.
            _ = try await server.sample(try #require(try await server.session()), seq: 1, y: 0)
            #expect(try await page.ends(within: 1) == false)
        }
    }

    /// A page shows a window of positions: an item below it (not loaded yet) changes
    /// nothing for the page, and a load-more brings it as it is.
    @Test func aChangeOutsideTheWindowCostsThePageNothing() async throws {
        try await TestServer.run(feed: MemoryFeed(items: items(30))) { server in
            let (id, page) = try await showing(server)
            // The first page holds the 10 newest: item-29 … item-20 are below it.
            #expect(try await patchItem(server, "/api/items/item-25", #"{"title":"Below the window"}"#).status == 200)
            #expect(try await patchItem(server, "/api/items/item-3", #"{"title":"In the window"}"#).status == 200)
            let event = try await page.nextEvent()
            #expect(event.event == "changes")
            #expect(changes(event).compactMap { ($0["item"] as? [String: Any])?["id"] as? String } == ["item-3"])
            #expect(try await server.post("/api/sessions/\(id)/load-more").status == 202)
            let more = try await page.events(until: "done")
            #expect(!more.contains { $0.event == "changes" })
            let loaded = more.first { $0.event == "items" }?.json["items"] as? [[String: Any]] ?? []
            #expect(loaded.first { $0["id"] as? String == "item-25" }?["title"] as? String == "Below the window")
        }
    }

    /// A refresh says "Already up to date" only when nothing is new and nothing the page shows
    /// changed since it last heard: a page without a stream open gets its changes with it.
    @Test func aRefreshBringsTheChangesItsPageHasNotSeen() async throws {
        try await TestServer.run(feed: Self.threeItems()) { server in
            let reply = try await server.post("/api/sessions", #"{"firstPage":true}"#)
            let id = try #require(reply.json["id"] as? String)
            #expect(try await patchItem(server, "/api/items/item-2", #"{"title":"Edited while away"}"#).status == 200)
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            // From the first event on, as the page opens it.
            let stream = try await server.events(id, lastEventID: 0)
            let events = try await stream.events(until: "done")
            let changed = events.filter { $0.event == "changes" }
            #expect(changed.count == 1)
            #expect(changed.first.map(changes)?.first?["op"] as? String == "update")
            let messages = events.filter { $0.event == "progress" }.compactMap { $0.json["message"] as? String }
            #expect(!messages.contains { $0.contains("up to date") }, "\(messages)")

            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let again = try await stream.events(until: "done")
            #expect(!again.contains { $0.event == "changes" }, "each change once")
            let said = again.filter { $0.event == "progress" }.compactMap { $0.json["message"] as? String }
            #expect(said.contains("Already up to date"), "\(said)")
        }
    }

    /// `news` counts only items that still exist: a removal among the items it counted
    /// corrects the count the page shows.
    @Test func aRemovedItemIsNeverCountedAsNews() async throws {
        try await TestServer.run(feed: Self.threeItems()) { server in
            let (id, page) = try await showing(server)
            #expect(try await server.post("/api/items", #"{"items":[{"id":"n1","title":"One"},{"id":"n2","title":"Two"}]}"#).status == 201)
            let news = try await page.nextEvent()
            #expect(news.event == "news" && news.json["count"] as? Int == 2)
            #expect(try await server.request(.DELETE, "/api/items/n2").status == 204)
            let corrected = try await page.nextEvent()
            #expect(corrected.event == "news" && corrected.json["count"] as? Int == 1)
            #expect((corrected.json["newest"] as? [String: Any])?["id"] as? String == "n1", "the newest that still exists")
            #expect(try await server.request(.DELETE, "/api/items/n1").status == 204)
            let none = try await page.nextEvent()
            #expect(none.event == "news" && none.json["count"] as? Int == 0)
            // The refresh brings nothing new, and says so.
            #expect(try await server.post("/api/sessions/\(id)/refresh").status == 202)
            let refresh = try await page.events(until: "done")
            let added = refresh.filter { $0.event == "items" }.flatMap { $0.json["items"] as? [[String: Any]] ?? [] }
            #expect(added.isEmpty)
        }
    }

    /// Past the replay buffer, a stream that comes back with the id of the last event it got
    /// is told the net changes to its rows since then, as one `changes` event, instead of
    /// `reset`.
    @Test func aStreamBackPastTheBufferGetsTheChangesInsteadOfAReset() async throws {
        let configuration = TestServer.configuration { $0.replayBufferLength = 4 }
        try await TestServer.run(configuration, feed: MemoryFeed(items: items(5))) { server in
            let (id, page) = try await showing(server)
            #expect(try await patchItem(server, "/api/items/item-1", #"{"title":"Seen"}"#).status == 200)
            let seen = try await page.nextEvent()
            #expect(seen.event == "changes")
            let cursor = try #require(seen.id)

            // More changes than the buffer keeps events: the cursor falls out of it. Net, the
            // page needs four: item-3 gone, item-4, item-1 and item-0 as they now are.
            #expect(try await patchItem(server, "/api/items/item-1", #"{"title":"Edited twice"}"#).status == 200)
            #expect(try await server.request(.DELETE, "/api/items/item-3").status == 204)
            for round in 1...3 { #expect(try await patchItem(server, "/api/items/item-4", #"{"summary":"Round \#(round)"}"#).status == 200) }
            #expect(try await patchItem(server, "/api/items/item-1", #"{"title":"Edited three times"}"#).status == 200)
            #expect(try await patchItem(server, "/api/items/item-0", #"{"author":"Ann"}"#).status == 200)
            _ = try await server.sample(id, seq: 1, y: -5)

            let back = try await server.events(id, lastEventID: cursor)
            let first = try await back.nextEvent()
            #expect(first.event == "changes", "\(first)")
            let ops = changes(first).map {
                ($0["op"] as? String ?? "", ($0["item"] as? [String: Any])?["id"] as? String ?? $0["id"] as? String ?? "")
            }
            #expect(ops.map(\.0) == ["remove", "update", "update", "update"])
            #expect(ops.map(\.1) == ["item-3", "item-4", "item-1", "item-0"])
            #expect((changes(first)[2]["item"] as? [String: Any])?["title"] as? String == "Edited three times", "the net change")
            #expect(first.json["version"] as? Int == 13)
            #expect(try await back.nextEvent().event == "state")
        }
    }

    /// A new session that continues a page's list (`resume`) with the version the page
    /// showed is told what changed in its rows since.
    @Test func aResumedSessionIsToldWhatChangedSinceItsVersion() async throws {
        try await TestServer.run(feed: Self.threeItems()) { server in
            #expect(try await patchItem(server, "/api/items/item-0", #"{"title":"Before"}"#).status == 200)
            #expect(try await patchItem(server, "/api/items/item-2", #"{"title":"After"}"#).status == 200)
            #expect(try await server.request(.DELETE, "/api/items/item-1").status == 204)
            // The page showed the three items as of version 4: the two later changes are new to it.
            let reply = try await server.post("/api/sessions", #"{"resume":{"head":3,"oldest":"item-2","version":4}}"#)
            #expect(reply.status == 201 && reply.json["resumed"] as? Bool == true)
            let stream = try await server.events(try #require(reply.json["id"] as? String), lastEventID: 0)
            let told: SSE? = try await stream.nextEvent()
            #expect(told?.event == "changes")
            #expect(told.map(changes)?.count == 2)
            #expect(told?.json["version"] as? Int == 6)
            #expect(
                told.map(changes)?.compactMap { ($0["item"] as? [String: Any])?["id"] as? String ?? $0["id"] as? String } == ["item-2", "item-1"])
        }
    }
}
