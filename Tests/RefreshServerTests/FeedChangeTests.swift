import Foundation
import Synchronization
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Edits in place and removals, on every store: each change takes the feed's next version,
/// an item keeps its position, a removal leaves a tombstone that the change log reports until
/// it is forgotten, and racing writers never both win.
@Suite struct FeedChangeTests {
    @Test(arguments: Store.allCases)
    func anEditKeepsThePositionAndTakesTheNextVersion(store: Store) async throws {
        let feed = try await store.make()
        let stored = try await feed.publishing(items(3))
        #expect(stored.version == 3)
        #expect(stored.stored.map(\.version) == [3, 2, 1], "a batch's versions follow its positions")
        let middle = try #require(try await feed.item(id: "item-1"))
        #expect(middle.position == 2 && middle.version == 2)

        var edited = middle
        edited.title = "Edited"
        let written = try await feed.replace(edited, ifVersion: 2)
        #expect(written.version == 4)
        #expect(written.changes.count == 1)
        let after = try #require(try await feed.item(id: "item-1"))
        #expect(after.title == "Edited" && after.position == 2 && after.version == 4)
        #expect(try await feed.older(than: nil, limit: 10).items.map(\.id) == ["item-0", "item-1", "item-2"], "it stands where it stood")
        #expect(try await feed.head()?.position == 3)
        #expect(try await feed.head()?.version == 4)

        // Replacing it with what it holds changes nothing, and takes no version.
        let same = try await feed.replace(after, ifVersion: nil)
        #expect(same.changes.isEmpty && same.version == 4)
        let republished = try await feed.publishing([after])
        #expect(republished.changes.isEmpty && republished.added == 0 && republished.version == 4)

        // A publish of a known id with another field is an edit too.
        var retitled = after
        retitled.title = "Retitled"
        let viaPublish = try await feed.publishing([retitled])
        #expect(viaPublish.changes.map(\.version) == [5] && viaPublish.added == 0 && viaPublish.head == nil)

        let changes = try #require(try await feed.changes(since: 3, within: 1...3, limit: 10))
        #expect(changes.version == 5)
        #expect(changes.changes.count == 1, "net: the item's last change only")
        guard case .update(let item)? = changes.changes.first else { throw TestFailure("no update: \(changes)") }
        #expect(item.title == "Retitled")
        #expect(try await feed.changes(since: 5, within: 1...3, limit: 10)?.changes.isEmpty == true)
        #expect(try await feed.changes(since: 3, within: 3...3, limit: 10)?.changes.isEmpty == true, "outside the positions asked")
    }

