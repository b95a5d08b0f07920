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
    private(set) var items: [FeedItem] = []
    private(set) var hasMore = false
    private(set) var progress: ActionProgress?
    private(set) var news: News?
    private(set) var failure: String?
    private(set) var session: RemoteSession?
    private let client: RefreshClient
    private let feed: String

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
                // Too much was missed to replay: the list is read anew, then the stream goes on.
                if case .reset = event { await reload() }
            }
        } catch {
            failure = "\(error)"
        }
        await session?.close()
        session = nil
    }

    func apply(_ event: SessionEvent) {
        switch event {
        case .state(let state):
            gesture = state
        case .progress(let progress):
            self.progress = progress
        case .items(let update):
            switch update.operation {
            case .prepend:
                items.insert(contentsOf: update.items, at: 0)
                news = nil
            case .append:
                items.append(contentsOf: update.items)
                hasMore = update.hasMore
            }
        case .done(let result):
            progress = nil
            failure = result.outcome == .failed ? result.error : nil
        case .news(let news):
            self.news = news
        case .reset:
            items = []
            news = nil
        case .replaced(let resumed):
            // Resumed, the list goes on as it is; otherwise the new first page follows.
            if !resumed {
                items = []
                news = nil
                hasMore = false
            }
        }
    }

    /// The badge tapped: the refresh brings the news as items to prepend.
    func showNews() async {
        _ = try? await session?.refresh()
    }

    private func reload() async {
        guard let page = try? await client.items(feed: feed) else { return }
        items = page.items
        hasMore = page.hasMore
    }
}
