/// Why a request was refused its feed: a token that proves nothing (`401 invalid_token`), or
/// one that proves too little (`403 insufficient_scope`). Each is counted under its own
/// reason (`ptr_auth_refused_total{reason}`); none says anything of the feed asked for, so a
/// refusal reads the same for a feed that exists and one that does not.
enum AccessRefusal: String, Error, CaseIterable, Sendable {
    /// No token where one is needed.
    case missing
    /// Over ``TokenVerifier/maximumTokenBytes``: refused before any parsing.
    case tooLarge = "too_large"
    /// Not three base64url parts of JSON, a claim of the wrong type, no `exp`, or a `crit`
    /// header (no extension is understood here).
    case malformed
    /// A `kid` no key has.
    case unknownKey = "unknown_key"
    /// An `alg` that is not the key's (`none` included).
    case algorithm
    case signature
    case expired
    /// `nbf` is still ahead.
    case notYetValid = "not_yet_valid"
    /// `iss` is not `--auth-issuer`.
    case issuer
    /// `aud` does not name `--auth-audience`, or names an audience when none is configured.
    case audience
    /// A pattern of the `ptr` claim does not parse, or there are too many.
    case rights
    /// A valid token without the right asked for, or of another owner than the session's.
    case insufficientScope = "insufficient_scope"

    /// The answer: `401` with the `WWW-Authenticate` challenge RFC 6750 gives a bearer token
    /// that does not do, `403` with its own.
    var apiError: APIError {
        switch self {
        case .insufficientScope:
            APIError(
                .insufficientScope, "The token does not give this right.",
                wwwAuthenticate: #"Bearer error="insufficient_scope""#)
        default:
            APIError(.invalidToken, message, wwwAuthenticate: #"Bearer error="invalid_token""#)
        }
    }

    private var message: String {
        switch self {
        case .missing: "This needs a token: Authorization: Bearer TOKEN, or the cookie ptr_token."
        case .tooLarge: "The token is larger than \(TokenVerifier.maximumTokenBytes) bytes."
        case .malformed: "The token is not a JWT this server reads (three base64url parts, exp required, no crit)."
        case .unknownKey: "The token's kid names no key of this server."
        case .algorithm: "The token's alg is not its key's algorithm."
        case .signature: "The token's signature does not verify."
        case .expired: "The token has expired."
        case .notYetValid: "The token is not valid yet (nbf)."
        case .issuer: "The token's iss is not the issuer this server trusts."
        case .audience: "The token's aud does not name this server."
        case .rights: "The token's ptr claim does not parse: each right is a feed name or a prefix followed by *."
        case .insufficientScope: "The token does not give this right."
        }
    }
}
