import Foundation
import OpenAPIAsyncHTTPClient
import RefreshClient
import RefreshEngine
import RefreshServer
import RefreshServerTesting
import Synchronization
import Testing

/// Edits and removals through the client, against the real server: the session's `changes`
/// reach a ``RemoteList`` that then holds what the feed holds, across a stream cut past the
/// replay buffer and across a restart that loses the session.
@Suite struct LiveChangeTests {
    static let feed = "edits"

    /// Publishes `count` items to the test's feed, oldest first.
    static func seed(_ client: RefreshClient, _ count: Int) async throws -> [FeedItem] {
        try await client.publish((1...count).map { NewItem(id: "item-\($0)", title: "Item \($0)") }, to: feed)
    }

    /// Applies every event recorded so far to a new list.
    static func list(_ events: EventRecorder) -> RemoteList {
        var list = RemoteList()
        for event in events.events { list.apply(event) }
        return list
    }

    /// The feed's newest page as stored, the way the list shows it.
    static func stored(_ client: RefreshClient) async throws -> [FeedItem] {
        try await client.items(feed: feed).items
    }

    @Test func anEditAndARemovalReachTheListWhereTheRowsStand() async throws {
        try await LiveServer.run { server in
            let client = server.client()
            let seeded = try await Self.seed(client, 3)
            #expect(seeded.map(\.version) == [1, 2, 3])
            let session = try await client.session(feed: Self.feed)
            let events = EventRecorder(session)
            let first = try await LiveSessionTests.firstPage(events)
            #expect(first.items.map(\.id) == ["item-3", "item-2", "item-1"])
            #expect(first.version == 3)

            let edited = try await client.edit("item-2", in: Self.feed) { $0.title = "Item 2, corrected" }
            #expect(edited.title == "Item 2, corrected" && edited.version == 4 && edited.position == 2)
            let update = try await events.next("the edit") { $0.changes != nil }.changes!
            #expect(update == ItemChanges(version: 4, changes: [.update(edited)]))

            try await client.remove("item-3", from: Self.feed)
            let removal = try await events.next("the removal") { $0.changes?.version == 5 }.changes!
            #expect(removal.changes == [.remove(id: "item-3", position: 3, version: 5)])

            let list = Self.list(events)
            #expect(list.items.map(\.title) == ["Item 2, corrected", "Item 1"])
            #expect(list.items == (try await Self.stored(client)))
            #expect(list.version == 5)

            // Nothing new, nothing changed since: the refresh adds nothing, and the edit does
            // not come again.
            let action = try #require(try await session.refresh())
            let done = try await events.next("the refresh") { $0.done?.actionID == action }.done!
            #expect(done.outcome == .completed && done.added == 0)
            #expect(events.events.compactMap(\.changes).count == 2, "each change once")
            events.cancel()
            await session.close()
        }
    }

