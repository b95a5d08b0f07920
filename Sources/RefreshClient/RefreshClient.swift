import Foundation
import HTTPTypes
import OpenAPIRuntime
import RefreshAPI
// The engine's value types (Sample, GestureState, Preset, RefreshConfig) are this API's own: an app that
// adds only the RefreshClient product uses them without importing the engine.
@_exported import RefreshEngine

/// A client of a swift-pull-to-refresh server, for apps on iOS, macOS and Linux: sessions
/// whose gesture the server decides, the feeds' items, publishing.
///
/// The transport is the app's: `URLSessionTransport()` (swift-openapi-urlsession) on Apple's
/// systems, `AsyncHTTPClientTransport()` (swift-openapi-async-http-client) on Linux.
///
/// ```swift
/// let client = RefreshClient(serverURL: URL(string: "https://news.example")!, transport: URLSessionTransport())
/// let session = try await client.session(feed: "main", preset: .iOS15)
/// for try await event in session.events { … }
/// ```
public struct RefreshClient: Sendable {
    public let serverURL: URL
    let api: Client

    /// - Parameters:
    ///   - serverURL: where the server answers (its `/api/…` paths are below it).
    ///   - transport: the app's HTTP client (URLSession, AsyncHTTPClient): the app chooses it.
    ///   - token: a JWT of the application's login, sent as `Authorization: Bearer`; needed
    ///     for feeds that are not public and for publishing where the server asks for it.
    public init(serverURL: URL, transport: any ClientTransport, token: String? = nil) {
        let provider: (@Sendable () async throws -> String?)? = token.map { token in { @Sendable in token } }
        self.init(serverURL: serverURL, transport: transport, tokenProvider: provider)
    }

    /// - Parameters:
    ///   - serverURL: where the server answers (its `/api/…` paths are below it).
    ///   - transport: the app's HTTP client (URLSession, AsyncHTTPClient): the app chooses it.
    ///   - tokenProvider: asked before every request that carries the token (those of a
    ///     feed: a session's creation and stream, reads, publishes; not a session's samples
    ///     and actions, which go by its id): a renewed token is used from the next such
    ///     request on, the next stream of a session whose token expired among them.
    public init(serverURL: URL, transport: any ClientTransport, tokenProvider: (@Sendable () async throws -> String?)?) {
        self.serverURL = serverURL
        var middlewares: [any ClientMiddleware] = [ErrorMiddleware(), EntityTagMiddleware()]
        if let tokenProvider { middlewares.append(TokenMiddleware(token: tokenProvider)) }
        api = Client(
            serverURL: serverURL, configuration: Configuration(dateTranscoder: RFC3339DateTranscoder()),
            transport: transport, middlewares: middlewares)
    }

    /// Opens a session on `feed`: the server's gesture engine for one list, and the list's
    /// first page (the first ``SessionEvent/items(_:)`` of ``RemoteSession/events``).
    ///
    /// A busy server (`429`, `503`) is asked again as its `Retry-After` says, up to
    /// `attempts` times in all; a refusal (`400`, `401`, `403`) throws at once.
    public func session(
        feed: String = "main", preset: Preset = .standard, config: RefreshConfig.Overrides? = nil, attempts: Int = 5
    ) async throws -> RemoteSession {
        let request = SessionRequest(feed: feed, preset: preset, overrides: config)
        let created = try await create(request, resume: nil, attempts: attempts)
        let session = try RemoteSession(client: self, request: request, created: created)
        // Without room for its stream the server answers without the first page: a load-more
        // brings it through the stream once the stream is taken up.
        if created.firstPage == nil {
            do {
                _ = try await session.loadMore()
            } catch {
                await session.close()
                throw error
            }
        }
        return session
    }

    /// A page of `feed`, newest first: below the item `before`, or the newest `limit` above
    /// the item `after`.
    public func items(feed: String = "main", before: String? = nil, after: String? = nil, limit: Int? = nil) async throws -> ItemPage {
        let page = try await calling {
            try await api.listFeedItems(path: .init(feed: feed), query: .init(before: before, after: after, limit: limit)).ok.body.json
        }
        return ItemPage(items: page.items.map(FeedItem.init), hasMore: page.hasMore)
    }

