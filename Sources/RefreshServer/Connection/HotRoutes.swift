import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import RefreshEngine
import RefreshHTTP
import RefreshJSON

/// What a connection answers: the two requests on the gesture's path on its event loop,
/// without a task (posting samples, opening the event stream), and everything else through
/// the router. Thin like every route: decode, call the session, encode. One instance
/// serves every connection.
final class HotRoutes: Sendable {
    /// Answers a routed request, by the route admission found for it.
    typealias Router = @Sendable (Request, ServerRequestContext.Source, RouteMatch) async throws -> Response

    let sessions: SessionStore
    let streams: StreamGate
    /// Whether a session's stream may be opened, and for how long.
    let access: AccessControl
    let proxies: TrustedProxies
    let configuration: ServerConfiguration
    /// The part of ``configuration`` the connection reads.
    let http: HTTPConfiguration
    /// The part the streams it opens read.
    let sessionSettings: SessionSettings
    /// Which hosts are answered, which requests may change state, which origins get CORS.
    let policy: RequestPolicy
    let logger: Logger
    /// Counts every answer, whichever side gave it.
    let metrics: ServerMetrics
    private let router: Router

    init(
        sessions: SessionStore, streams: StreamGate, access: AccessControl, proxies: TrustedProxies, configuration: ServerConfiguration,
        logger: Logger, metrics: ServerMetrics = ServerMetrics(), router: @escaping Router
    ) {
        self.sessions = sessions
        self.streams = streams
        self.access = access
        self.proxies = proxies
        self.configuration = configuration
        http = configuration.http
        sessionSettings = configuration.sessionSettings
        policy = RequestPolicy(http)
        self.logger = logger
        self.metrics = metrics
        self.router = router
    }

    /// Any other request, answered by the router on a task of its own. `HEAD` is answered as
    /// `GET` would be (the connection sends the head only), as RFC 9110 asks of every server.
    func route(_ head: HTTPRequestHead, match: RouteMatch, body: ByteBuffer, channel: any Channel) async -> Response {
        do {
            var request = try HTTPRequest(head, secure: false, splitCookie: false)
            if request.method == .head { request.method = .get }
            let source = ServerRequestContext.Source(channel: channel, logger: logger, client: client(of: head, channel: channel))
            let response = try await router(Request(head: request, body: RequestBody(buffer: body)), source, match)
            let status = response.status.code
            metrics.requestAnswered(route: RouteTable.label(match, head: head, status: status), status: status)
            return response
        } catch {
            return Response(refusal(error, head, match: match))
        }
    }

    /// What a samples POST is answered with.
    enum SamplesAnswer {
        /// The state after the samples, as JSON: the bytes of the `state` event they caused.
        case state(ByteBuffer)
        case refused(JSONPayload)
    }

    /// The samples POST: applied in `seq` order; answers the resulting state, or the error.
    /// Its arrival is the instant its `state` event's latency is measured from.
    func samples(_ head: HTTPRequestHead, session id: String, body: ByteBuffer?, match: RouteMatch) -> SamplesAnswer {
        let arrived = ContinuousClock.now
        do {
            let session = try sessions.session(id)
            let samples: [ValidSample]
            if let plain = body?.withUnsafeReadableBytes(SampleDecoding.plainSample) {
                samples = [plain]
            } else {
                let json = try JSONValue.parseBody(body.map { Array($0.readableBytesView) } ?? [])
                samples = try SampleDecoding.decode(json, maxCount: configuration.samplesPerRequestLimit)
            }
            let state = try session.applySamples(samples, now: arrived)
            metrics.sampleRequestAnswered()
            return .state(state)
        } catch {
            return .refused(refusal(error, head, match: match))
        }
    }

