import Foundation
import HTTPTypes
import Hummingbird
import RefreshEngine
import RefreshFeed

/// `/api/sessions/…`: create, show and end a session, ask for actions. Posting samples and
/// the event stream are ``HotRoutes``, answered on the connection's event loop.
struct SessionRoutes: Sendable {
    typealias Context = ServerRequestContext

    let sessions: SessionStore
    /// The session's feed, for its first page and a resumed list.
    let feeds: FeedRegistry
    /// Asked whether the new session's page could open its stream now.
    let streams: StreamGate
    /// Whether the session's feed may be read, and by whom the session is then owned.
    let access: AccessControl
    let configuration: ServerConfiguration

    private func session(_ context: Context) throws -> Session {
        try sessions.session(context.parameters.get("id") ?? "")
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let body = try await RequestBodyReader.json(request, limit: configuration.maxBodyBytes, allowEmpty: true)
        let config = try ConfigDecoding.decode(body)
        let resume = try ResumeDecoding.decode(body)
        let sessionRequest = try SessionRequest.decode(body)
        let wantsFirstPage = sessionRequest.firstPage == true
        let name = try sessionRequest.feedName()
        let owner = try access.read(name, .init(request.headers)).map { SessionOwner(subject: $0.subject) }
        // Within the limits first: a client refused a session makes no store reads.
        let session = try sessions.create(
            config: config, preset: sessionRequest.preset ?? .standard, feed: name, client: context.client, owner: owner)
        var window: PageWindow?
        var firstPage: FeedPage?
        do {
            let feed = try feeds.view(name)
            if let resume {
                await session.readHeadIfUnknown()
                window = try await shownWindow(resume, in: feed, news: feeds.news(of: name))
            }
            // A list that is not continued starts over, from the newest items: in the answer,
            // unless the server has no room for the page's stream now. Such a page shows
            // nothing it could not keep up to date, and a full server reads nothing for it;
            // its first page comes through its stream once that is taken up, as it would
            // without `firstPage`.
            if window == nil, wantsFirstPage, streams.hasRoom(for: context.client) {
                firstPage = try await feed.older(than: nil, limit: configuration.pageSize)
            }
        } catch {
            _ = sessions.end(session.id)
            throw error
        }
        if let window { session.resume(showing: window) }
        if let firstPage { session.show(firstPage: firstPage) }
        let events = "/api/sessions/\(session.id)/events"
        return JSONResponse.make(.created, request: request, headers: [.location: "/api/sessions/\(session.id)"]) { json in
            json.beginObject()
            json.field("id", session.id)
            json.field("feed", name.rawValue)
            json.key("config")
            json.config(config)
            json.field("events", events)
            json.key("state")
            json.gestureState(session.gestureState)
            if window != nil { json.field("resumed", true) }
            if let firstPage {
                json.key("firstPage")
                json.beginObject()
                json.key("items")
                json.items(firstPage.items)
                json.field("hasMore", firstPage.hasMore)
                json.field("head", Int(firstPage.head))
                json.field("version", Int(firstPage.version))
                json.endObject()
            }
            json.endObject()
        }
    }

    /// What a page that has seen the feed up to `resume.head`, down to the item
    /// `resume.oldest`, shows; `nil` when this feed cannot continue that list (it has no such
    /// item, or is behind that head): the page then starts afresh.
    private func shownWindow(_ resume: ResumeDecoding.Resume, in feed: any FeedSource, news: FeedNews?) async throws -> PageWindow? {
        guard let position = try await feed.position(of: resume.oldest), position <= resume.head, let current = try await feed.head(),
            resume.head <= current.position
        else { return nil }
        var window = PageWindow()
        window.shown = resume.head
        window.oldest = position
        window.version = resume.version
        // What was removed among the items the page does not show yet is not counted in its news.
        if let version = resume.version, resume.head < current.position,
            let gone = try await feed.changes(since: version, within: (resume.head + 1)...current.position, limit: FeedNews.changesRead)
        {
            news?.learnRemovals(gone.changes.compactMap { if case .remove(_, let position, _) = $0 { position } else { nil } })
        }
        return window
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let session = try session(context)
        return JSONResponse.make(.ok, request: request) { json in
            json.beginObject()
            json.field("id", session.id)
            json.field("feed", session.feed.rawValue)
            json.key("config")
            json.config(session.config)
            json.key("state")
            json.gestureState(session.gestureState)
            json.field("ignoredSamples", session.ignoredSamples)
            json.field("openStreams", session.openStreams)
            json.endObject()
        }
    }

    @Sendable func end(_ request: Request, context: Context) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        guard sessions.end(id) else { throw APIError.sessionNotFound(id) }
        return Response(status: .noContent)
    }

    @Sendable func refresh(_ request: Request, context: Context) async throws -> Response {
        let id = try session(context).requestRefresh(now: .now)
        return actionAccepted(id, request: request)
    }

    @Sendable func loadMore(_ request: Request, context: Context) async throws -> Response {
        let id = try session(context).requestLoadMore(now: .now)
        return actionAccepted(id, request: request)
    }

    @Sendable func cancelRefresh(_ request: Request, context: Context) async throws -> Response {
        let cancelled = try session(context).cancelRefresh(now: .now)
        return JSONResponse.make(.ok, request: request) { json in
            json.beginObject()
            json.field("cancelled", cancelled != nil)
            json.field("actionId", cancelled?.description)
            json.endObject()
        }
    }

    private func actionAccepted(_ id: ActionID, request: Request) -> Response {
        JSONResponse.make(.accepted, request: request) { json in
            json.beginObject()
            json.field("actionId", id.description)
            json.endObject()
        }
    }
}
