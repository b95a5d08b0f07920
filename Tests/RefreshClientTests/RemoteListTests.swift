import Foundation
import RefreshClient
import Testing

/// The list model applying a session's events, in order, to one array.
@Suite struct RemoteListTests {
    static func item(_ id: String, _ title: String? = nil, version: Int = 1) -> FeedItem {
        FeedItem(id: id, title: title ?? id, published: Date(timeIntervalSince1970: 0), version: version)
    }

    static func items(_ operation: ItemsUpdate.Operation, _ ids: [String], hasMore: Bool = true, version: Int? = nil) -> SessionEvent {
        .items(ItemsUpdate(actionID: nil, operation: operation, items: ids.map { item($0) }, hasMore: hasMore, head: nil, version: version))
    }

    static func news(_ count: Int) -> SessionEvent {
        .news(News(count: count, newestID: "n", newestTitle: "n", newestPublished: Date(timeIntervalSince1970: 0), head: 9))
    }

    @Test func itemsGoAboveOrBelowAndHasMoreFollowsTheServer() {
        var list = RemoteList()
        var changed = false
        #expect(!list.hasMore && list.items.isEmpty)
        changed = list.apply(Self.items(.append, ["c", "b"], version: 3))
        #expect(changed)
        changed = list.apply(Self.items(.append, ["a"], hasMore: false))
        #expect(changed)
        changed = list.apply(Self.items(.prepend, ["e", "d"], hasMore: false, version: 5))
        #expect(changed)
        #expect(list.items.map(\.id) == ["e", "d", "c", "b", "a"])
        #expect(!list.hasMore && list.version == 5)
    }

    @Test func anEditReplacesTheRowWhereItStandsAndARemovalTakesItOut() {
        var list = RemoteList()
        var changed = false
        list.apply(Self.items(.append, ["c", "b", "a"], version: 3))
        let edited = Self.item("b", "B, corrected", version: 4)
        changed = list.apply(.changes(ItemChanges(version: 5, changes: [.update(edited), .remove(id: "c", position: 3, version: 5)])))
        #expect(changed)
        #expect(list.items == [edited, Self.item("a")])
        #expect(list.version == 5)
        // A change to a row the list does not show (it was never loaded, or is gone) changes nothing.
        changed = list.apply(.changes(ItemChanges(version: 6, changes: [.update(Self.item("z")), .remove(id: "c", position: 3, version: 6)])))
        #expect(!changed)
        #expect(list.version == 6)
    }

    @Test func newsIsKeptUntilItemsComeOnTopOrItsCountIsNone() {
        var list = RemoteList()
        var changed = false
        list.apply(Self.items(.append, ["a"]))
        changed = list.apply(Self.news(2))
        #expect(changed)
        #expect(list.news?.count == 2)
        // A removal among the items it counted corrects the count, to none.
        changed = list.apply(Self.news(0))
        #expect(changed)
        #expect(list.news == nil)
        list.apply(Self.news(1))
        list.apply(Self.items(.prepend, ["b"]))
        #expect(list.news == nil && list.items.map(\.id) == ["b", "a"])
    }

    @Test func anItemBroughtAgainIsShownOnce() {
        var list = RemoteList()
        var changed = false
        list.apply(Self.items(.append, ["b", "a"]))
        list.apply(Self.items(.prepend, ["c", "b"]))
        #expect(list.items.map(\.id) == ["c", "b", "a"])
    }

    @Test func aResetOrAReplacementThatStartsOverClearsTheList() {
        var list = RemoteList()
        var changed = false
        list.apply(Self.items(.append, ["b", "a"], version: 2))
        list.apply(Self.news(1))
        changed = list.apply(.replaced(resumed: true))
        #expect(!changed)
        #expect(list.items.count == 2)
        changed = list.apply(.replaced(resumed: false))
        #expect(changed)
        #expect(list == RemoteList())
        list.apply(Self.items(.append, ["x"]))
        changed = list.apply(.reset(reason: "missed"))
        #expect(changed)
        #expect(list.items.isEmpty && list.version == nil)
    }

    @Test func theGesturesOwnEventsChangeNothing() {
        var list = RemoteList()
        var changed = false
        list.apply(Self.items(.append, ["a"]))
        changed = list.apply(.progress(ActionProgress(actionID: "r", kind: .refresh, fraction: 0.5, stage: "fetching", message: "…")))
        #expect(!changed)
        changed = list.apply(.done(ActionResult(actionID: "r", kind: .refresh, outcome: .completed, added: 0)))
        #expect(!changed)
    }
}
