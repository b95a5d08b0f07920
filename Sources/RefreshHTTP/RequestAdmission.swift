import NIOHTTP1

/// What a connection takes in one request.
package struct ConnectionLimits: Sendable, Equatable {
    package var maxBodyBytes: Int
    package var maxHeadBytes: Int

    package init(maxBodyBytes: Int, maxHeadBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
        self.maxHeadBytes = maxHeadBytes
    }
}

/// Whether a request head is taken, judged once, as soon as it arrives and before its body:
/// its framing, its host, its origin, its content type, its size, and what answers it. A pure
/// function of the head, the configuration's policy and the limits: the verdict, route and
/// CORS origin included, travels with the request, so nothing downstream reads the head's
/// fields again to decide.
package struct RequestAdmission: Sendable {
    package let limits: ConnectionLimits
    /// Which hosts are answered and which requests may change state (``RequestPolicy``).
    package let policy: RequestPolicy
    /// The application's routes, as far as the connection asks them.
    package let routing: HTTPRouting
    /// The method, target and route of the connection's last request answered at once. A
    /// connection asks for one target over and over (a page's samples, at every frame): when
    /// the method and target are the last one's, its route is taken again rather than found
    /// again. A route depends on nothing but the two and the table. Other routes are not
    /// kept, and the route kept is an object of its own: a stream's connection holds nothing
    /// for as long as the stream lasts but an empty reference.
    private var recent: Recent?

    private final class Recent: Sendable {
        let method: HTTPMethod
        let uri: String
        let match: RouteMatch

        init(method: HTTPMethod, uri: String, match: RouteMatch) {
            self.method = method
            self.uri = uri
            self.match = match
        }

        /// Byte for byte, as routing reads a target.
        func isRoute(of method: HTTPMethod, _ uri: String) -> Bool {
            self.method == method && self.uri.utf8.count == uri.utf8.count && self.uri.utf8.elementsEqual(uri.utf8)
        }
    }

    package init(limits: ConnectionLimits, policy: RequestPolicy, routing: HTTPRouting) {
        self.limits = limits
        self.policy = policy
        self.routing = routing
    }

    /// A request whose head was taken.
    package struct Admitted: Equatable {
        package var head: HTTPRequestHead
        /// Its route, found once.
        package var match: RouteMatch
        /// Who answers.
        package var route: HTTPRoute { match.route }
        /// The `--cors-origin` the request comes from, for its answer's `Access-Control-Allow-Origin`.
        package var cors: String?
        package var keepAlive: Bool
        package var expectsContinue: Bool
    }

    /// A head refused: the answer, and whether the connection may serve on after it.
    package struct Refused: Equatable {
        package var error: HTTPRefusal
        package var head: HTTPRequestHead
        package var cors: String?
        /// `false` when the body can no longer be told from the next request, or nothing can
        /// follow (a `CONNECT`), or the client asked to close.
        package var keepAlive: Bool
        /// Its route, when the refusal came after it was found (a `405`, a body too large, an
        /// origin or a content type refused).
        package var match: RouteMatch? = nil
    }

    package enum Verdict: Equatable {
        case admitted(Admitted)
        case refused(Refused)
    }

    package mutating func admit(_ head: HTTPRequestHead) -> Verdict {
        var head = head
        var summary = HeadSummary(head)
        let cors = policy.corsOrigin(summary.firstOrigin)
        // A client waiting for `100 Continue` that is refused instead may send its body or
        // not (RFC 9110 §10.1.1): what follows can no longer be told from the next request, so
        // the connection closes after the refusal.
        let framingKnown = !summary.expectsContinue
        var match: RouteMatch?
        func refused(_ error: HTTPRefusal, keepAlive: Bool = summary.keepAlive && framingKnown) -> Verdict {
            .refused(Refused(error: error, head: head, cors: cors, keepAlive: keepAlive && framingKnown, match: match))
        }
        if let refusal = summary.refusal(limits: limits) {
            // A head whose framing cannot be trusted closes the connection after the answer.
            return refused(refusal.error, keepAlive: refusal.framingIntact && summary.keepAlive)
        }
        // What follows a CONNECT is a tunnel's bytes, not requests: nothing on this
        // connection can be answered after it.
        if head.method == .CONNECT {
            return refused(.notAProxy, keepAlive: false)
        }
        // RFC 9112 §3.2.2: the authority of an absolute-form target is the host asked for,
        // whatever `Host` says; the path is what is routed.
        if let target = RequestTarget(head.uri) {
            summary.host = target.authority
            head.uri = target.origin
        }
        // A name this server is not configured for: a rebound DNS name, a misdirected request.
        if let host = summary.host, !policy.allowsHost(host) {
            return refused(.unknownHost)
        }
        var route = route(head.method, uri: head.uri)
        if case .preflight(let allow) = route.route, cors == nil {
            // Not a preflight this server answers: an OPTIONS like any other method it lacks.
            route.route = .methodNotAllowed(allow: allow)
        }
        match = route
        if case .methodNotAllowed(let allow) = route.route {
            return refused(.methodNotAllowed(head.method.rawValue, allow: allow))
        }
        if let length = summary.contentLength, length > limits.maxBodyBytes {
            return refused(.bodyTooLarge(limit: limits.maxBodyBytes))
        }
        if RequestPolicy.changesState(head.method, onAPI: route.isAPI) {
            guard policy.allowsOrigin(summary.origin, fetchSite: summary.fetchSite, host: summary.host) else {
                return refused(.crossOrigin)
            }
            let hasBody = (summary.contentLength ?? 0) > 0 || !summary.codings.isEmpty
            if hasBody, !(summary.contentType.map(RequestPolicy.isJSON) ?? false) {
                return refused(.unsupportedMediaType(summary.contentType))
            }
        }
        return .admitted(Admitted(head: head, match: route, cors: cors, keepAlive: summary.keepAlive, expectsContinue: summary.expectsContinue))
    }

    private mutating func route(_ method: HTTPMethod, uri: String) -> RouteMatch {
        if let recent, recent.isRoute(of: method, uri) { return recent.match }
        let match = routing.route(method, uri)
        if case .answer = match.route {
            recent = Recent(method: method, uri: uri, match: match)
        } else {
            recent = nil
        }
        return match
    }
}

