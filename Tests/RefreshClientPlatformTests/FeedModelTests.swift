import Foundation
import HTTPTypes
import OpenAPIRuntime
import RefreshEngine
import Testing

@testable import RefreshClient

/// The article's model applying a session's events: what a list shows after each.
@MainActor
@Suite struct FeedModelTests {
    let model = FeedModel(client: RefreshClient(serverURL: URL(string: "http://127.0.0.1:9")!, transport: Unreachable()))

    @Test func theFirstPageFillsTheListAndALoadMoreAppends() {
        model.apply(.items(update(.append, ["a", "b"], hasMore: true)))
        model.apply(.items(update(.append, ["c"], hasMore: false)))
        #expect(model.items.map(\.id) == ["a", "b", "c"])
        #expect(!model.hasMore)
    }

    @Test func newsIsABadgeUntilTheRefreshBringsItsItems() {
        model.apply(.items(update(.append, ["a"], hasMore: false)))
        model.apply(.news(News(count: 2, newestID: "c", newestTitle: "c", newestPublished: Date(), head: 3)))
        #expect(model.news?.count == 2)
        model.apply(.items(update(.prepend, ["c", "b"], hasMore: false)))
        #expect(model.items.map(\.id) == ["c", "b", "a"])
        #expect(model.news == nil)
    }

    @Test func anEditedRowIsRedrawnWhereItStandsARemovedOneGoes() {
        model.apply(.items(update(.append, ["c", "b", "a"], hasMore: false)))
        let edited = FeedItem(id: "b", title: "b, edited", published: Date(), version: 4)
        model.apply(.changes(ItemChanges(version: 5, changes: [.update(edited), .remove(id: "a", position: 1, version: 5)])))
        #expect(model.items.map(\.id) == ["c", "b"])
        #expect(model.items[1].title == "b, edited")
    }

    @Test func theStateIsWhatIsDrawn() {
        let held = GestureState(
            edge: .top, phase: .refreshing, pull: 1, distance: 0, rotation: 180, indicatorOffset: 50, reveal: 0,
            label: "Refreshing…", seq: 7
        )
        model.apply(.state(held))
        #expect(model.gesture == held)
        model.apply(.progress(ActionProgress(actionID: "r1", kind: .refresh, fraction: 0.5, stage: "fetching", message: "Fetching")))
        #expect(model.progress?.fraction == 0.5)
        model.apply(.done(ActionResult(actionID: "r1", kind: .refresh, outcome: .failed, added: 0, error: "upstream_failed")))
        #expect(model.progress == nil)
        #expect(model.failure == "upstream_failed")
    }

    @Test func aReplacementThatResumesKeepsTheListOneThatDoesNotStartsOver() {
        model.apply(.items(update(.append, ["a", "b"], hasMore: true)))
        model.apply(.replaced(resumed: true))
        #expect(model.items.map(\.id) == ["a", "b"])
        model.apply(.replaced(resumed: false))
        #expect(model.items.isEmpty)
        #expect(!model.hasMore)
        model.apply(.items(update(.append, ["x"], hasMore: false)))
        #expect(model.items.map(\.id) == ["x"])
    }

    private func update(_ operation: ItemsUpdate.Operation, _ ids: [String], hasMore: Bool) -> ItemsUpdate {
        ItemsUpdate(
            actionID: nil, operation: operation, items: ids.map { FeedItem(id: $0, title: $0, published: Date()) },
            hasMore: hasMore, head: nil
        )
    }
}

/// A server that is never there: these tests apply events by hand and make no request.
private struct Unreachable: ClientTransport {
    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        throw URLError(.cannotConnectToHost)
    }
}
