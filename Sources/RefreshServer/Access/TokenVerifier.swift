import Foundation
import JWTKit
import RefreshJSON

/// Verifies a token against the server's keys, synchronously, so that opening a stream on
/// its event loop can ask it without a task. jwt-kit reads the token and checks its
/// signature; the rules of which key and which algorithm are written here, since jwt-kit
/// alone would fall back to a default key for an unknown `kid` and take the token's word for
/// nothing but the key's algorithm:
///
/// - a `kid` picks the key of that name; a token without one is tried with every key of its
///   `alg` (a rotation without `kid`), none other;
/// - `alg` must be the key's own algorithm (RFC 8725 §3.1): `none`, and an HMAC token signed
///   with a public key as its secret, match no key;
/// - then, and only for a signature that verifies: `exp` (required), `nbf`, `iss`, `aud`, and
///   the rights of `ptr`.
struct TokenVerifier: Sendable {
    /// A key as jwt-kit verifies with it.
    struct Key: Sendable {
        let id: String
        let algorithm: String
        let verifier: any JWTAlgorithm
    }

    let keys: [Key]
    /// `--auth-issuer`: when set, a token's `iss` must be it.
    let issuer: String?
    /// `--auth-audience`: when set, a token's `aud` must name it; when not, a token that
    /// names an audience is not meant for this server (RFC 7519 §4.1.3).
    let audience: String?

    /// The largest token read: a header holds one, and parsing what could be megabytes of
    /// JSON for a request that will be refused is work an attacker chooses.
    static let maximumTokenBytes = 8 * 1024
    /// How far ahead `nbf` may be: the issuer's clock and this one's differ a little, and a
    /// token minted with `nbf` = now must work at once.
    static let notBeforeLeeway: TimeInterval = 30

    init(keys: [Key], issuer: String? = nil, audience: String? = nil) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
    }

    /// The verifier of `keys`, each made into jwt-kit's verifier of its algorithm.
    init(_ keys: [AccessKey], issuer: String? = nil, audience: String? = nil) async throws(AccessKey.Unusable) {
        var made: [Key] = []
        for key in keys {
            let collection = JWTKeyCollection()
            let verifier: any JWTAlgorithm
            do {
                switch key.material {
                case .hmac(let secret): await collection.add(hmac: secret, digestAlgorithm: .sha256)
                case .rsa(let rsa): await collection.add(rsa: rsa, digestAlgorithm: .sha256)
                case .ecdsa(let ecdsa): await collection.add(ecdsa: ecdsa)
                case .eddsa(let eddsa): await collection.add(eddsa: eddsa)
                case .jwk(let jwk): try await collection.add(jwk: jwk)
                }
                verifier = try await collection.getKey(for: JWKIdentifier(string: key.id), alg: key.algorithm)
            } catch {
                throw AccessKey.Unusable(description: "key \(key.id) cannot verify \(key.algorithm) tokens: \(error)")
            }
            guard verifier.name == key.algorithm else {
                throw AccessKey.Unusable(description: "key \(key.id) verifies \(verifier.name), not \(key.algorithm)")
            }
            made.append(Key(id: key.id, algorithm: key.algorithm, verifier: verifier))
        }
        self.init(keys: made, issuer: issuer, audience: audience)
    }

    func verify(_ token: some StringProtocol, now: Date = Date()) throws(AccessRefusal) -> AccessToken {
        guard token.utf8.count <= Self.maximumTokenBytes else { throw .tooLarge }
        let bytes = Array(token.utf8)
        guard let headerEnd = bytes.firstIndex(of: UInt8(ascii: ".")), let signingEnd = bytes.lastIndex(of: UInt8(ascii: ".")),
            headerEnd < signingEnd
        else { throw .malformed }
        let parsed: (header: JWTHeader, payload: TokenClaims, signature: Data)
        do {
            parsed = try DefaultJWTParser().parse(bytes, as: TokenClaims.self)
        } catch {
            throw .malformed
        }
        // Foundation's decoder takes the first of two members of the same name, where RFC 7515
        // §4 asks for the last or a refusal: a token with one is refused, as a body with one is.
        guard Self.hasUniqueMembers(bytes[..<headerEnd]), Self.hasUniqueMembers(bytes[(headerEnd + 1)..<signingEnd]) else {
            throw .malformed
        }
        let header = parsed.header
        // No extension is understood here, so one the token says must be is refused (RFC 7515
        // §4.1.11); a `kid` that is not a string is no name of a key.
        guard header.fields["crit"] == nil, header.fields["kid"] == nil || header.kid != nil else { throw .malformed }
        guard let algorithm = header.alg else { throw .algorithm }
        var candidates = keys[...]
        if let kid = header.kid {
            candidates = candidates.filter { $0.id.utf8.elementsEqual(kid.utf8) }
            guard !candidates.isEmpty else { throw .unknownKey }
        }
        candidates = candidates.filter { $0.algorithm == algorithm }
        guard !candidates.isEmpty else { throw .algorithm }
        let signingInput = bytes[..<signingEnd]
        guard candidates.contains(where: { (try? $0.verifier.verify(parsed.signature, signs: signingInput)) == true }) else {
            throw .signature
        }
        return try claims(parsed.payload, now: now)
    }

    /// Whether the base64url part holds JSON with no object that names a member twice, as the
    /// server's own JSON reader judges it.
    private static func hasUniqueMembers(_ part: ArraySlice<UInt8>) -> Bool {
        var text = String(decoding: part, as: UTF8.self).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.utf8.count % 4 != 0 { text += "=" }
        guard let json = Data(base64Encoded: text) else { return false }
        return (try? JSONParser.parse(Array(json))) != nil
    }

    private func claims(_ claims: TokenClaims, now: Date) throws(AccessRefusal) -> AccessToken {
        guard now < claims.exp.value else { throw .expired }
        if let notBefore = claims.nbf?.value, now.addingTimeInterval(Self.notBeforeLeeway) < notBefore { throw .notYetValid }
        // Names compare by their bytes, as item ids and owners do: a spelling Unicode calls
        // equivalent is another name.
        if let issuer, !(claims.iss?.value.utf8.elementsEqual(issuer.utf8) ?? false) { throw .issuer }
        switch (audience, claims.aud?.value) {
        case (nil, nil): break
        case (let audience?, let named?) where named.contains(where: { $0.utf8.elementsEqual(audience.utf8) }): break
        default: throw .audience
        }
        let rights: FeedRights
        do {
            rights = try FeedRights(read: claims.ptr?.read ?? [], publish: claims.ptr?.publish ?? [], insights: claims.ptr?.insights ?? [])
        } catch {
            throw .rights
        }
        return AccessToken(subject: claims.sub?.value, rights: rights, expires: claims.exp.value)
    }
}
