import HTTPTypes
import Hummingbird
import RefreshEngine

/// `/api/sessions/…`: create a session, post samples, ask for actions, stream events.
struct SessionRoutes<Context: RequestContext>: Sendable {
    let sessions: SessionStore
    let configuration: ServerConfiguration

    func register(on router: Router<Context>) {
        let group = router.group("api/sessions")
        group.post(use: create)
        group.get(":id", use: show)
        group.delete(":id", use: end)
        group.get(":id/events", use: events)
        group.post(":id/samples", use: samples)
        group.post(":id/refresh", use: refresh)
        group.delete(":id/refresh", use: cancelRefresh)
        group.post(":id/load-more", use: loadMore)
    }

    private func session(_ context: Context) throws -> Session {
        try sessions.session(context.parameters.get("id") ?? "")
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let body = try await RequestBodyReader.json(request, limit: configuration.maxBodyBytes, allowEmpty: true)
        let config = try ConfigDecoding.decode(body)
        let session = try sessions.create(config: config)
        let events = "/api/sessions/\(session.id)/events"
        return JSONResponse.make(.created, request: request, headers: [.location: "/api/sessions/\(session.id)"]) { json in
            json.beginObject()
            json.field("id", session.id)
            json.key("config")
            json.config(config)
            json.field("events", events)
            json.key("state")
            json.gestureState(session.gestureState)
            json.endObject()
        }
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let session = try session(context)
        return JSONResponse.make(.ok, request: request) { json in
            json.beginObject()
            json.field("id", session.id)
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

    @Sendable func samples(_ request: Request, context: Context) async throws -> Response {
        let session = try session(context)
        guard let body = try await RequestBodyReader.json(request, limit: configuration.maxBodyBytes) else {
            throw APIError.malformedJSON("the body is empty")
        }
        let samples = try SampleDecoding.decode(body, maxCount: configuration.maxSamplesPerRequest)
        let state = try session.applySamples(samples, now: .now)
        return JSONResponse.make(.ok, request: request) { json in
            json.beginObject()
            json.key("state")
            json.gestureState(state)
            json.endObject()
        }
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

    @Sendable func events(_ request: Request, context: Context) async throws -> Response {
        let session = try session(context)
        // The header is what EventSource sends on its own reconnects; the query parameter
        // lets a client that opens a new EventSource resume too.
        let given = request.headers[.lastEventID] ?? request.uri.queryParameters["lastEventId"].map(String.init)
        let lastEventID = try given.map { (text) throws(APIError) -> UInt64 in
            guard let id = UInt64(text.trimmingCharacters(in: .whitespaces)) else {
                throw APIError.invalid("Last-Event-ID", "must be an event id received from this stream")
            }
            return id
        }
        return EventStream(session: session, configuration: configuration).response(request: request, lastEventID: lastEventID)
    }

    private func actionAccepted(_ id: ActionID, request: Request) -> Response {
        JSONResponse.make(.accepted, request: request) { json in
            json.beginObject()
            json.field("actionId", id.description)
            json.endObject()
        }
    }
}


import Foundation
