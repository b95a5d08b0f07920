import HTTPTypes
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// What a connection answers: the two requests on the gesture's path on its event loop,
/// without a task (posting samples, opening the event stream), and everything else through
/// the router. Thin like every route: decode, call the session, encode. One instance
/// serves every connection.
final class HotRoutes: Sendable {
    typealias Router = @Sendable (Request, any Channel) async throws -> Response

    enum Route: Equatable {
        case samples(session: String)
        case events(session: String)
    }

    let sessions: SessionStore
    let configuration: ServerConfiguration
    let logger: Logger
    private let router: Router

    init(sessions: SessionStore, configuration: ServerConfiguration, logger: Logger, router: @escaping Router) {
        self.sessions = sessions
        self.configuration = configuration
        self.logger = logger
        self.router = router
    }

    /// Any other request, answered by the router on a task of its own.
    func route(_ head: HTTPRequest, body: ByteBuffer, channel: any Channel) async -> Response {
        var response: Response
        do {
            response = try await router(Request(head: head, body: RequestBody(buffer: body)), channel)
        } catch {
            response = Response(refusal(error, head))
        }
        response.headers.stampServer()
        return response
    }

    /// `POST /api/sessions/{id}/samples` and `GET /api/sessions/{id}/events`; anything else
    /// is Hummingbird's.
    func match(_ head: HTTPRequest) -> Route? {
        guard head.method == .post || head.method == .get, var path = head.path?.utf8[...] else { return nil }
        if let query = path.firstIndex(of: UInt8(ascii: "?")) { path = path[..<query] }
        let prefix = "/api/sessions/".utf8
        guard path.starts(with: prefix) else { return nil }
        let rest = path.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let id = String(Substring(rest[..<slash]))
        switch (head.method, Substring(rest[rest.index(after: slash)...])) {
        case (.post, "samples"): return .samples(session: id)
        case (.get, "events"): return .events(session: id)
        default: return nil
        }
    }

    /// The samples POST: applied in `seq` order; answers the resulting state, or the error.
    func samples(_ head: HTTPRequest, session id: String, body: ByteBuffer) -> JSONPayload {
        do {
            let session = try sessions.session(id)
            let json = try JSONValue.parseBody(Array(body.readableBytesView))
            let samples = try SampleDecoding.decode(json, maxCount: configuration.maxSamplesPerRequest)
            let state = try session.applySamples(samples, now: .now)
            var body = ByteBufferAllocator().buffer(capacity: state.readableBytes + 10)
            body.writeStaticString(#"{"state":"#)
            body.writeImmutableBuffer(state)
            body.writeStaticString("}")
            return JSONResponse.payload(.ok, body, acceptsGzip: Gzip.accepted(by: head))
        } catch {
            return refusal(error, head)
        }
    }

    /// The session and resume point of an event stream request.
    func eventStreamRequest(_ head: HTTPRequest, session id: String) throws(APIError) -> (Session, lastEventID: UInt64?) {
        let session = try sessions.session(id)
        // The header is what EventSource sends on its own reconnects; the query parameter
        // lets a client that opens a new EventSource resume too.
        guard let given = head.headerFields[.lastEventID]
            ?? URI(head.path ?? "").queryParameters["lastEventId"].map(String.init)
        else {
            return (session, nil)
        }
        guard let id = UInt64(given.trimmingCharacters(in: .whitespaces)) else {
            throw APIError.invalid("Last-Event-ID", "must be an event id received from this stream")
        }
        return (session, id)
    }

    /// The JSON error answer, logged on one line like every refusal; anything but an
    /// ``APIError`` is the server's fault, logged as it is and answered with a 500.
    func refusal(_ error: any Error, _ head: HTTPRequest) -> JSONPayload {
        let path = URI(head.path ?? "").path
        let refused: APIError
        if let error = error as? APIError {
            refused = error
            error.logRefusal(method: head.method, path: path, logger: logger)
        } else {
            refused = APIError(.internalServerError, "internal_error", "The server failed; the error is logged.")
            logger.error("\(head.method) \(path) failed: \(error)")
        }
        return JSONResponse.errorPayload(refused, acceptsGzip: Gzip.accepted(by: head))
    }
}
