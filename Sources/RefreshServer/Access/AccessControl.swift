import Foundation
import RefreshFeed

/// The rules of access applied to a request: what it proves (a token, the static publish
/// token, nothing) and whether that lets it read or publish to a feed. Every route that
/// reads or publishes a feed asks here, before it reads the store, so a refusal is the same
/// for a feed that exists and one that does not.
///
/// Without keys (no `--auth-key`) the server is as it always was: every feed may be read, and
/// publishing needs `--publish-token`, or a local client of a server on loopback.
struct AccessControl: Sendable {
    /// `nil`: no `--auth-key`.
    let verifier: TokenVerifier?
    let rules: FeedAccess
    let publishToken: String?
    let publishingDisabled: Bool
    let listensOnLoopbackOnly: Bool
    /// Told of every refusal of a token, by its reason (the metrics count them).
    let refused: @Sendable (AccessRefusal) -> Void

    /// The name of the cookie a page's token travels in: an `EventSource` sends no headers.
    static let cookieName = "ptr_token"

    init(
        verifier: TokenVerifier?, publicFeeds: [FeedPattern], publishToken: String?, publishingDisabled: Bool, listensOnLoopbackOnly: Bool,
        refused: @escaping @Sendable (AccessRefusal) -> Void
    ) {
        self.verifier = verifier
        rules = FeedAccess(publicFeeds: publicFeeds)
        self.publishToken = publishToken
        self.publishingDisabled = publishingDisabled
        self.listensOnLoopbackOnly = listensOnLoopbackOnly
        self.refused = refused
    }

    /// What carries a request's credentials: its `Authorization` field and its cookies.
    struct Carrier {
        var authorization: String?
        var cookies: [String]

        /// The most `ptr_token` cookies tried.
        static let maximumCookies = 4

        /// The tokens the request carries, in the order they are tried; never one from the URL.
        /// The bearer token of `Authorization` alone, when there is one; else each `ptr_token`
        /// cookie, since a browser sends a cookie of a longer path first, and one planted
        /// beside the application's (from a sibling subdomain, say) must not lock its user out.
        var tokens: [Substring] {
            if let authorization, let token = Self.bearer(authorization) { return [token] }
            var tokens: [Substring] = []
            for field in cookies {
                for pair in field.split(separator: ";") where tokens.count < Self.maximumCookies {
                    let pair = pair.drop { $0 == " " }
                    guard pair.hasPrefix(AccessControl.cookieName + "=") else { continue }
                    var value = pair.dropFirst(AccessControl.cookieName.count + 1)
                    // RFC 6265 lets a cookie's value be quoted.
                    if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
                    if !value.isEmpty { tokens.append(value) }
                }
            }
            return tokens
        }

        /// The token of `Bearer TOKEN` (the scheme's case does not matter, RFC 9110 §11.1).
        static func bearer(_ field: String) -> Substring? {
            let scheme = "bearer "
            guard field.utf8.count > scheme.utf8.count, field.prefix(scheme.count).lowercased() == scheme else { return nil }
            let token = field.dropFirst(scheme.count).drop { $0 == " " }
            return token.isEmpty ? nil : token
        }
    }

    /// Whether the request may read `feed`: `nil` when it may without a token (or gave none),
    /// the token when it gave a valid one that may. A token given must be valid, even for a
    /// public feed: a client that sends one learns at once that it does not work.
    func read(_ feed: FeedName, _ carrier: Carrier) throws(APIError) -> AccessToken? {
        guard let verifier else { return nil }
        switch try credentials(carrier, verifier: verifier) {
        case .none:
            try decide(.read, on: feed, with: .none)
            return nil
        case .publishToken:
            try decide(.read, on: feed, with: .publishToken)
            return nil
        case .token(let token):
            try decide(.read, on: feed, with: .token(token.rights))
            return token
        }
    }

