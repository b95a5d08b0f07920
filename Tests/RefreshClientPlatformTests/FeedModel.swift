// The model of the article "Driving a session from a scroll view", as it is printed there
// (Tests/adoption/docs.sh holds the two the same): it compiles, and its handling of the
// session's events is tested here.
import Foundation
import Observation
import RefreshClient
import RefreshEngine

@MainActor
@Observable
final class FeedModel {
    private(set) var gesture = GestureState.resting(seq: nil)
    /// The rows, the news badge and paging: items, news and changes applied in order.
    private(set) var list = RemoteList()
    private(set) var progress: ActionProgress?
    private(set) var failure: String?
    private(set) var session: RemoteSession?
    private let client: RefreshClient
    private let feed: String

    var items: [FeedItem] { list.items }
    var hasMore: Bool { list.hasMore }
    var news: News? { list.news }

    init(client: RefreshClient, feed: String = "main") {
        self.client = client
        self.feed = feed
    }

    /// Runs while the list is on screen: cancelling it closes the stream.
    func run() async {
        do {
            let session = try await client.session(feed: feed)
            self.session = session
            for try await event in session.events {
                apply(event)
                // Too much was missed to replay: the list starts over from its first page.
                if case .reset = event { _ = try? await session.loadMore() }
            }
        } catch {
            failure = "\(error)"
        }
        await session?.close()
        session = nil
    }

    func apply(_ event: SessionEvent) {
        list.apply(event)
        switch event {
        case .state(let state):
            gesture = state
        case .progress(let progress):
            self.progress = progress
        case .done(let result):
            progress = nil
            failure = result.outcome == .failed ? result.error : nil
        case .items, .news, .changes, .reset, .replaced:
            break
        }
    }

    /// The badge tapped: the refresh brings the news as items to prepend.
    func showNews() async {
        _ = try? await session?.refresh()
    }
}