    @Test(arguments: Store.allCases)
    func aRemovalLeavesATombstoneAndItsPositionIsNeverTakenAgain(store: Store) async throws {
        let feed = try await store.make()
        _ = try await feed.publishing(items(3))
        let removed = try await feed.remove(id: "item-0", ifVersion: nil)
        #expect(removed.changes == [.remove(id: "item-0", position: 3, version: 4)])
        #expect(try await feed.item(id: "item-0") == nil)
        #expect(try await feed.position(of: "item-0") == 3, "a page can go on from where it stood")
        #expect(try await feed.older(than: nil, limit: 10).items.map(\.id) == ["item-1", "item-2"])
        #expect(try await feed.added(after: 1, limit: 10).items.map(\.id) == ["item-1"])
        let head = try #require(try await feed.head())
        #expect(head.position == 3 && head.item.id == "item-1" && head.version == 4, "the newest item held, at the head's position")

        let fresh = try await feed.publishing([FeedItem(id: "fresh", title: "Fresh", published: .now())])
        #expect(fresh.stored.first?.position == 4 && fresh.stored.first?.version == 5)
        // Published again, a removed id is a new item.
        let again = try await feed.publishing([FeedItem(id: "item-0", title: "Back", published: .now())])
        #expect(again.added == 1 && again.stored.first?.position == 5)

        let changes = try #require(try await feed.changes(since: 3, within: 1...3, limit: 10))
        #expect(changes.changes == [.remove(id: "item-0", position: 3, version: 4)])
        await #expect(throws: FeedItemNotFound(id: "nobody")) { try await feed.remove(id: "nobody", ifVersion: nil) }
        await #expect(throws: FeedItemNotFound(id: "nobody")) {
            try await feed.replace(FeedItem(id: "nobody", title: "x", published: .now()), ifVersion: nil)
        }
    }

    @Test(arguments: Store.allCases)
    func anotherVersionChangesNothing(store: Store) async throws {
        let feed = try await store.make()
        _ = try await feed.publishing(items(2))
        var edited = try #require(try await feed.item(id: "item-0"))
        edited.summary = "New"
        await #expect(throws: FeedVersionMismatch(current: 2)) { try await feed.replace(edited, ifVersion: 1) }
        await #expect(throws: FeedVersionMismatch(current: 2)) { try await feed.remove(id: "item-0", ifVersion: 7) }
        #expect(try await feed.item(id: "item-0")?.summary == nil)
        #expect(try await feed.head()?.version == 2)
    }

    /// Writers racing to edit one item, each from the version it read: exactly one wins, the
    /// others are told the version changed; and an edit racing a removal: one of them.
    @Test(arguments: Store.allCases)
    func racingEditsOfOneItemNeverBothWin(store: Store) async throws {
        let feed = try await store.make()
        _ = try await feed.publishing(items(1))
        let read = try #require(try await feed.item(id: "item-0"))
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask {
                    var edited = read
                    edited.title = "Edit \(index)"
                    do {
                        _ = try await feed.replace(edited, ifVersion: read.version)
                        return true
                    } catch is FeedVersionMismatch {
                        return false
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1)
        #expect(try await feed.item(id: "item-0")?.version == 2)

        let now = try #require(try await feed.item(id: "item-0"))
        async let edit: Bool = {
            var edited = now
            edited.title = "Last edit"
            return (try? await feed.replace(edited, ifVersion: now.version)) != nil
        }()
        async let removal: Bool = { (try? await feed.remove(id: "item-0", ifVersion: now.version)) != nil }()
        let (edited, removed) = await (edit, removal)
        #expect(edited != removed, "one of the edit and the removal, not both")
        // One change more, whichever won (the head is gone with the item when the removal did).
        let after = try #require(try await feed.changes(since: 2, within: 1...1, limit: 10))
        #expect(after.version == 3)
        #expect(after.changes.count == 1)
    }

    /// Tombstones are forgotten after their time: what changed before the newest forgotten
    /// one can no longer be told, what changed after it still can.
    @Test(arguments: Store.allCases)
    func forgottenTombstonesEndWhatCanBeTold(store: Store) async throws {
        let feed = try await store.make()
        _ = try await feed.publishing(items(4))
        _ = try await feed.remove(id: "item-3", ifVersion: nil)
        #expect(try await feed.changes(since: 4, within: 1...4, limit: 10)?.changes.count == 1)
        #expect(try await feed.forgetRemovals(before: Timestamp(milliseconds: Timestamp.now().milliseconds + 60_000)) == 1)
        #expect(try await feed.changes(since: 4, within: 1...4, limit: 10) == nil, "the removal at 5 is forgotten")
        var edited = try #require(try await feed.item(id: "item-2"))
        edited.title = "After"
        _ = try await feed.replace(edited, ifVersion: nil)
        #expect(try await feed.changes(since: 5, within: 1...4, limit: 10)?.changes.map(\.version) == [6])
        #expect(try await feed.forgetRemovals(before: .now()) == 0)
    }

    /// More changes than a reader takes at once cannot be told: it starts over.
    @Test(arguments: Store.allCases)
    func moreChangesThanTheLimitCannotBeTold(store: Store) async throws {
        let feed = try await store.make()
        _ = try await feed.publishing(items(5))
        for item in items(5) {
            var edited = item
            edited.title += " edited"
            _ = try await feed.replace(edited, ifVersion: nil)
        }
        #expect(try await feed.changes(since: 5, within: 1...5, limit: 5)?.changes.count == 5)
        #expect(try await feed.changes(since: 5, within: 1...5, limit: 4) == nil)
    }
}
