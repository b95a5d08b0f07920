import Foundation
import JWTKit
import RefreshServerTesting

@testable import RefreshServer

/// Keys to test access with: each key's public half (or secret) written as an `--auth-key`
/// file, its private half minting tokens. `hs` is an HMAC secret file, `rs` an RSA PEM, `es`
/// a P-256 PEM, and `ed` an Ed25519 key in a JWKS document (`keys.json`) beside another
/// P-256 key, `es2`.
struct TestKeys: Sendable {
    let directory: URL
    /// The `--auth-key` files, one per kind.
    let files: [String]
    let rsaPublicPEM: String
    private let signers: JWTKeyCollection
    private let anonymous: JWTKeyCollection

    static func make() async throws -> TestKeys {
        let directory = Scratch.path("keys")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let secret = "a-secret-of-at-least-thirty-two-bytes-for-hs256"
        let rsa = try Insecure.RSA.PrivateKey(pem: rsaPrivatePEM)
        let es = ES256PrivateKey()
        let es2 = ES256PrivateKey()
        let ed = try EdDSA.PrivateKey()
        let write = { (name: String, text: String) throws -> String in
            let url = directory.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let edX = ed.publicKey.rawRepresentation.base64URLEncoded
        let es2Point = es2.publicKey.parameters!
        let jwks = """
            {"keys": [
              {"kty": "OKP", "crv": "Ed25519", "x": "\(edX)", "kid": "ed", "alg": "EdDSA", "use": "sig"},
              {"kty": "EC", "crv": "P-256", "x": "\(es2Point.x)", "y": "\(es2Point.y)", "kid": "es2", "alg": "ES256"}
            ]}
            """
        let files = [
            try write("hs.key", secret + "\n"), try write("rs.pem", rsa.publicKey.pemRepresentation),
            try write("es.pem", es.publicKey.pemRepresentation), try write("keys.json", jwks),
        ]
        let signers = JWTKeyCollection()
        await signers.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "hs")
        await signers.add(rsa: rsa, digestAlgorithm: .sha256, kid: "rs")
        await signers.add(ecdsa: es, kid: "es")
        await signers.add(ecdsa: es2, kid: "es2")
        await signers.add(eddsa: ed, kid: "ed")
        // Signs with the secret and puts no `kid`.
        let anonymous = JWTKeyCollection()
        await anonymous.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return TestKeys(
            directory: directory, files: files, rsaPublicPEM: rsa.publicKey.pemRepresentation, signers: signers, anonymous: anonymous)
    }

    /// The verifier of every key, as the server makes it.
    func verifier(issuer: String? = nil, audience: String? = nil) async throws -> TokenVerifier {
        var configuration = ServerConfiguration()
        configuration.authKeys = files
        configuration.authIssuer = issuer
        configuration.authAudience = audience
        return try await configuration.tokenVerifier()!
    }