extension RequestAdmission {
    /// What the machine needs of a head, read in one pass over its fields: a samples POST
    /// comes through here at every frame of a gesture.
    fileprivate struct HeadSummary {
        var size: Int
        var hosts = 0
        var host: String?
        var origins = 0
        var origin: String?
        /// The first `Origin`: the one a CORS answer is given for (two are refused).
        var firstOrigin: String?
        var fetchSite: String?
        var contentType: String?
        var contentLength: Int?
        var lengths = 0
        var codings: [String] = []
        var expectation: String?
        var keepAlive: Bool
        let http11: Bool

        init(_ head: HTTPRequestHead) {
            http11 = head.version.major == 1 && head.version.minor >= 1
            size = head.uri.utf8.count + 16
            var options = ConnectionOptions()
            for (name, value) in head.headers {
                size += name.utf8.count + value.utf8.count + 4
                switch name.utf8.count {
                case 4 where RequestPolicy.equalIgnoringCase(name, "host"):
                    hosts += 1
                    host = value
                case 6 where RequestPolicy.equalIgnoringCase(name, "expect"): expectation = value
                case 6 where RequestPolicy.equalIgnoringCase(name, "origin"):
                    origins += 1
                    origin = value
                    if firstOrigin == nil { firstOrigin = value }
                case 12 where RequestPolicy.equalIgnoringCase(name, "content-type"): contentType = value
                case 14 where RequestPolicy.equalIgnoringCase(name, "sec-fetch-site"): fetchSite = value
                case 10 where RequestPolicy.equalIgnoringCase(name, "connection"),
                    16 where RequestPolicy.equalIgnoringCase(name, "proxy-connection"):
                    options.read(value)
                case 14 where RequestPolicy.equalIgnoringCase(name, "content-length"):
                    lengths += 1
                    contentLength = Int(value)
                case 17 where RequestPolicy.equalIgnoringCase(name, "transfer-encoding"): codings.append(value)
                default: break
                }
            }
            keepAlive = options.keepsAlive(head.version)
        }

        var expectsContinue: Bool {
            http11 && expectation?.lowercased() == "100-continue"
        }

        struct Refusal {
            var error: HTTPRefusal
            /// Whether the body can still be told from the next request.
            var framingIntact: Bool
        }

        func refusal(limits: ConnectionLimits) -> Refusal? {
            if size > limits.maxHeadBytes {
                return Refusal(error: .headTooLarge(limit: limits.maxHeadBytes), framingIntact: false)
            }
            if hosts > 1 || (hosts == 0 && http11) {
                return Refusal(error: .badHost(count: hosts), framingIntact: true)
            }
            if origins > 1 {
                // Which one would count? The checks here and the CORS answer must read the same.
                return Refusal(error: .repeatedOrigin, framingIntact: true)
            }
            if !codings.isEmpty {
                guard lengths == 0 else { return Refusal(error: .conflictingFraming, framingIntact: false) }
                // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
                guard http11 else { return Refusal(error: .unsupportedTransferCoding(codings.joined(separator: ", ")), framingIntact: false) }
                let list = codings.flatMap { $0.split(separator: ",") }.map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() }
                guard list == ["chunked"] else {
                    return Refusal(error: .unsupportedTransferCoding(codings.joined(separator: ", ")), framingIntact: false)
                }
            }
            if lengths > 1 {
                return Refusal(error: .conflictingFraming, framingIntact: false)
            }
            if http11, let expectation, expectation.lowercased() != "100-continue" {
                return Refusal(error: .unsupportedExpectation(expectation), framingIntact: true)
            }
            return nil
        }
    }
}
