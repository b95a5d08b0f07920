import Hummingbird
import RefreshFeed
import RefreshHTTP

/// `/api/feeds/{feed}/items` (and `/api/items`, the feed `main`): read a feed page by page,
/// publish to it; `/api/feeds/{feed}`: its name and head.
struct ItemRoutes: Sendable {
    typealias Context = ServerRequestContext

    let feeds: FeedRegistry
    /// Who may read and publish which feed: asked before the store is.
    let access: AccessControl
    let configuration: ServerConfiguration

    static var maxLimit: Int { 200 }

    /// The parameter that names a feed in the patterns that have one.
    static let feedParameter = "feed"

    /// The feed the path names; `main` for a path without one.
    func name(_ request: Request, _ context: Context) throws(APIError) -> FeedName {
        let field = "The feed's name"
        guard let text = context.parameters.get(Self.feedParameter) else { return .main }
        // A path with an empty segment is routed as its segments spell it (`RouteMatch`):
        // `/api/feeds//items` would name the feed `items`.
        guard !request.uri.path.contains("//") else { throw FeedName.invalid(field) }
        return try FeedName.decoded(pathSegment: text, field: field)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let name = try name(request, context)
        _ = try access.read(name, .init(request.headers))
        let head = try await feeds.view(name).head()
        return JSONResponse.make(.ok, request: request) { json in
            json.beginObject()
            json.field("name", name.rawValue)
            json.field("head", Int(head?.position ?? 0))
            json.endObject()
        }
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let name = try name(request, context)
        _ = try access.read(name, .init(request.headers))
        let feed = try feeds.view(name)
        let query = request.uri.queryParameters
        var limit = configuration.pageSize
        if let text = query["limit"] {
            guard let value = Int(String(text)), value > 0 else {
                throw APIError.invalid("limit", "must be a whole number from 1 to \(Self.maxLimit)")
            }
            guard value <= Self.maxLimit else { throw APIError.outOfRange("limit must be at most \(Self.maxLimit).") }
            limit = value
        }
        let before = try await position(query["before"].map(String.init), name: "before", in: feed)
        let after = try await position(query["after"].map(String.init), name: "after", in: feed)
        guard before == nil || after == nil else { throw APIError.invalid("before", "cannot be combined with after") }
        let page = if let after { try await feed.added(after: after, limit: limit) } else { try await feed.older(than: before, limit: limit) }
        return JSONResponse.make(.ok, request: request) { json in
            json.beginObject()
            json.key("items")
            json.items(page.items)
            json.field("hasMore", page.hasMore)
            json.endObject()
        }
    }

    /// The position of the item a page is read from: a republish never moves it, so paging on
    /// from it neither skips nor repeats an item, whatever was republished meanwhile.
    private func position(_ id: String?, name: String, in feed: any FeedSource) async throws -> FeedPosition? {
        guard let id, !id.isEmpty else { return nil }
        if let violation = ItemRules.violation(of: id, as: .id), violation == .containsNUL { throw APIError.invalid(name, violation.reason) }
        guard let position = try await feed.position(of: id) else {
            throw APIError(.itemNotFound, "\(name): no item has the id \(id).")
        }
        return position
    }

    @Sendable func publish(_ request: Request, context: Context) async throws -> Response {
        let name = try name(request, context)
        try access.publish(to: name, .init(request.headers), client: context.client)
        let feed = try feeds.view(name)
        guard let body = try await RequestBodyReader.json(request, limit: configuration.maxBodyBytes) else {
            throw APIError.malformedJSON("the body is empty")
        }
        let items = try ItemDecoding.decode(body, now: .now())
        let written: FeedWrite
        do {
            written = try await feed.publishing(items)
        } catch let error as FeedStoreUnavailable {
            return unavailable(error, items: items, request: request, context: context)
        }
        // The feed's sessions here hear of it; with none, there is nobody to tell.
        await feeds.news(of: name)?.written(written)
        return JSONResponse.make(.created, request: request) { json in
            json.beginObject()
            json.key("items")
            json.items(written.stored)
            json.endObject()
        }
    }

    /// `503`, naming the ids the items were given: nothing was stored, and a retry with them
    /// stores each item once, whatever became of this attempt.
    private func unavailable(_ error: FeedStoreUnavailable, items: [FeedItem], request: Request, context: Context) -> Response {
        let refusal = APIError(.storeUnavailable, "\(error).", retryAfter: 5)
        refusal.logRefusal(
            method: request.method, path: request.uri.path, session: nil, requestID: request.headers[.xRequestID], logger: context.logger)
        return JSONResponse.make(.serviceUnavailable, request: request, headers: [.retryAfter: "5"]) { json in
            json.beginObject()
            json.field("error", refusal.code.rawValue)
            json.field("message", refusal.message)
            json.key("ids")
            json.beginArray()
            for item in items { json.value(item.id) }
            json.endArray()
            json.endObject()
        }
    }
}
