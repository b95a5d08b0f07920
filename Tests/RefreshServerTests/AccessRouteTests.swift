import Foundation
import Logging
import Synchronization
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Access over real HTTP, with `--auth-key`: who reads and publishes which feed, who opens a
/// session's stream, what a refusal says (the same for a feed that exists and one that does
/// not), and a stream that ends as its token expires.
@Suite struct AccessRouteTests {
    static let publishToken = "the-static-publish-token-of-this-server"

    private func run(logger: Logger = Logger(label: "refresh-server"), _ body: @Sendable (TestServer, TestKeys) async throws -> Void) async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        let configuration = TestServer.configuration {
            $0.authKeys = keys.files
            $0.publishToken = Self.publishToken
        }
        try await TestServer.run(configuration, feed: MemoryFeed(items: items(3)), logger: logger) { server in
            // A private feed with items, beside private feeds that have none.
            let stored = try await server.post(
                "/api/feeds/user:1/items", #"{"id":"secret","title":"Only for user 1","published":"2030-01-01T00:00:00Z"}"#,
                headers: [("Authorization", "Bearer \(Self.publishToken)")])
            #expect(stored.status == 201)
            try await body(server, keys)
        }
    }

    private func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    /// A refusal, as the answer and its challenge say it.
    private func expectRefused(_ reply: TestServer.Reply, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply.status == status, "\(reply.text)", sourceLocation: sourceLocation)
        #expect(reply.json["error"] as? String == code, sourceLocation: sourceLocation)
        #expect(reply.headers.first(name: "www-authenticate") == #"Bearer error="\#(code)""#, sourceLocation: sourceLocation)
    }

    @Test func aPrivateFeedIsReadWithARightAndRefusedTheSameWhetherItExistsOrNot() async throws {
        try await run { server, keys in
            // Public `main` needs nothing.
            #expect(try await server.get("/api/items").status == 200)
            #expect(try await server.get("/api/feeds/main").status == 200)
            let reader = try await keys.token("rs", read: ["user:1"])
            let page = try await server.get("/api/feeds/user:1/items", headers: bearer(reader))
            #expect(page.status == 200)
            #expect((page.json["items"] as? [[String: Any]])?.first?["id"] as? String == "secret")
            #expect(try await server.get("/api/feeds/user:1", headers: bearer(reader)).json["head"] as? Int == 1)
            // The cookie a page's token travels in works as the header does.
            let byCookie = try await server.get("/api/feeds/user:1/items", headers: [("Cookie", "theme=dark; ptr_token=\(reader)")])
            #expect(byCookie.status == 200)
            let quoted = try await server.get("/api/feeds/user:1/items", headers: [("Cookie", "ptr_token=\"\(reader)\"; theme=dark")])
            #expect(quoted.status == 200)
            // Never from the URL.
            expectRefused(try await server.get("/api/feeds/user:1/items?access_token=\(reader)&ptr_token=\(reader)"), 401, "invalid_token")

            let other = try await keys.token("es", read: ["user:2"])
            for (path, existing) in [("/api/feeds/user:1/items", "/api/feeds/user:9/items"), ("/api/feeds/user:1", "/api/feeds/user:9")] {
                let none = try await server.get(path)
                let noneElsewhere = try await server.get(existing)
                expectRefused(none, 401, "invalid_token")
                #expect(none.body == noneElsewhere.body)
                let scoped = try await server.get(path, headers: bearer(other))
                let scopedElsewhere = try await server.get(existing, headers: bearer(other))
                expectRefused(scoped, 403, "insufficient_scope")
                #expect(scoped.body == scopedElsewhere.body)
                #expect(!scoped.text.contains("secret") && !scoped.text.contains("user:1"))
            }
            // The static publish token reads what anyone reads, nothing more.
            #expect(try await server.get("/api/items", headers: bearer(Self.publishToken)).status == 200)
            expectRefused(try await server.get("/api/feeds/user:1/items", headers: bearer(Self.publishToken)), 401, "invalid_token")
            // A token given must be valid, even where none is needed.
            let expired = try await keys.token("hs", read: ["*"], expires: Date().addingTimeInterval(-5))
            expectRefused(try await server.get("/api/items", headers: bearer(expired)), 401, "invalid_token")
            expectRefused(try await server.get("/api/feeds/user:1/items", headers: bearer("not.a.token")), 401, "invalid_token")
        }
    }

    @Test func publishingNeedsAPublishRightOrTheStaticToken() async throws {
        try await run { server, keys in
            let item = #"{"id":"n1","title":"New","published":"2030-01-02T00:00:00Z"}"#
            expectRefused(try await server.post("/api/feeds/user:1/items", item), 401, "invalid_token")
            // Reading is not publishing.
            let reader = try await keys.token("ed", read: ["user:1"])
            expectRefused(try await server.post("/api/feeds/user:1/items", item, headers: bearer(reader)), 403, "insufficient_scope")
            let publisher = try await keys.token("ed", publish: ["user:*"])
            #expect(try await server.post("/api/feeds/user:1/items", item, headers: bearer(publisher)).status == 201)
            expectRefused(try await server.post("/api/feeds/team.eng/items", item, headers: bearer(publisher)), 403, "insufficient_scope")
            #expect(try await server.post("/api/items", item, headers: bearer(Self.publishToken)).status == 201)
            // Nothing of a refused publish was stored.
            let feed = try await server.get("/api/feeds/team.eng", headers: bearer(try await keys.token(read: ["*"])))
            #expect(feed.json["head"] as? Int == 0)
        }
    }

    @Test func aSessionBelongsToItsTokensSubjectAndItsStreamNeedsTheSameOwner() async throws {
        try await run { server, keys in
            let body = #"{"feed":"user:1"}"#
            expectRefused(try await server.post("/api/sessions", body), 401, "invalid_token")
            expectRefused(
                try await server.post("/api/sessions", body, headers: bearer(try await keys.token(read: ["user:2"]))), 403, "insufficient_scope")
            let alice = try await keys.token("hs", sub: "alice", read: ["user:1"])
            let created = try await server.post("/api/sessions", body, headers: bearer(alice))
            #expect(created.status == 201)
            let id = try #require(created.json["id"] as? String)

            let anonymous = try await server.events(id)
            #expect(anonymous.status == 401)
            let mallory = try await server.events(id, headers: bearer(try await keys.token("rs", sub: "mallory", read: ["*"])))
            #expect(mallory.status == 403)
            // The same owner, whose token no longer reads the feed.
            let narrowed = try await server.events(id, headers: bearer(try await keys.token("rs", sub: "alice", read: ["user:2"])))
            #expect(narrowed.status == 403)
            let stream = try await server.events(id, headers: [("Cookie", "ptr_token=\(try await keys.token("es", sub: "alice", read: ["user:1"]))")])
            #expect(stream.status == 200)
            #expect(try await stream.nextEvent().event == "state")
            // Samples need the session id alone.
            _ = try await server.sample(id, seq: 1, y: 10)

            // A session of the public feed created without a token: its id opens its stream,
            // and a token given for it must be valid, as on every other route.
            let open = try await server.session()
            #expect(try await server.events(open).status == 200)
            let malformed = try await server.events(open, headers: bearer("not.a.token"))
            #expect(malformed.status == 401)
            #expect(malformed.header("www-authenticate") == #"Bearer error="invalid_token""#)
            let expired = try await keys.token("hs", sub: "alice", read: ["*"], expires: Date().addingTimeInterval(-5))
            #expect(try await server.events(open, headers: [("Cookie", "ptr_token=\(expired)")]).status == 401)
            #expect(try await server.events(open, headers: bearer(try await keys.token("rs", sub: "bob", read: ["user:9"]))).status == 200)
        }
    }

    /// An owner is the bytes of `sub`: a spelling Unicode calls the same person (`café` with a
    /// combining accent for `café` written whole) is another one.
    @Test func aSessionsOwnerIsTheBytesOfItsSubject() async throws {
        try await run { server, keys in
            let whole = try await keys.token("hs", sub: "caf\u{E9}", read: ["user:1"])
            let created = try await server.post("/api/sessions", #"{"feed":"user:1"}"#, headers: bearer(whole))
            let id = try #require(created.json["id"] as? String)
            let combined = try await keys.token("hs", sub: "cafe\u{301}", read: ["user:1"])
            #expect(try await server.events(id, headers: bearer(combined)).status == 403)
            #expect(try await server.events(id, headers: bearer(whole)).status == 200)
        }
    }

    @Test func everyBadTokenIsA401OverHTTPAndChangesNothing() async throws {
        try await run { server, keys in
            let later = Int(Date().addingTimeInterval(3600).timeIntervalSince1970)
            let rights = #"{"exp":\#(later),"sub":"alice","ptr":{"read":["user:1"],"publish":["user:1"]}}"#
            let valid = try await keys.token("rs", read: ["user:1"], publish: ["user:1"])
            let parts = valid.split(separator: ".").map(String.init)
            let bad = [
                ("alg none", TestKeys.composed(header: #"{"alg":"none","kid":"hs"}"#, claims: rights)),
                (
                    "HS256 signed with the RSA public key",
                    try await TestKeys.hmacToken(header: #"{"alg":"HS256","kid":"rs"}"#, claims: rights, secret: keys.rsaPublicPEM)
                ),
                (
                    "another kid",
                    try await TestKeys.hmacToken(
                        header: #"{"alg":"HS256","kid":"old"}"#, claims: rights, secret: "a-secret-of-at-least-thirty-two-bytes-for-hs256")
                ),
                ("expired", try await keys.token("es", read: ["user:1"], publish: ["user:1"], expires: Date().addingTimeInterval(-60))),
                ("tampered", [parts[0], Data(rights.utf8).base64URLEncoded, parts[2]].joined(separator: ".")),
                (
                    "oversized",
                    try await keys.token("hs", read: (0..<200).map { "user:1:\($0)-" + String(repeating: "x", count: 40) }, publish: ["user:1"])
                ),
            ]
            let item = #"{"id":"forged","title":"Forged"}"#
            for (name, token) in bad {
                expectRefused(try await server.get("/api/feeds/user:1/items", headers: bearer(token)), 401, "invalid_token")
                expectRefused(try await server.get("/api/feeds/user:1", headers: [("Cookie", "ptr_token=\(token)")]), 401, "invalid_token")
                expectRefused(try await server.post("/api/sessions", #"{"feed":"user:1"}"#, headers: bearer(token)), 401, "invalid_token")
                let published = try await server.post("/api/feeds/user:1/items", item, headers: bearer(token))
                expectRefused(published, 401, "invalid_token")
                #expect(published.status == 401, "\(name)")
            }
            let feed = try await server.get("/api/feeds/user:1", headers: bearer(valid))
            #expect(feed.json["head"] as? Int == 1, "nothing was published by a bad token")
        }
    }

    @Test func aTokenOfAFarFutureOpensAStreamAndTheServerLivesOn() async throws {
        try await run { server, keys in
            let token = try await keys.token("hs", expires: Date(timeIntervalSince1970: 1e12))
            let created = try await server.post("/api/sessions", "{}", headers: bearer(token))
            let id = try #require(created.json["id"] as? String)
            let stream = try await server.events(id, headers: bearer(token))
            #expect(stream.status == 200)
            #expect(try await stream.nextEvent().event == "state")
            #expect(try await server.get("/healthz").status == 200)
        }
    }

    @Test func severalCarriersAreReadTheSameOnEveryRoute() async throws {
        try await run { server, keys in
            let alice = try await keys.token("hs", sub: "alice", read: ["user:1"])
            let bob = try await keys.token("hs", sub: "bob", read: ["user:1"])
            let created = try await server.post("/api/sessions", #"{"feed":"user:1"}"#, headers: bearer(alice))
            let id = try #require(created.json["id"] as? String)
            // Two Authorization fields are no token, on the stream as on a routed request.
            let twice = [("Authorization", "Bearer \(alice)"), ("Authorization", "Bearer \(bob)")]
            #expect(try await server.get("/api/feeds/user:1/items", headers: twice).status == 401)
            #expect(try await server.events(id, headers: twice).status == 401)
            #expect(try await server.events(id, headers: twice.reversed()).status == 401)
            // A stale or planted ptr_token sent first does not hide the application's own.
            let cookies = [("Cookie", "ptr_token=not.a.token; ptr_token=\(alice)")]
            #expect(try await server.get("/api/feeds/user:1/items", headers: cookies).status == 200)
            #expect(try await server.events(id, headers: cookies).status == 200)
            expectRefused(
                try await server.get("/api/feeds/user:1/items", headers: [("Cookie", "ptr_token=not.a.token; ptr_token=x.y.z")]), 401, "invalid_token"
            )
        }
    }

    @Test func aStreamEndsCleanlyBeforeItsTokenExpires() async throws {
        try await run { server, keys in
            // Ten seconds: time enough to make the session and open its stream on a busy machine.
            let token = try await keys.token("hs", read: ["user:1"], expires: Date().addingTimeInterval(10))
            // A page that shows the feed's first page, so it is told of what comes after it.
            let created = try await server.post("/api/sessions", #"{"feed":"user:1","firstPage":true}"#, headers: bearer(token))
            let id = try #require(created.json["id"] as? String)
            let stream = try await server.events(id, headers: bearer(token))
            #expect(stream.status == 200)
            let lastID = try #require(try await stream.nextEvent().id)
            let started = ContinuousClock.now
            // The body ends (the chunked terminator): the client sees the end, not an error, by
            // the token's expiry (a stream left open would go on with keepalives for ever).
            while try await stream.chunk(within: 30) != nil, ContinuousClock.now - started < .seconds(60) {}
            #expect(ContinuousClock.now - started < .seconds(15), "closed by the token's expiry in 10 s, with room to read it")
            // The session lives on: a renewed token opens its stream again, from where the last
            // one ended, and what was published meanwhile arrives once.
            let publisher = [("Authorization", "Bearer \(Self.publishToken)")]
            let item = #"{"id":"meanwhile","title":"Published between two streams","published":"2030-01-02T00:00:00Z"}"#
            #expect(try await server.post("/api/feeds/user:1/items", item, headers: publisher).status == 201)
            let renewed = try await keys.token("hs", read: ["user:1"])
            let again = try await server.events(id, lastEventID: lastID, headers: bearer(renewed))
            #expect(again.status == 200)
            let news = try await again.events(until: "news")
            #expect(news.filter { $0.event == "news" }.count == 1)
            #expect(news.allSatisfy { ($0.id ?? 0) > lastID })
        }
    }

    @Test func refusalsAreCountedByReasonAndTheTokenIsNeverLogged() async throws {
        let lines = LogCapture()
        var logger = Logger(label: "refresh-server") { _ in lines }
        logger.logLevel = .trace
        let tokens = Mutex<[String]>([])
        try await run(logger: logger) { server, keys in
            let scoped = try await keys.token(read: ["user:2"])
            let expired = try await keys.token(expires: Date().addingTimeInterval(-1))
            tokens.withLock { $0 = [scoped, expired] }
            _ = try await server.get("/api/feeds/user:1/items")
            _ = try await server.get("/api/feeds/user:1/items", headers: bearer(scoped))
            _ = try await server.get("/api/feeds/user:1/items", headers: [("Cookie", "ptr_token=\(expired)")])
            let created = try await server.post("/api/sessions", #"{"feed":"user:1"}"#, headers: bearer(try await keys.token(read: ["user:1"])))
            _ = try await server.events(try #require(created.json["id"] as? String), headers: bearer(scoped))
            let metrics = try await server.get("/metrics").text
            for (reason, count) in [("missing", 1), ("insufficient_scope", 2), ("expired", 1)] {
                #expect(metrics.contains(#"ptr_auth_refused_total{reason="\#(reason)"} \#(count)"#), "\(reason)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let logged = lines.records.map { $0.message + " " + $0.metadata.values.joined(separator: " ") }
        #expect(logged.contains { $0.contains("insufficient_scope") })
        for token in tokens.withLock({ $0 }) {
            // Not the token, nor its signature alone.
            let signature = String(token.split(separator: ".").last!)
            #expect(!logged.contains { $0.contains(token) || $0.contains(signature) })
        }
    }

    /// Only the first four `ptr_token` cookies are tried (each may cost a signature check),
    /// and the manual says so.
    @Test func onlyTheFirstFourTokenCookiesAreTriedAsTheManualSays() async throws {
        #expect(AccessControl.Carrier.maximumCookies == 4)
        let manual = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("docs/security.md"), encoding: .utf8)
        #expect(manual.replacingOccurrences(of: "\n  ", with: " ").contains("the first four `ptr_token` cookies a request carries"))
        try await run { server, keys in
            let good = try await keys.token("rs", read: ["user:1"])
            let stale = try await keys.token("es", read: ["user:1"], expires: Date().addingTimeInterval(-60))
            func cookies(_ tokens: [String]) -> [(String, String)] {
                [("Cookie", tokens.map { "ptr_token=\($0)" }.joined(separator: "; "))]
            }
            #expect(try await server.get("/api/feeds/user:1/items", headers: cookies(Array(repeating: stale, count: 3) + [good])).status == 200)
            expectRefused(
                try await server.get("/api/feeds/user:1/items", headers: cookies(Array(repeating: stale, count: 4) + [good])), 401, "invalid_token")
        }
    }
}
