import Foundation
import JWTKit
import NIOCore
import RefreshServerTesting
import Testing

@testable import RefreshServer

/// Tokens as the server verifies them: each kind of key, and every way a token is refused.
/// The keys are real files read as `--auth-key` reads them; the tokens are minted with their
/// private halves, or put together by hand where an attacker would.
@Suite struct TokenVerifierTests {
    @Test(arguments: ["hs", "rs", "es", "es2", "ed"])
    func aTokenOfEachKeyVerifies(kid: String) async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        let expires = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down) + 3600)
        let token = try await keys.token(kid, sub: "user-7", read: ["user:7:*"], publish: ["user:7:outbox"], expires: expires)
        let verified = try await keys.verifier().verify(token)
        #expect(verified.subject == "user-7")
        #expect(verified.rights == (try FeedRights(read: ["user:7:*"], publish: ["user:7:outbox"])))
        #expect(verified.expires == expires)
    }

    @Test func aTokenWithoutKidIsTriedWithTheKeysOfItsAlgorithm() async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        let verified = try await keys.verifier().verify(keys.token(nil, read: ["main"]))
        #expect(verified.subject == "alice")
    }

    @Test func refusals() async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        let verifier = try await keys.verifier(issuer: "https://login.example", audience: "feeds")
        let good = { (kid: String) in try await keys.token(kid, issuer: "https://login.example", audience: ["feeds"]) }
        #expect(try verifier.verify(await good("hs")).subject == "alice")
        let later = Date().addingTimeInterval(3600).timeIntervalSince1970
        let claims = #"{"exp": \#(Int(later)), "iss": "https://login.example", "aud": "feeds"}"#
        let valid = try await good("rs")
        let parts = valid.split(separator: ".").map(String.init)
        let tampered = [
            parts[0], Data(#"{"exp": \#(Int(later)), "iss": "https://login.example", "aud": "feeds", "sub": "mallory"}"#.utf8).base64URLEncoded,
            parts[2],
        ].joined(separator: ".")
        let cases: [(String, AccessRefusal)] = [
            (String(repeating: "a", count: TokenVerifier.maximumTokenBytes + 1), .tooLarge),
            ("", .malformed), ("abc", .malformed), ("a.b", .malformed), (valid + ".x", .malformed),
            (TestKeys.composed(header: "not json", claims: claims), .malformed),
            (
                try await keys.token("hs", issuer: "https://login.example", audience: ["feeds"]).replacingOccurrences(
                    of: ".", with: "..", options: [], range: nil), .malformed
            ),
            // No exp: no token lives for ever.
            (
                try await TestKeys.hmacToken(
                    header: #"{"alg":"HS256","kid":"hs"}"#, claims: #"{"sub":"alice"}"#, secret: "a-secret-of-at-least-thirty-two-bytes-for-hs256"),
                .malformed
            ),
            (
                try await TestKeys.hmacToken(
                    header: #"{"alg":"HS256","kid":"hs","crit":["exp"]}"#, claims: claims, secret: "a-secret-of-at-least-thirty-two-bytes-for-hs256"),
                .malformed
            ),
            (
                try await TestKeys.hmacToken(
                    header: #"{"alg":"HS256","kid":7}"#, claims: claims, secret: "a-secret-of-at-least-thirty-two-bytes-for-hs256"), .malformed
            ),
            (
                try await TestKeys.hmacToken(
                    header: #"{"alg":"HS256","kid":"nobody"}"#, claims: claims, secret: "a-secret-of-at-least-thirty-two-bytes-for-hs256"),
                .unknownKey
            ),
            // A member named twice: parsers disagree on which wins, so neither does.
            (
                try await TestKeys.hmacToken(
                    header: #"{"alg":"HS256","alg":"none","kid":"hs"}"#, claims: claims, secret: "a-secret-of-at-least-thirty-two-bytes-for-hs256"),
                .malformed
            ),
            (
                try await TestKeys.hmacToken(
                    header: #"{"alg":"HS256","kid":"hs"}"#, claims: #"{"exp":1,"exp":\#(Int(later)),"iss":"https://login.example","aud":"feeds"}"#,
                    secret: "a-secret-of-at-least-thirty-two-bytes-for-hs256"),
                .malformed
            ),
            (TestKeys.composed(header: #"{"alg":"none","kid":"hs"}"#, claims: claims), .algorithm),
            (TestKeys.composed(header: #"{"alg":"none"}"#, claims: claims), .algorithm),
            (TestKeys.composed(header: #"{"kid":"hs"}"#, claims: claims), .algorithm),
            // The RSA key's public PEM used as an HMAC secret: the key's algorithm is RS256.
            (try await TestKeys.hmacToken(header: #"{"alg":"HS256","kid":"rs"}"#, claims: claims, secret: keys.rsaPublicPEM), .algorithm),
            (try await TestKeys.hmacToken(header: #"{"alg":"HS256"}"#, claims: claims, secret: keys.rsaPublicPEM), .signature),
            (
                try await TestKeys.hmacToken(
                    header: #"{"alg":"HS256","kid":"hs"}"#, claims: claims, secret: "another-secret-of-thirty-two-bytes-or-more"), .signature
            ),
            (tampered, .signature),
            (parts[0] + "." + parts[1] + ".", .signature),
            (try await keys.token("es", expires: Date().addingTimeInterval(-1), issuer: "https://login.example", audience: ["feeds"]), .expired),
            (
                try await keys.token("ed", notBefore: Date().addingTimeInterval(120), issuer: "https://login.example", audience: ["feeds"]),
                .notYetValid
            ),
            (try await keys.token("hs", issuer: "https://other.example", audience: ["feeds"]), .issuer),
            (try await keys.token("hs", audience: ["feeds"]), .issuer),
            (try await keys.token("hs", issuer: "https://login.example", audience: ["other"]), .audience),
            (try await keys.token("hs", issuer: "https://login.example"), .audience),
            (try await keys.token("hs", read: ["a*b"], issuer: "https://login.example", audience: ["feeds"]), .rights),
            (
                try await keys.token(
                    "hs", publish: Array(repeating: "x", count: FeedRights.maximumPatterns + 1), issuer: "https://login.example", audience: ["feeds"]),
                .rights
            ),
        ]
        for (token, reason) in cases {
            #expect(throws: reason, "\(token.prefix(120))") { try verifier.verify(token) }
        }
    }

    @Test func aSlightlyEarlyNotBeforeIsTakenAndAnAudienceNeedsOneConfigured() async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        let verifier = try await keys.verifier()
        #expect(try verifier.verify(await keys.token(notBefore: Date().addingTimeInterval(10))).subject == "alice")
        let named = try await keys.token(audience: ["feeds"])
        #expect(throws: AccessRefusal.audience) { try verifier.verify(named) }
        let audience = try await keys.verifier(audience: "feeds")
        #expect(try audience.verify(await keys.token(audience: ["other", "feeds"])).subject == "alice")
    }

    @Test func aStreamClosesWithinTheLastMinuteBeforeItsTokenExpires() {
        let now = Date()
        let hour = now.addingTimeInterval(3600)
        #expect(AccessToken.streamLife(until: hour, now: now, draw: { $0.lowerBound }) == .seconds(3600))
        #expect(AccessToken.streamLife(until: hour, now: now, draw: { $0.upperBound }) == .seconds(3540))
        // Less than a minute left: somewhere in what is left.
        #expect(AccessToken.streamLife(until: now.addingTimeInterval(20), now: now, draw: { $0.upperBound }) == .zero)
        #expect(AccessToken.streamLife(until: now.addingTimeInterval(20), now: now, draw: { $0.lowerBound }) == .seconds(20))
        #expect(AccessToken.streamLife(until: now.addingTimeInterval(-5), now: now) == .zero)
        // A token that says it expires in ten thousand years (or in 1e300 s) is a stream of a year.
        for far in [Date(timeIntervalSince1970: 253_402_300_799), Date(timeIntervalSince1970: 1e300), Date.distantFuture] {
            let life = AccessToken.streamLife(until: far, now: now, draw: { $0.lowerBound })
            #expect(life == .seconds(Int64(AccessToken.longestLife)))
        }
        for _ in 0..<100 {
            let life = AccessToken.streamLife(until: hour, now: now)
            #expect(life >= .seconds(3540) && life <= .seconds(3600))
        }
    }
}

/// Key files as `--auth-key` reads them, and what stops the start.
@Suite struct AccessKeyTests {
    private func file(_ name: String, _ text: String) throws -> String {
        let url = Scratch.path(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    @Test func eachKindOfFileGivesItsKeysAndAlgorithm() async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        let read = try keys.files.flatMap { try AccessKey.read(file: $0) }
        #expect(read.map(\.id) == ["hs", "rs", "es", "ed", "es2"])
        #expect(read.map(\.algorithm) == ["HS256", "RS256", "ES256", "EdDSA", "ES256"])
    }

    @Test(arguments: [
        ("short.key", "only-thirty-one-bytes-of-secret", "as an HMAC secret it is 31 bytes: HS256 needs at least 32"),
        (
            "private.pem",
            "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAVUVBM/AeoXi9mbEKqGiFS++5lYOpAB7crCoFAw9P9z\n-----END PRIVATE KEY-----\n",
            "is a private key"
        ),
        ("junk.pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "is not a PEM public key this server takes"),
        ("bad.json", "{\"keys\": 3}", "is not a JWKS document"),
        ("empty.json", "{\"keys\": []}", "is a JWKS document without keys"),
        (
            "noalg.json", #"{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "a"}]}"#,
            "key a has no alg"
        ),
        (
            "nokid.json", #"{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "alg": "EdDSA"}]}"#,
            "key 0 has no kid"
        ),
        (
            "twice.json",
            #"{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "alg": "EdDSA", "kid": "a"}, {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "alg": "EdDSA", "kid": "a"}]}"#,
            "two keys have the kid a"
        ),
        (
            "privatejwk.json", #"{"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB", "d": "AQAB", "alg": "RS256", "kid": "a"}]}"#,
            "key a is a private key"
        ),
    ])
    func aFileThatGivesNoKeyStopsTheStartNamingTheSetting(name: String, text: String, problem: String) throws {
        let path = try file(name, text)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var configuration = ServerConfiguration()
        configuration.authKeys = [path]
        do {
            try configuration.validate()
            Issue.record("\(name) was taken")
        } catch {
            #expect(error.setting == "auth-key")
            #expect(error.description.hasPrefix("auth-key: \(path) "), "\(error)")
            #expect(error.description.contains(problem), "\(error)")
        }
    }

    @Test func aMissingFileStopsTheStart() async {
        var configuration = ServerConfiguration()
        configuration.authKeys = ["/nonexistent/key.pem"]
        #expect(
            throws: ConfigurationError(
                setting: "auth-key", value: nil, problem: "/nonexistent/key.pem cannot be read (no such file, or no permission)")
        ) {
            try configuration.validate()
        }
        await #expect(throws: ConfigurationError.self) { _ = try await configuration.tokenVerifier() }
    }

    @Test func twoFilesMayNotNameTheSameKey() async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        var configuration = ServerConfiguration()
        configuration.authKeys = [keys.files[0], keys.files[0]]
        await #expect(throws: ConfigurationError.self) { _ = try await configuration.tokenVerifier() }
    }

    @Test func aPublicFeedPatternIsCheckedAtStart() {
        var configuration = ServerConfiguration()
        configuration.publicFeeds = ["main", "a*b"]
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        configuration.publicFeeds = ["main", "news:*", ""]
        #expect(throws: Never.self) { try configuration.validate() }
        #expect(configuration.publicFeedPatterns.map(\.description) == ["main", "news:*"])
    }

    /// A key's name, the issuer and the audience compare by their bytes, as item ids and
    /// owners do: a spelling Unicode calls equivalent (`cafe` with a combining accent for
    /// `café`) names another key, issuer or audience.
    @Test func namesCompareByTheirBytes() async throws {
        let secret = "a-secret-of-at-least-thirty-two-bytes-for-hs256"
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        let verifier = try await TokenVerifier(
            [AccessKey(id: composed, algorithm: "HS256", material: .hmac(HMACKey(from: secret)))], issuer: composed, audience: composed)
        let later = Int(Date().addingTimeInterval(3600).timeIntervalSince1970)
        func token(kid: String, issuer: String, audience: String) async throws -> String {
            try await TestKeys.hmacToken(
                header: #"{"alg":"HS256","kid":"\#(kid)"}"#, claims: #"{"exp":\#(later),"iss":"\#(issuer)","aud":"\#(audience)"}"#,
                secret: secret)
        }
        let accepted = try await token(kid: composed, issuer: composed, audience: composed)
        #expect(throws: Never.self) { try verifier.verify(accepted) }
        let cases: [(String, String, String, AccessRefusal)] = [
            (decomposed, composed, composed, .unknownKey),
            (composed, decomposed, composed, .issuer),
            (composed, composed, decomposed, .audience),
        ]
        for (kid, issuer, audience, refusal) in cases {
            let text = try await token(kid: kid, issuer: issuer, audience: audience)
            #expect(throws: refusal, "kid \(kid.unicodeScalars.count), iss \(issuer.unicodeScalars.count), aud \(audience.unicodeScalars.count)") {
                try verifier.verify(text)
            }
        }
    }
}
