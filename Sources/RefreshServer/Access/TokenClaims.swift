import Foundation
import JWTKit

/// The claims a token is read for. `exp` is not optional: a token without it does not
/// decode, so no token lives for ever. The rest are checked by ``TokenVerifier``, which
/// knows the server's issuer and audience.
struct TokenClaims: JWTPayload {
    var exp: ExpirationClaim
    var nbf: NotBeforeClaim?
    var iss: IssuerClaim?
    var aud: AudienceClaim?
    var sub: SubjectClaim?
    var ptr: Rights?

    /// The `ptr` claim as the token carries it; ``FeedRights`` parses it.
    struct Rights: Codable, Sendable {
        var read: [String]?
        var publish: [String]?
        /// Feed patterns whose pull insights the token may read (a publish right gives them too).
        var insights: [String]?
    }

    /// The checks that need no configuration, for a caller that verifies through jwt-kit's
    /// own flow; the server's are ``TokenVerifier/verify(_:now:)``'s.
    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        try nbf?.verifyNotBefore()
    }
}
