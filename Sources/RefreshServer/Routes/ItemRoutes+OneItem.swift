import HTTPTypes
import Hummingbird
import RefreshFeed
import RefreshJSON

/// `/api/feeds/{feed}/items/{item}` (and `/api/items/{item}`, the feed `main`'s): one item,
/// read with its `ETag` (its version), replaced (`PUT`), changed by a JSON merge patch
/// (`PATCH`, RFC 7396) or removed (`DELETE`), each where it stands in the list. A write may
/// say which version it changes (`If-Match`, RFC 9110 §13.1.1): any other is answered `412`
/// and changes nothing. Every page that shows the item is told at once.
extension ItemRoutes {
    /// The parameter that names an item in its patterns.
    static let itemParameter = "item"

    /// The item's id the path names, percent-decoded (`a%2Fb` is `a/b`).
    private func itemID(_ context: Context) throws(APIError) -> String {
        let segment = context.parameters.get(Self.itemParameter) ?? ""
        let id = segment.removingPercentEncoding ?? segment
        if let violation = ItemRules.violation(of: id, as: .id) { throw APIError.invalid("The item's id", violation.reason) }
        return id
    }

    private static func notFound(_ id: String) -> APIError {
        APIError(.notFound, "No item has the id \(id).")
    }

    @Sendable func showItem(_ request: Request, context: Context) async throws -> Response {
        let name = try name(request, context)
        _ = try access.read(name, .init(request.headers))
        let id = try itemID(context)
        guard let item = try await feeds.view(name).item(id: id) else { throw Self.notFound(id) }
        let tag = ETag(item.version ?? 0)
        if ETag.list(request.headers[.ifNoneMatch]).contains(where: { $0 == "*" || $0 == tag.text }) {
            return Response(status: .notModified, headers: [.eTag: tag.text, .cacheControl: "no-cache"])
        }
        return JSONResponse.make(.ok, request: request, headers: [.eTag: tag.text, .cacheControl: "no-cache"]) { $0.item(item) }
    }

    @Sendable func replaceItem(_ request: Request, context: Context) async throws -> Response {
        try await change(request, context) { current, body in
            try ItemDecoding.replacement(try Self.required(body), of: current)
        }
    }

    @Sendable func patchItem(_ request: Request, context: Context) async throws -> Response {
        try await change(request, context) { current, body in
            try ItemDecoding.patched(try Self.required(body), of: current)
        }
    }

    @Sendable func removeItem(_ request: Request, context: Context) async throws -> Response {
        let name = try name(request, context)
        try access.publish(to: name, .init(request.headers), client: context.client)
        let id = try itemID(context)
        let feed = try feeds.view(name)
        let expected = try Self.expectedVersion(request)
        for _ in 0..<Self.attempts {
            guard let current = try await feed.item(id: id) else { throw Self.notFound(id) }
            if let expected, !expected.matches(current.version ?? 0) { throw Self.preconditionFailed(current.version ?? 0) }
            let written: FeedWrite
            do {
                written = try await feed.remove(id: id, ifVersion: current.version)
            } catch is FeedItemNotFound {
                throw Self.notFound(id)
            } catch let mismatch as FeedVersionMismatch {
                // Another edit came between the read and the removal.
                if expected != nil { throw Self.preconditionFailed(mismatch.current) }
                continue
            }
            feeds.metrics.itemChanged(.remove)
            await feeds.news(of: name)?.written(written)
            return Response(status: .noContent)
        }
        throw APIError(.editConflict, "The item \(id) was edited by others while it was being removed; try again.")
    }

    private static func required(_ body: JSONValue?) throws(APIError) -> JSONValue {
        guard let body else { throw APIError.malformedJSON("the body is empty") }
        return body
    }

    /// Reads the item and the body, makes the new item with `make`, and stores it if the item
    /// is still the version it was read as (or the one `If-Match` names): an edit another
    /// made meanwhile is never overwritten by one made from what it replaced.
    private func change(
        _ request: Request, _ context: Context, make: (FeedItem, JSONValue?) throws -> FeedItem
    ) async throws -> Response {
        let name = try name(request, context)
        try access.publish(to: name, .init(request.headers), client: context.client)
        let id = try itemID(context)
        let feed = try feeds.view(name)
        let expected = try Self.expectedVersion(request)
        let body = try await RequestBodyReader.json(request, limit: configuration.maxBodyBytes, allowEmpty: true)
        for _ in 0..<Self.attempts {
            guard let current = try await feed.item(id: id) else { throw Self.notFound(id) }
            if let expected, !expected.matches(current.version ?? 0) { throw Self.preconditionFailed(current.version ?? 0) }
            let item = try make(current, body)
            let written: FeedWrite
            do {
                written = try await feed.replace(item, ifVersion: current.version)
            } catch is FeedItemNotFound {
                throw Self.notFound(id)
            } catch let mismatch as FeedVersionMismatch {
                // Another edit came between the read and the write.
                if expected != nil { throw Self.preconditionFailed(mismatch.current) }
                continue
            }
            if !written.changes.isEmpty { feeds.metrics.itemChanged(.edit) }
            await feeds.news(of: name)?.written(written)
            let stored = written.stored.first ?? item
            return JSONResponse.make(.ok, request: request, headers: [.eTag: ETag(stored.version ?? 0).text]) { $0.item(stored) }
        }
        throw APIError(.editConflict, "The item \(id) was edited by others while this edit was made; read it and try again.")
    }

    /// How many times an edit without `If-Match` is made again when another came between its
    /// read and its write.
    static let attempts = 5

    private static func preconditionFailed(_ current: FeedVersion) -> APIError {
        APIError(.preconditionFailed, "The item is at version \(current), not the one If-Match names: nothing was changed.")
    }

    /// What `If-Match` asks: `nil` without one.
    private static func expectedVersion(_ request: Request) throws(APIError) -> ETag.Condition? {
        let fields = request.headers[values: .ifMatch]
        guard !fields.isEmpty else { return nil }
        return try ETag.Condition(ETag.list(fields.joined(separator: ",")))
    }
}

/// An item's entity tag: its version, quoted (`"12"`).
struct ETag: Equatable {
    let version: FeedVersion

    init(_ version: FeedVersion) {
        self.version = version
    }

    var text: String { "\"\(version)\"" }

    /// The entity tags of an `If-Match` or `If-None-Match` field, as written (`*`, `"12"`,
    /// `W/"12"`).
    static func list(_ field: String?) -> [String] {
        guard let field else { return [] }
        return field.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// An `If-Match` list: the item's current version must be one of them (strong
    /// comparison: a weak tag never matches), or any for `*`.
    struct Condition {
        var any = false
        var versions: [FeedVersion] = []

        /// `400` for a field that is not a list of entity tags (`"12"` unquoted is `12`): such
        /// a condition is a mistake, not a version that does not match.
        init(_ tags: [String]) throws(APIError) {
            for tag in tags {
                if tag == "*" {
                    any = true
                    continue
                }
                let opaque = tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag)
                guard opaque.count >= 2, opaque.first == "\"", opaque.last == "\"", !opaque.dropFirst().dropLast().contains("\"") else {
                    throw APIError(
                        .invalidPrecondition, "If-Match takes the item's entity tags as ETag gives them, quoted (\"12\"), or *; \(tag) is not one.")
                }
                // A weak tag never matches (strong comparison); a quoted one that is not a number
                // is no version the item can be at.
                if opaque.count == tag.count, let version = FeedVersion(opaque.dropFirst().dropLast()) { versions.append(version) }
            }
        }

        func matches(_ current: FeedVersion) -> Bool { any || versions.contains(current) }
    }
}