    /// Opens the stream of a `GET …/events`, within the limits on open streams: the bytes
    /// that open it are the response head, `retry:` and the catch-up; `overloaded` tells the
    /// browser to come back later; `refused` is an unknown session or a bad `Last-Event-ID`.
    func openStream(
        _ head: HTTPRequestHead, session id: String, match: RouteMatch, cors: String?, writer: StreamWriter, channel: any Channel
    ) -> StreamOpening {
        do {
            // A stream is an endless chunked body; HTTP/1.0 has no chunks.
            guard head.version.major == 1, head.version.minor >= 1 else { throw APIError.streamNeedsHTTP11 }
            let (session, lastEventID) = try eventStreamRequest(head, session: id)
            let expires = try access.stream(of: session.owner, on: session.feed, .init(head.headers))
            if head.method == .HEAD {
                metrics.requestAnswered(route: RouteTable.Pattern.events.description, status: 200)
                return .headOnly(
                    JSONPayload(status: .ok, headers: EventStream.responseFields(gzip: Gzip.accepted(by: head.headers)), body: ByteBuffer()))
            }
            guard let ticket = streams.admit(client(of: head, channel: channel)) else {
                logger.notice("told a stream of session \(id.escapedForLog) to come back later: too many streams")
                metrics.streamShed()
                return .overloaded(EventStream.overloadAnswer(sessionSettings))
            }
            let stream = ConnectionStream(writer: writer, metrics: metrics)
            guard
                let (events, response, opening) = try EventStream.open(
                    session: session, listener: stream, ticket: ticket, lastEventID: lastEventID,
                    gzip: Gzip.accepted(by: head.headers), closesAfter: expires.map { AccessToken.streamLife(until: $0) },
                    settings: sessionSettings)
            else { throw APIError.sessionNotFound(id) }
            metrics.streamOpened()
            var bytes = channel.allocator.buffer(capacity: 256 + opening.readableBytes)
            ResponseHead.write(
                status: response.status, fields: response.headerFields, connection: .none, cors: cors,
                variesByOrigin: policy.variesByOrigin, into: &bytes)
            bytes.writeImmutableBuffer(opening)
            stream.events = events
            return .opened(stream, bytes)
        } catch {
            return .refused(refusal(error, head, match: match))
        }
    }

    /// Opens a stream shared by several sessions of one client (`GET /api/events`), each
    /// `session` parameter a session's id, with `:` and the last event id seen of it to
    /// resume. Each session is checked as its own stream would be; one that does not exist
    /// and one the request may not read are refused alike (`404`), naming it, so the answer
    /// says nothing of a session another client owns. The stream counts once against the
    /// limits on open streams.
    func openSharedStream(_ head: HTTPRequestHead, match: RouteMatch, cors: String?, writer: StreamWriter, channel: any Channel) -> StreamOpening {
        do {
            guard head.version.major == 1, head.version.minor >= 1 else { throw APIError.streamNeedsHTTP11 }
            let wanted = try Self.sharedSessions(head.uri)
            var opened: [(Session, UInt64?, Date?)] = []
            for (id, lastEventID) in wanted {
                let (session, expires) = try sharedMember(id, head)
                opened.append((session, lastEventID, expires))
            }
            if head.method == .HEAD {
                metrics.requestAnswered(route: RouteTable.Pattern.sharedEvents.description, status: 200)
                return .headOnly(JSONPayload(status: .ok, headers: EventStream.responseFields(gzip: false), body: ByteBuffer()))
            }
            guard let ticket = streams.admit(client(of: head, channel: channel)) else {
                logger.notice("told a stream of \(wanted.count) sessions to come back later: too many streams")
                metrics.streamShed()
                return .overloaded(EventStream.overloadAnswer(sessionSettings))
            }
            let stream = SharedConnectionStream(writer: writer, metrics: metrics)
            var body = ByteBuffer()
            let soonest = opened.compactMap(\.2).min()
            for (index, (session, lastEventID, _)) in opened.enumerated() {
                guard
                    let (events, _, opening) = try EventStream.open(
                        session: session, listener: SharedStreamListener(stream, member: index), ticket: ticket, lastEventID: lastEventID,
                        // Every member ends the stream by the soonest expiry: one that leaves early takes its timer along.
                        gzip: false, closesAfter: soonest.map { AccessToken.streamLife(until: $0) },
                        settings: sessionSettings)
                else { throw APIError.sessionNotFound(session.id) }
                stream.join(session.id, events)
                body.writeImmutableBuffer(SharedConnectionStream.naming(session.id))
                body.writeImmutableBuffer(opening)
            }
            metrics.streamOpened()
            var bytes = channel.allocator.buffer(capacity: 256 + body.readableBytes)
            ResponseHead.write(
                status: .ok, fields: EventStream.responseFields(gzip: false), connection: .none, cors: cors,
                variesByOrigin: policy.variesByOrigin, into: &bytes)
            bytes.writeImmutableBuffer(body)
            return .opened(stream, bytes)
        } catch {
            return .refused(refusal(error, head, match: match))
        }
    }