    /// A token signed by the key `kid` (`nil`: the secret, without a `kid`).
    func token(
        _ kid: String? = "hs", sub: String? = "alice", read: [String]? = nil, publish: [String]? = nil, insights: [String]? = nil,
        expires: Date = Date().addingTimeInterval(3600), notBefore: Date? = nil, issuer: String? = nil, audience: [String]? = nil
    ) async throws -> String {
        let claims = TestClaims(
            exp: ExpirationClaim(value: expires), nbf: notBefore.map { NotBeforeClaim(value: $0) }, iss: issuer.map { IssuerClaim(value: $0) },
            aud: audience.map { AudienceClaim(value: $0) }, sub: sub.map { SubjectClaim(value: $0) },
            ptr: read == nil && publish == nil && insights == nil ? nil : TokenClaims.Rights(read: read, publish: publish, insights: insights))
        guard let kid else { return try await anonymous.sign(claims) }
        return try await signers.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// A token of the given header and claims with the given signature, put together by hand.
    static func composed(header: String, claims: String, signature: [UInt8] = []) -> String {
        [Data(header.utf8).base64URLEncoded, Data(claims.utf8).base64URLEncoded, Data(signature).base64URLEncoded].joined(separator: ".")
    }

    /// An HS256 token signed with `secret` by hand: how an attacker who knows a public key
    /// would sign with it as a secret.
    static func hmacToken(header: String, claims: String, secret: String) async throws -> String {
        let signingInput = Data(header.utf8).base64URLEncoded + "." + Data(claims.utf8).base64URLEncoded
        let collection = JWTKeyCollection()
        await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        let signature = try await collection.getKey().sign(Array(signingInput.utf8))
        return signingInput + "." + Data(signature).base64URLEncoded
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The claims a test mints, `exp` included or not.
struct TestClaims: JWTPayload {
    var exp: ExpirationClaim?
    var nbf: NotBeforeClaim?
    var iss: IssuerClaim?
    var aud: AudienceClaim?
    var sub: SubjectClaim?
    var ptr: TokenClaims.Rights?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

extension Data {
    var base64URLEncoded: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// A 2048-bit RSA key made for these tests with `openssl genpkey -algorithm RSA`; it guards nothing.
private let rsaPrivatePEM = """
    -----BEGIN PRIVATE KEY-----
    MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCdLJKGIb5O/FM3
    OOpQ42z8p5DAfth7a5ahDsLBy0jhEp0/XpjoCgiChTligoYYxBVHwfta4BCNIOc0
    XWdQjxhrkga1CkEqM6kO+WWQyMfvuUH7EJkLHyy0xgxCa2XFuvC/1wAB2GBmmBqa
    ICLCvkhNJ6kAUClgizj9/zWglWo6PldUJQaAq9e+R3PB19x5Hx1JumBot0d3pUD0
    48lEW0znU9LTXxrCDnZANaIAQknePYCelDu1j0/j3tAZ541wegk6CQdyYKD3UZqS
    4TbwwPESZS/+/cEWb8CWuUYoMicjhvbd0T+DMaA7Zqlx9XivjjcyN31X67xnI/ZW
    YjI+v6ZtAgMBAAECggEABdSEbuNLiuSDNbYvwuZcwZZ5oRpTb2iTQtAoW0XuIyMs
    oBAjPeA5ZpYIheXvkXWckHfamglbs9B3oxKf5XYZYswc4ZRKzIT0DXEk2lUITZUi
    pGx+MNJsNxxtkf0n3kjL62HPR0I+eS/FNNhiUbT7O5lwBGn0zvb7GzjfRWClexmL
    83B0FsvSRJfcHv6Q1Uw799/IXa3Dqp7pu9znu8zJBDwbrartg8/2v2yoE9uTN4M0
    FuM/vvXWTS/rgrNzPmdEF2wAVJHlJ+dbZq0bGWbAyuKB9hT3MgVd7+OA9jU+mMGV
    /OwTHcmbT/qwQeInqpznr1I1s6Sp+O8InkLiRBIDRQKBgQDcPJBJKpPprFtRF9q/
    wdzI5TW6xelG0uSrDijUuNv/oZYaM1zM0gOGknN95TleZpQXj4rI6GEDnxt5E0av
    L3lXfY+wbymMuUmQpDPM3p3GDZ6K+xwW6zKh2L10LtYf6ayM8CpwDtya14h+vS2r
    4g3h596Tzg0VXWsVGpuqwwMquwKBgQC2snG44xu22IRVVO8f47D6jgj98IHUX9Ii
    Z1j1Gjz6ZOYQDZG2bdVhr0ueT+9tgv2XmDcwpaEo4hFMbgsg0rFzo2a6C7iiiFLh
    LNwxrbDI6UJlWRUGazSzMoLxs5/4sZFAszMuCLzysGzv/YD55fo/Jvm2evum+ZwS
    skw2geuE9wKBgQCR2UXQPnMv96WNwZdrEC5vmGOJqhE/huBKa5kcrsN6uf7WoRce
    ySHul8QGJqxkWNhP9g552HKO3GpsNxjDYVQhXZSvyh4hBH+0Wxm23eJsS46oCX3j
    q6SfTBLDA1VoUu6jc1UXWrA7lurcy9mYD58T8OMUzQsbD/+fPTzDzFuniwKBgCun
    CWsewKF4rG3jJFufQMstItLiI3NGDeRwgx3VThqZ/yp4w4cuSRzVEKFcAh5NfSA6
    m31BJfepxG5ZoMkP7pxtv37WjCAxqHPrDxXDpYjryxSCK3bkKKxkdksgGyoF62nl
    J2ZpahQmuXDCRo3vOFLcki/axMRJwdPpzDH96vNTAoGAUTcGGWr6c/rvWmBIla2B
    lb2qBH819FeZINvyCCzoiSQ3HBQWNIk83CryCss+l48wYM7XE6ga08+2xCvPku3r
    zugc1Chpfyds1BlwhkckmHaUvwo0mMlu3MCkdSng8onHGvSjpc4zEyQU7rnpOzKP
    nV6MVgUQhw6q5LLrzK/ISzY=
    -----END PRIVATE KEY-----
    """