    /// The feed's head: the number of items it has gained, `0` for a feed nothing was
    /// published to.
    public func head(of feed: String = "main") async throws -> Int {
        try await calling { try await api.getFeed(path: .init(feed: feed)).ok.body.json.head }
    }

    /// Publishes `items` to `feed` and answers them as stored, once committed.
    ///
    /// A publish that fails for a while (`503`, `429`, the connection lost) is sent again
    /// after the server's `Retry-After`, up to `attempts` times in all, with the same ids:
    /// an item without one is given one before the first attempt, so each item is stored
    /// once whatever became of an attempt that was cut off.
    @discardableResult
    public func publish(_ items: [NewItem], to feed: String = "main", attempts: Int = 3) async throws -> [FeedItem] {
        var items = items
        if attempts > 1 {
            for index in items.indices where items[index].id == nil { items[index].id = UUID().uuidString.lowercased() }
        }
        var backoff = Backoff()
        for attempt in 1... {
            do {
                let body = Components.RequestBodies.NewItems.json(.case2(.init(items: items.map(Components.Schemas.NewItem.init))))
                let stored = try await calling { try await api.publishFeedItems(path: .init(feed: feed), body: body).created.body.json }
                return stored.items.map(FeedItem.init)
            } catch let error as RefreshError where error.isTransient && attempt < attempts {
                try await Task.sleep(for: backoff.delay(retryAfter: error.retryAfter))
            }
        }
        preconditionFailure("the loop returns or throws")
    }

    // MARK: The session's operations, for RemoteSession

    struct SessionRequest: Sendable {
        var feed: String
        var preset: Preset
        var overrides: RefreshConfig.Overrides?
    }

    /// What a list shows, for a session that continues it.
    struct Resume: Sendable, Equatable {
        var head: Int
        var pagedThrough: Int
        var oldest: String
        /// The feed's version the list's rows are as of: the new session tells what changed since.
        var version: Int?
    }

    func create(_ request: SessionRequest, resume: Resume?, attempts: Int?) async throws -> Components.Schemas.Session {
        let body = Components.Schemas.SessionRequest(
            feed: request.feed, preset: .init(rawValue: request.preset.rawValue),
            config: try request.overrides.map(ConfigCoding.overrides),
            resume: resume.map { .init(head: $0.head, oldest: $0.oldest, version: $0.version, pagedThrough: $0.pagedThrough) },
            firstPage: true)
        var backoff = Backoff()
        for attempt in 1... {
            do {
                return try await calling { try await api.createSession(body: .json(body)).created.body.json }
            } catch let error as RefreshError where error.isTransient && attempt < attempts ?? .max {
                try await Task.sleep(for: backoff.delay(retryAfter: error.retryAfter))
            }
        }
        preconditionFailure("the loop returns or throws")
    }

    func stream(of id: String, after lastEventID: String) async throws -> HTTPBody {
        try await calling {
            try await api.sessionEvents(path: .init(id: id), headers: .init(lastEventID: lastEventID)).ok.body.textEventStream
        }
    }

    func post(_ samples: [Sample], to id: String) async throws {
        let body: Operations.PostSamples.Input.Body.JsonPayload =
            samples.count == 1 ? .Sample(.init(samples[0])) : .case2(.init(samples: samples.map(Components.Schemas.Sample.init)))
        _ = try await calling { try await api.postSamples(path: .init(id: id), body: .json(body)).ok }
    }

    func startRefresh(_ id: String) async throws -> String {
        try await calling { try await api.startRefresh(path: .init(id: id)).accepted.body.json.actionId }
    }

    func cancelRefresh(_ id: String) async throws -> Bool {
        try await calling { try await api.cancelRefresh(path: .init(id: id)).ok.body.json.cancelled }
    }

    func loadMore(_ id: String) async throws -> String {
        try await calling { try await api.loadMore(path: .init(id: id)).accepted.body.json.actionId }
    }

    func delete(_ id: String) async throws {
        _ = try await calling { try await api.deleteSession(path: .init(id: id)).noContent }
    }
}
