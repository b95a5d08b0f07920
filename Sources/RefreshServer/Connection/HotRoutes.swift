import HTTPTypes
import NIOHTTP1
import NIOHTTPTypesHTTP1
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
    typealias Router = @Sendable (Request, ServerRequestContext.Source) async throws -> Response

    let sessions: SessionStore
    let streams: StreamGate
    let proxies: TrustedProxies
    let configuration: ServerConfiguration
    let logger: Logger
    private let router: Router

    init(
        sessions: SessionStore, streams: StreamGate, proxies: TrustedProxies, configuration: ServerConfiguration,
        logger: Logger, router: @escaping Router
    ) {
        self.sessions = sessions
        self.streams = streams
        self.proxies = proxies
        self.configuration = configuration
        self.logger = logger
        self.router = router
    }

    /// Any other request, answered by the router on a task of its own.
    func route(_ head: HTTPRequestHead, body: ByteBuffer, channel: any Channel) async -> Response {
        do {
            let request = try HTTPRequest(head, secure: false, splitCookie: false)
            let source = ServerRequestContext.Source(channel: channel, logger: logger, client: client(of: head, channel: channel))
            return try await router(Request(head: request, body: RequestBody(buffer: body)), source)
        } catch {
            return Response(refusal(error, head))
        }
    }

    /// The samples POST: applied in `seq` order; answers the resulting state, or the error.
    func samples(_ head: HTTPRequestHead, session id: String, body: ByteBuffer?) -> JSONPayload {
        do {
            let session = try sessions.session(id)
            let json = try JSONValue.parseBody(body.map { Array($0.readableBytesView) } ?? [])
            let samples = try SampleDecoding.decode(json, maxCount: configuration.maxSamplesPerRequest)
            let state = try session.applySamples(samples, now: .now)
            var body = ByteBufferAllocator().buffer(capacity: state.readableBytes + 10)
            body.writeStaticString(#"{"state":"#)
            body.writeImmutableBuffer(state)
            body.writeStaticString("}")
            return JSONResponse.payload(.ok, body, acceptsGzip: Gzip.accepted(by: head.headers))
        } catch {
            return refusal(error, head)
        }
    }

    /// The session and resume point of an event stream request.
    func eventStreamRequest(_ head: HTTPRequestHead, session id: String) throws(APIError) -> (Session, lastEventID: UInt64?) {
        let session = try sessions.session(id)
        // The header is what EventSource sends on its own reconnects; the query parameter
        // lets a client that opens a new EventSource resume too.
        guard let given = head.headers.first(name: "last-event-id")
            ?? URI(head.uri).queryParameters["lastEventId"].map(String.init)
        else {
            return (session, nil)
        }
        guard let id = UInt64(given.trimmingCharacters(in: .whitespaces)) else {
            throw APIError.invalid("Last-Event-ID", "must be an event id received from this stream")
        }
        return (session, id)
    }

    /// The address whose limits the request counts against.
    func client(of head: HTTPRequestHead, channel: any Channel) -> String {
        proxies.client(peer: channel.remoteAddress, forwardedFor: head.headers["x-forwarded-for"])
    }

    /// The JSON error answer, logged on one line like every refusal; anything but an
    /// ``APIError`` is the server's fault, logged as it is and answered with a 500.
    ///
    /// Without a head there was no request to refuse, only bytes on a connection (a stalled
    /// or malformed head): that is logged at `debug`, so a flood of them cannot flood the log.
    func refusal(_ error: any Error, _ head: HTTPRequestHead?) -> JSONPayload {
        let path = head.map { URI($0.uri).path } ?? "-"
        let method = head?.method.rawValue ?? "-"
        let refused: APIError
        if let error = error as? APIError {
            refused = error
            if head != nil {
                error.logRefusal(method: method, path: path, logger: logger)
            } else {
                logger.debug("refused a connection's bytes: \(error.status.code) \(error.code): \(error.message)")
            }
        } else {
            refused = APIError(.internalServerError, "internal_error", "The server failed; the error is logged.")
            logger.error("\(method) \(path) failed: \(error)")
        }
        return JSONResponse.errorPayload(refused, acceptsGzip: head.map { Gzip.accepted(by: $0.headers) } ?? false)
    }
}
