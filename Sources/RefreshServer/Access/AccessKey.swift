import Foundation
import JWTKit

/// A key tokens are verified with, as one `--auth-key` file gives it: an HMAC secret (HS256),
/// a PEM public key (RS256 for RSA, ES256 for P-256, EdDSA for Ed25519), or a JWKS document
/// of public keys, each with its `kid` and `alg`.
///
/// Each key has one algorithm, decided here from the key, so a token's `alg` only ever has to
/// agree with it. A PEM file or a secret is named by its file's name without its extension
/// (`keys/2026-11.pem` is the key `2026-11`), which a token's `kid` picks; a JWKS key by its
/// own `kid`.
struct AccessKey: Sendable {
    enum Material: Sendable {
        case hmac(HMACKey)
        case rsa(Insecure.RSA.PublicKey)
        case ecdsa(ES256PublicKey)
        case eddsa(EdDSA.PublicKey)
        case jwk(JWK)
    }

    let id: String
    /// The `alg` a token signed with this key carries.
    let algorithm: String
    let material: Material

    /// The shortest HMAC secret accepted: RFC 7518 §3.2 asks for a key as long as the hash.
    static let minimumSecretBytes = 32

    /// The algorithms a JWKS key may name (`alg` is required there: a key without one could
    /// be tried with whatever a token says).
    static let jwkAlgorithms: Set<String> = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

    /// Why a file gives no key, said as the start-up error's end.
    struct Unusable: Error, CustomStringConvertible {
        let description: String
    }

    /// The keys of the file at `path`.
    static func read(file path: String) throws(Unusable) -> [AccessKey] {
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw Unusable(description: "cannot be read (no such file, or no permission)")
        }
        let id = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let text = String(decoding: bytes, as: UTF8.self)
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") { return try jwks(trimmed) }
        if trimmed.hasPrefix("-----BEGIN") { return [try pem(trimmed, id: id)] }
        return [try secret(bytes, id: id)]
    }

    /// A secret is the file's bytes, but for one line break at the end (what `echo` and
    /// editors add).
    private static func secret(_ bytes: Data, id: String) throws(Unusable) -> AccessKey {
        var secret = [UInt8](bytes)
        if secret.last == UInt8(ascii: "\n") { secret.removeLast() }
        if secret.last == UInt8(ascii: "\r") { secret.removeLast() }
        guard secret.count >= minimumSecretBytes else {
            throw Unusable(
                description:
                    "is neither a PEM public key nor a JWKS document, and as an HMAC secret it is \(secret.count) bytes: HS256 needs at least \(minimumSecretBytes)"
            )
        }
        return AccessKey(id: id, algorithm: "HS256", material: .hmac(HMACKey(from: secret)))
    }

    private static func pem(_ text: String, id: String) throws(Unusable) -> AccessKey {
        if text.contains("PRIVATE KEY-----") {
            throw Unusable(description: "is a private key: the server verifies, so give it the public key only")
        }
        if let key = try? Insecure.RSA.PublicKey(pem: text) { return AccessKey(id: id, algorithm: "RS256", material: .rsa(key)) }
        if let key = try? ES256PublicKey(pem: text) { return AccessKey(id: id, algorithm: "ES256", material: .ecdsa(key)) }
        if let key = try? EdDSA.PublicKey(pem: text) { return AccessKey(id: id, algorithm: "EdDSA", material: .eddsa(key)) }
        throw Unusable(description: "is not a PEM public key this server takes: RSA of 2048 bits or more, P-256, or Ed25519")
    }

    private static func jwks(_ text: String) throws(Unusable) -> [AccessKey] {
        let set: JWKS
        do {
            set = try JSONDecoder().decode(JWKS.self, from: Data(text.utf8))
        } catch {
            throw Unusable(description: "is not a JWKS document ({\"keys\": [...]} of RSA, EC or OKP public keys): \(error)")
        }
        guard !set.keys.isEmpty else { throw Unusable(description: "is a JWKS document without keys") }
        var keys: [AccessKey] = []
        for (index, jwk) in set.keys.enumerated() {
            guard let kid = jwk.keyIdentifier?.string, !kid.isEmpty else { throw Unusable(description: "key \(index) has no kid") }
            guard let algorithm = jwk.algorithm?.rawValue, jwkAlgorithms.contains(algorithm) else {
                throw Unusable(description: "key \(kid) has no alg, or one of none of \(jwkAlgorithms.sorted().joined(separator: ", "))")
            }
            guard jwk.privateExponent == nil else {
                throw Unusable(description: "key \(kid) is a private key: the server verifies, so give it public keys only")
            }
            guard !keys.contains(where: { $0.id == kid }) else { throw Unusable(description: "two keys have the kid \(kid)") }
            keys.append(AccessKey(id: kid, algorithm: algorithm, material: .jwk(jwk)))
        }
        return keys
    }
}