    /// Whether the stream of a session of `owner`, on `feed`, may be opened: the instant its
    /// token expires, when it was opened with one, by which the stream must have closed. A
    /// session made without a token has a stream anyone who may read its feed may open; a
    /// token given for it must still be valid, as on every other route.
    func stream(of owner: SessionOwner?, on feed: FeedName, _ carrier: Carrier) throws(APIError) -> Date? {
        guard let verifier else { return nil }
        guard let owner else {
            _ = try read(feed, carrier)
            return nil
        }
        guard case .token(let token) = try credentials(carrier, verifier: verifier) else { throw refused(.missing) }
        guard SessionOwner(subject: token.subject) == owner else { throw refused(.insufficientScope) }
        try decide(.read, on: feed, with: .token(token.rights))
        return token.expires
    }

    /// Whether the request may publish to `feed`. `client` is the address that sent it, as
    /// the trusted proxies name it.
    func publish(to feed: FeedName, _ carrier: Carrier, client: String) throws(APIError) {
        if publishingDisabled {
            throw APIError(.publishingDisabled, "This server takes no publishes (--disable-publishing).")
        }
        guard let verifier else { return try publishWithoutKeys(carrier, client: client) }
        switch try credentials(carrier, verifier: verifier) {
        case .none: try decide(.publish, on: feed, with: .none)
        case .publishToken: try decide(.publish, on: feed, with: .publishToken)
        case .token(let token): try decide(.publish, on: feed, with: .token(token.rights))
        }
    }

    /// What a request proved, with keys.
    enum Proof {
        case none
        /// The static `--publish-token`, as the bearer token.
        case publishToken
        case token(AccessToken)
    }

    /// The static publish token if that is the bearer token, else the first token the
    /// request carries that verifies; one given must be valid, so with none valid the request
    /// is refused for the first one's fault.
    func credentials(_ carrier: Carrier, verifier: TokenVerifier) throws(APIError) -> Proof {
        if isPublishToken(carrier) { return .publishToken }
        var refusal: AccessRefusal?
        for text in carrier.tokens {
            do {
                return .token(try verifier.verify(text))
            } catch {
                refusal = refusal ?? error
            }
        }
        guard let refusal else { return .none }
        throw refused(refusal)
    }

    func isPublishToken(_ carrier: Carrier) -> Bool {
        guard let publishToken, let bearer = carrier.authorization.flatMap(Carrier.bearer) else { return false }
        return Self.constantTimeEqual(bearer, publishToken)
    }

    /// Without keys: the static token, or a local client of a server on loopback only, so a
    /// front on this host does not open publishing to whoever it serves.
    private func publishWithoutKeys(_ carrier: Carrier, client: String) throws(APIError) {
        if isPublishToken(carrier) { return }
        guard publishToken != nil else {
            guard listensOnLoopbackOnly else {
                throw APIError(.publishingDisabled, "Publishing needs --publish-token when the server listens beyond loopback.")
            }
            guard Self.isLoopback(client) else {
                throw APIError(.publishingDisabled, "Publishing from another host needs the server's --publish-token.")
            }
            return
        }
        throw APIError(.unauthorized, "Publishing needs the header Authorization: Bearer <publish token>.")
    }

    private func decide(_ action: FeedAccess.Action, on feed: FeedName, with credentials: FeedAccess.Credentials) throws(APIError) {
        switch rules.decide(action, on: feed, with: credentials) {
        case .allowed: return
        case .tokenNeeded: throw refused(.missing)
        case .insufficientScope: throw refused(.insufficientScope)
        }
    }

    func refused(_ reason: AccessRefusal) -> APIError {
        refused(reason)
        return reason.apiError
    }

    /// `client` as ``TrustedProxies`` keys it: IPv4 as is, IPv6 by its /64 (`::1`'s is
    /// `::/64`), `local` when the connection has no IP peer.
    static func isLoopback(_ client: String) -> Bool {
        client.hasPrefix("127.") || client == "0:0:0:0::/64" || client == "local"
    }

    private static func constantTimeEqual(_ a: Substring, _ b: String) -> Bool {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<min(a.count, b.count) { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