    /// A write that names a version the item is no longer at changes nothing; an id the feed
    /// has not is `404`; `edit` reads again after losing a race and makes its change on top.
    @Test func versionsGuardWritesAndUnknownIdsAreRefused() async throws {
        try await LiveServer.run { server in
            let client = server.client()
            _ = try await Self.seed(client, 1)
            let item = try await client.item("item-1", in: Self.feed)
            #expect(item.version == 1 && item.title == "Item 1")

            try await client.replace("item-1", in: Self.feed, with: NewItem(title: "First writer"), ifVersion: 1)
            let refused = await #expect(throws: RefreshError.self) {
                try await client.replace("item-1", in: Self.feed, with: NewItem(title: "Second writer"), ifVersion: 1)
            }
            #expect(refused?.status == 412 && refused?.code == "precondition_failed")
            let gone = await #expect(throws: RefreshError.self) { try await client.remove("item-1", from: Self.feed, ifVersion: 1) }
            #expect(gone?.status == 412)
            #expect(try await client.item("item-1", in: Self.feed).title == "First writer")

            let unknown = await #expect(throws: RefreshError.self) { try await client.remove("no-such-item", from: Self.feed) }
            #expect(unknown?.status == 404 && unknown?.code == "not_found")
            let missing = await #expect(throws: RefreshError.self) { try await client.item("no-such-item", in: Self.feed) }
            #expect(missing?.status == 404)

            // `edit` from a version someone else changes meanwhile: the first attempt is
            // refused, the second is made on the newer item.
            let raced = Mutex(false)
            let result = try await client.edit("item-1", in: Self.feed) { item in
                let first = raced.withLock { raced in
                    defer { raced = true }
                    return !raced
                }
                if first {
                    // The competing write, made between this attempt's read and its write.
                    try await client.replace("item-1", in: Self.feed, with: NewItem(title: "Competing", author: "B"))
                }
                item.summary = "Edited on top"
            }
            #expect(result.title == "Competing" && result.author == "B" && result.summary == "Edited on top")
        }
    }

    /// Past the replay buffer, a stream that comes back is told what changed in its rows as one
    /// `changes` event instead of a `reset`: the list converges without being reloaded.
    @Test func aStreamBackPastTheBufferIsToldTheChangesNotReset() async throws {
        let configuration = LiveServer.configuration { $0.replayBufferLength = 8 }
        try await LiveServer.run(configuration) { server in
            try await LiveSessionTests.withProxy(to: server) { proxy in
                let direct = server.client()
                _ = try await Self.seed(direct, 5)
                let client = LiveSessionTests.client(proxy)
                let session = try await client.session(feed: Self.feed)
                let events = EventRecorder(session)
                _ = try await LiveSessionTests.firstPage(events)
                let id = await session.id
                try await eventually(30, "the stream to open") { try await server.openStreams(id) == 1 }

                proxy.refusing = true
                #expect(proxy.cutStreams() == 1)
                proxy.cutAll()
                try await direct.edit("item-4", in: Self.feed) { $0.title = "Item 4, corrected" }
                try await direct.remove("item-2", from: Self.feed)
                // More events than the buffer keeps: three refreshes of about seven each.
                for _ in 0..<3 {
                    #expect(try await server.json("/api/sessions/\(id)/refresh", post: true).status == 202)
                    try await eventually(30, "the refresh to end") {
                        let state = try await server.session(id)["state"] as? [String: Any]
                        return state?["phase"] as? String == "idle"
                    }
                }
                let count = events.events.count
                proxy.refusing = false
                let changes = try await events.next("the changes", within: 40, after: count) { $0.changes != nil }.changes!
                #expect(Set(changes.changes.map(\.id)) == ["item-4", "item-2"])
                #expect(!events.events.contains { $0.resetReason != nil })
                let list = Self.list(events)
                #expect(list.items == (try await Self.stored(direct)))
                #expect(list.items.map(\.id) == ["item-5", "item-4", "item-3", "item-1"])
                events.cancel()
                await session.close()
            }
        }
    }

    /// A session lost in a restart is replaced by one that continues the list from the version
    /// it showed: an edit and a removal made while it was away reach it as `changes`.
    @Test func aReplacementIsToldWhatChangedWhileAway() async throws {
        let directory = Scratch.path("client-changes")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = LiveServer.configuration { $0.database = directory.appendingPathComponent("feed.sqlite").path }
        let first = try await LiveServer.start(configuration)
        let proxy: TestProxy
        do {
            proxy = try await TestProxy.start(to: first.port)
        } catch {
            try? await first.stop()
            throw error
        }
        var second: LiveServer?
        do {
            _ = try await Self.seed(first.client(), 4)
            let client = LiveSessionTests.client(proxy)
            let session = try await client.session(feed: Self.feed)
            let events = EventRecorder(session)
            _ = try await LiveSessionTests.firstPage(events)
            let oldID = await session.id
            try await eventually(30, "the stream to open") { try await first.openStreams(oldID) == 1 }

            try await first.stop()
            let restarted = try await LiveServer.start(configuration)
            second = restarted
            // Changed while no instance held the session.
            try await restarted.client().edit("item-1", in: Self.feed) { $0.author = "Moderator" }
            try await restarted.client().remove("item-3", from: Self.feed)
            try proxy.retarget(to: restarted.port)

            try await events.next("the replacement", within: 15) { $0 == .replaced(resumed: true) }
            let changes = try await events.next("the changes") { $0.changes != nil }.changes!
            #expect(Set(changes.changes.map(\.id)) == ["item-1", "item-3"])
            let list = Self.list(events)
            #expect(list.items == (try await Self.stored(restarted.client())))
            #expect(list.items.first { $0.id == "item-1" }?.author == "Moderator")
            events.cancel()
            await session.close()
        } catch {
            await proxy.close()
            try? await second?.stop()
            throw error
        }
        await proxy.close()
        try await second?.stop()
    }
}

extension SessionEvent {
    var changes: ItemChanges? {
        if case .changes(let changes) = self { return changes }
        return nil
    }
}