    /// A session of a shared stream, checked as its own stream would be, and when the
    /// request's token expires.
    private func sharedMember(_ id: String, _ head: HTTPRequestHead) throws(APIError) -> (Session, Date?) {
        let session: Session
        let expires: Date?
        do {
            session = try sessions.session(id)
            expires = try access.stream(of: session.owner, on: session.feed, .init(head.headers))
        } catch {
            guard error.status == .notFound || error.status == .forbidden else { throw error }
            throw APIError.sharedSessionNotFound(id)
        }
        return (session, expires)
    }

    /// The sessions of a shared stream's target, in order, each with the id to resume after.
    static func sharedSessions(_ uri: String) throws(APIError) -> [(id: String, lastEventID: UInt64?)] {
        let given = URI(uri).queryParameters.getAll("session").map { String($0) }
        guard !given.isEmpty else { throw APIError.missing("session", expected: "a session's id, once for each session the stream carries") }
        guard given.count <= SharedConnectionStream.maxSessions else {
            throw APIError.invalid(
                "session", "is given \(given.count) times: a stream carries at most \(SharedConnectionStream.maxSessions) sessions")
        }
        var seen: Set<String> = []
        return try given.map { (value) throws(APIError) in
            let parts = value.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let id = String(parts[0])
            guard !id.isEmpty else { throw APIError.invalid("session", "must be a session's id, then : and the last event id seen of it") }
            guard seen.insert(id).inserted else { throw APIError.invalid("session", "names \(id) twice") }
            guard parts.count == 2 else { return (id, nil) }
            guard let last = UInt64(parts[1]) else {
                throw APIError.invalid("session", "\(value.prefix(80)) must be a session's id, then : and an event id received of it")
            }
            return (id, last)
        }
    }

    /// The session and resume point of an event stream request.
    func eventStreamRequest(_ head: HTTPRequestHead, session id: String) throws(APIError) -> (Session, lastEventID: UInt64?) {
        let session = try sessions.session(id)
        // The header is what EventSource sends on its own reconnects; the query parameter
        // lets a client that opens a new EventSource resume too.
        guard
            let given = head.headers.first(name: "last-event-id")
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

    /// The JSON error answer, as every failure is answered
    /// (``APIError/answering(_:method:path:session:requestID:logger:)``).
    ///
    /// Without a head there was no request to refuse, only bytes on a connection (a stalled
    /// or malformed head): that is logged at `debug`, so a flood of them cannot flood the log.
    ///
    /// Every refusal is counted here, wherever it was decided: the connection's, a hot
    /// route's, the router's that escaped its middleware.
    func refusal(_ error: any Error, _ head: HTTPRequestHead?, match: RouteMatch?) -> JSONPayload {
        let match = match ?? head.map { RouteTable.match($0.method, uri: $0.uri) }
        let refused = answer(error, head, match: match)
        let payload = JSONResponse.errorPayload(refused, acceptsGzip: head.map { Gzip.accepted(by: $0.headers) } ?? false)
        let status = Int(payload.status.code)
        metrics.requestAnswered(route: RouteTable.label(match, head: head, status: status), status: status)
        if case .answer = match?.route {
            metrics.sampleRequestRefused(code: refused.code)
        }
        return payload
    }

    /// The refusal `error` is answered with, logged.
    private func answer(_ error: any Error, _ head: HTTPRequestHead?, match: RouteMatch?) -> APIError {
        if head == nil, let refused = error as? APIError {
            logger.debug("refused a connection's bytes: \(refused.status.code) \(refused.code): \(refused.message.escapedForLog)")
            return refused
        }
        return APIError.answering(
            error, method: head?.method.rawValue ?? "-", path: head.map { URI($0.uri).path } ?? "-",
            session: head.flatMap { RouteTable.session(in: $0.uri, match: match) }, requestID: head?.headers.first(name: "x-request-id"),
            logger: logger)
    }
}
