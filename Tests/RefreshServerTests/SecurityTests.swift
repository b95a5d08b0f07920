import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

@testable import RefreshHTTP
@testable import RefreshServer

/// What keeps a web page the user visits from using a server on the user's machine: the Host
/// names it answers, the origins and content types it takes state changes from, CORS for the
/// origins an operator lists, the headers of its page, and log lines no client can forge.
@Suite struct SecurityTests {
    // MARK: - Content type (415)

    @Test func aBodyThatIsNotDeclaredJSONIsRefusedOnEveryStateChangingRoute() async throws {
        try await TestServer.run { server in
            let session = try await server.session()
            for (path, body) in [
                ("/api/items", #"{"title":"planted"}"#),
                ("/api/sessions", "{}"),
                ("/api/sessions/\(session)/samples", #"{"seq":1,"y":-10,"phase":"drag"}"#),
            ] {
                for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonp", ""] {
                    let headers = type.isEmpty ? [("Content-Type", "")] : [("Content-Type", type)]
                    let reply = try await server.post(path, body, headers: headers)
                    #expect(reply.status == 415, "\(path) as \(type): \(reply.text)")
                    #expect(reply.json["error"] as? String == "unsupported_media_type", "\(path) as \(type)")
                    #expect(reply.json["message"] is String)
                }
                let json = try await server.post(path, body, headers: [("Content-Type", "application/json; charset=utf-8")])
                #expect([200, 201].contains(json.status), "\(path): \(json.text)")
            }
            let page = try await server.get("/api/items?limit=200")
            #expect(page.status == 200)
            #expect((page.json["items"] as? [[String: Any]])?.filter { $0["title"] as? String == "planted" }.count == 1)
        }
    }

    @Test func aPostWithoutABodyNeedsNoContentType() async throws {
        try await TestServer.run { server in
            let session = try await server.session()
            // A load-more, then a refresh (which cancels it: a load-more during a refresh is 409).
            #expect(try await server.post("/api/sessions/\(session)/load-more").status == 202)
            #expect(try await server.post("/api/sessions/\(session)/refresh").status == 202)
            #expect(try await server.request(.DELETE, "/api/sessions/\(session)/refresh").status == 200)
            #expect(try await server.request(.DELETE, "/api/sessions/\(session)").status == 204)
        }
    }

    @Test func aChunkedBodyIsHeldToTheSameRule() async throws {
        try await TestServer.run { server in
            let port = server.port
            let body = #"{"title":"chunked"}"#
            let chunked = String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n"
            let plain = try await RawHTTP.exchange(
                port: port,
                "POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                    + chunked)
            #expect(plain.hasPrefix("HTTP/1.1 415 "), "\(plain)")
            let json = try await RawHTTP.exchange(
                port: port,
                "POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                    + chunked)
            #expect(json.hasPrefix("HTTP/1.1 201 "), "\(json)")
        }
    }

    // MARK: - Origin (403)

    @Test func aCrossSitePageCannotPublishNorDriveASession() async throws {
        try await TestServer.run { server in
            let session = try await server.session()
            let own = "http://127.0.0.1:\(server.port)"
            let refusals: [[(String, String)]] = [
                [("Origin", "https://attacker.example")],
                [("Origin", "null")],
                [("Origin", "http://127.0.0.1:1")],  // another port of the same host: another origin
                [("Origin", "http://localhost:\(server.port)")],  // same port, another host name
                [("Sec-Fetch-Site", "cross-site")],
                [("Sec-Fetch-Site", "cross-site"), ("Origin", "https://attacker.example")],
            ]
            for headers in refusals {
                for (method, path, body) in [
                    (HTTPMethod.POST, "/api/items", Optional(#"{"title":"planted","id":"demo-1"}"#)),
                    // Spelled with an empty segment, as a router reads it: still the API.
                    (.POST, "/api/items/", #"{"title":"planted","id":"demo-1"}"#),
                    (.POST, "/api/sessions", "{}"),
                    (.POST, "/api/sessions/\(session)/samples", #"{"seq":1,"y":-10,"phase":"drag"}"#),
                    (.POST, "/api/sessions/\(session)/refresh", nil),
                    (.DELETE, "/api/sessions/\(session)", nil),
                ] {
                    let reply = try await server.request(method, path, body: body, headers: headers)
                    #expect(reply.status == 403, "\(method) \(path) with \(headers): \(reply.text)")
                    #expect(reply.json["error"] as? String == "cross_origin", "\(method) \(path) with \(headers)")
                }
            }
            // Nothing changed: the session lives, no item was planted.
            #expect(try await server.get("/api/sessions/\(session)").status == 200)
            let page = try await server.get("/api/items?limit=200")
            #expect((page.json["items"] as? [[String: Any]])?.contains { $0["title"] as? String == "planted" } == false)

            // The page's own origin, a same-origin fetch, and a program that says nothing are served.
            for (seq, headers) in [[("Origin", own)], [("Sec-Fetch-Site", "same-origin"), ("Origin", own)], [("Sec-Fetch-Site", "same-origin")], []]
                .enumerated()
            {
                let reply = try await server.post("/api/sessions/\(session)/samples", #"{"seq":\#(seq + 10),"y":0,"phase":"drag"}"#, headers: headers)
                #expect(reply.status == 200, "\(headers): \(reply.text)")
            }
            // Reading is not a state change: a cross-site GET is answered (without CORS headers).
            let read = try await server.get("/api/items", headers: [("Origin", "https://attacker.example")])
            #expect(read.status == 200)
            #expect(read.headers["Access-Control-Allow-Origin"].isEmpty)
        }
    }

    /// Behind a front that forwards `Host $host` (no port), the page's origin is its https
    /// name with the front's port.
    @Test func behindAFrontTheOriginIsComparedWithoutThePort() async throws {
        let configuration = TestServer.configuration { $0.publicHosts = ["app.example"] }
        try await TestServer.run(configuration) { server in
            let allowed = try await RawHTTP.exchange(
                port: server.port,
                "POST /api/sessions HTTP/1.1\r\nHost: app.example\r\nOrigin: https://app.example:8443\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
            )
            #expect(allowed.hasPrefix("HTTP/1.1 201 "), "\(allowed)")
            let other = try await RawHTTP.exchange(
                port: server.port,
                "POST /api/sessions HTTP/1.1\r\nHost: app.example\r\nOrigin: https://evil.example:8443\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
            )
            #expect(other.hasPrefix("HTTP/1.1 403 "), "\(other)")
        }
    }

    // MARK: - Host (421, 400)

    @Test func aNameTheServerIsNotConfiguredForIsMisdirected() async throws {
        try await TestServer.run { server in
            let session = try await server.session()
            for request in [
                "GET / HTTP/1.1", "GET /app.js HTTP/1.1", "GET /healthz HTTP/1.1", "GET /api/items HTTP/1.1",
                "GET /api/sessions/\(session)/events HTTP/1.1", "GET /nothing HTTP/1.1", "GET / HTTP/1.0",
            ] {
                for host in [
                    "attacker.example", "attacker.example:\(server.port)", "127.0.0.1.attacker.example", "localhost.attacker.example", "10.0.0.1",
                ] {
                    let reply = try await RawHTTP.exchange(port: server.port, "\(request)\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
                    #expect(reply.hasPrefix("HTTP/1.1 421 "), "\(request) for \(host): \(reply.prefix(200))")
                    #expect(reply.contains(#""error":"unknown_host""#), "\(request) for \(host)")
                    #expect(reply.contains("Content-Type: application/json"), "\(request) for \(host)")
                }
            }
            let body = #"{"seq":1,"y":-10,"phase":"drag"}"#
            let sample = try await RawHTTP.exchange(
                port: server.port,
                "POST /api/sessions/\(session)/samples HTTP/1.1\r\nHost: attacker.example\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            )
            #expect(sample.hasPrefix("HTTP/1.1 421 "), "\(sample)")
            // The names it has, whatever the port and the case.
            for host in ["localhost", "LOCALHOST:1", "127.0.0.1", "127.0.0.1:\(server.port)"] {
                let reply = try await RawHTTP.exchange(port: server.port, "GET /healthz HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
                #expect(reply.hasPrefix("HTTP/1.1 200 "), "\(host): \(reply.prefix(200))")
            }
            // HTTP/1.1 must name a host; HTTP/1.0 need not.
            let nameless = try await RawHTTP.exchange(port: server.port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
            #expect(nameless.hasPrefix("HTTP/1.1 400 "), "\(nameless)")
            #expect(nameless.contains(#""error":"bad_host""#))
            let old = try await RawHTTP.exchange(port: server.port, "GET /healthz HTTP/1.0\r\n\r\n")
            #expect(old.hasPrefix("HTTP/1.1 200 "), "\(old)")
        }
    }

    @Test func publicHostsAndAWildcardAddressWidenTheNames() async throws {
        let named = TestServer.configuration { $0.publicHosts = ["app.example", "[::1]"] }
        try await TestServer.run(named) { server in
            for host in ["app.example", "APP.example:443", "[::1]:8080", "localhost"] {
                let reply = try await RawHTTP.exchange(port: server.port, "GET /healthz HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
                #expect(reply.hasPrefix("HTTP/1.1 200 "), "\(host): \(reply.prefix(200))")
            }
            let other = try await RawHTTP.exchange(port: server.port, "GET /healthz HTTP/1.1\r\nHost: www.app.example\r\nConnection: close\r\n\r\n")
            #expect(other.hasPrefix("HTTP/1.1 421 "))
        }
        let wildcard = TestServer.configuration {
            $0.host = "0.0.0.0"
            $0.publishToken = "s3cret"
        }
        try await TestServer.run(wildcard) { server in
            for host in ["10.1.2.3:8080", "192.168.0.7", "[fe80::1]:80", "localhost"] {
                let reply = try await RawHTTP.exchange(port: server.port, "GET /healthz HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
                #expect(reply.hasPrefix("HTTP/1.1 200 "), "\(host): \(reply.prefix(200))")
            }
            for host in ["attacker.example", "1.2.3.4.attacker.example", "0x7f.1"] {
                let reply = try await RawHTTP.exchange(port: server.port, "GET /healthz HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
                #expect(reply.hasPrefix("HTTP/1.1 421 "), "\(host): \(reply.prefix(200))")
            }
        }
    }

    // MARK: - Publishing beyond loopback

    @Test func beyondLoopbackTheServerStartsOnlyWithATokenOrWithPublishingDisabled() async throws {
        var open = TestServer.configuration { $0.host = "0.0.0.0" }
        #expect(throws: ConfigurationError.self) { try open.validate() }
        await #expect(throws: ConfigurationError.self) { _ = try await RefreshApplication.build(configuration: open) }
        let error = await ConfigurationTests.failure(flags: ["host": .string("0.0.0.0")])
        #expect(error?.hasPrefix("--host 0.0.0.0: listening beyond loopback needs --publish-token") == true, "\(error ?? "")")
        #expect(await ConfigurationTests.failure(flags: ["host": .string("0.0.0.0"), "publish-token": .string("t")]) == nil)
        #expect(await ConfigurationTests.failure(flags: ["host": .string("0.0.0.0"), "disable-publishing": .bool(true)]) == nil)
        #expect(await ConfigurationTests.failure(flags: ["host": .string("127.0.0.1")]) == nil)
        open.publishingDisabled = true
        try open.validate()

        let readOnly = TestServer.configuration { $0.publishingDisabled = true }
        try await TestServer.run(readOnly) { server in
            let reply = try await server.post("/api/items", #"{"title":"x"}"#)
            #expect(reply.status == 403)
            #expect(reply.json["error"] as? String == "publishing_disabled")
        }
    }

    @Test func badPublicHostsAndOriginsAreConfigurationErrors() async throws {
        for name in ["http://a.example", "a.example:80", "a.example/x", "a b", ""] {
            #expect(await ConfigurationTests.failure(flags: ["public-host": .strings([name])]) != nil, "\(name)")
        }
        for origin in ["a.example", "https://a.example/path", "ftp://a.example", "https://", "https://a.example:99999", "null", "*"] {
            #expect(await ConfigurationTests.failure(flags: ["cors-origin": .strings([origin])]) != nil, "\(origin)")
        }
        let loaded = try await ConfigurationTests.load(environment: [
            "PTR_PUBLIC_HOST": "a.example,b.example", "PTR_CORS_ORIGIN": "https://a.example/",
        ])
        #expect(loaded.publicHosts == ["a.example", "b.example"])
        #expect(loaded.corsOrigins == ["https://a.example/"])
    }

    // MARK: - CORS

    @Test func listedOriginsGetPreflightsAndCORSHeadersOthersNothing() async throws {
        let configuration = TestServer.configuration { $0.corsOrigins = ["https://app.example", "http://localhost:3000"] }
        try await TestServer.run(configuration) { server in
            let session = try await server.session()
            for (path, methods) in [
                ("/api/items", "GET, HEAD, POST"), ("/api/sessions", "POST"), ("/api/sessions/\(session)", "GET, HEAD, DELETE"),
                ("/api/sessions/\(session)/samples", "POST"), ("/api/sessions/\(session)/events", "GET, HEAD"),
                ("/api/sessions/\(session)/refresh", "POST, DELETE"), ("/api/sessions/\(session)/load-more", "POST"),
            ] {
                let preflight = try await server.request(
                    .OPTIONS, path,
                    headers: [
                        ("Origin", "https://app.example"), ("Access-Control-Request-Method", "POST"),
                        ("Access-Control-Request-Headers", "content-type"),
                    ])
                #expect(preflight.status == 204, "\(path): \(preflight.text)")
                #expect(preflight.headers["Access-Control-Allow-Origin"] == ["https://app.example"], "\(path)")
                #expect(preflight.headers["Access-Control-Allow-Credentials"] == ["true"], "\(path)")
                #expect(preflight.headers["Access-Control-Allow-Methods"] == [methods], "\(path)")
                #expect(preflight.headers["Access-Control-Allow-Headers"].first?.contains("Content-Type") == true, "\(path)")
                #expect(preflight.headers["Vary"].contains("Origin"), "\(path)")
                let stranger = try await server.request(
                    .OPTIONS, path, headers: [("Origin", "https://attacker.example"), ("Access-Control-Request-Method", "POST")])
                #expect(stranger.status == 405, "\(path)")
                #expect(stranger.headers["Access-Control-Allow-Origin"].isEmpty, "\(path)")
                #expect(stranger.headers["Access-Control-Allow-Credentials"].isEmpty, "\(path)")
            }
            // Actual answers: the samples route, a routed one, a refusal, the event stream.
            let listed = [("Origin", "http://localhost:3000")]
            let sample = try await server.post("/api/sessions/\(session)/samples", #"{"seq":1,"y":-10,"phase":"drag"}"#, headers: listed)
            #expect(sample.status == 200)
            #expect(sample.headers["Access-Control-Allow-Origin"] == ["http://localhost:3000"])
            #expect(sample.headers["Access-Control-Allow-Credentials"] == ["true"])
            #expect(sample.headers["Vary"].contains("Origin"))
            let items = try await server.get("/api/items", headers: listed)
            #expect(items.headers["Access-Control-Allow-Origin"] == ["http://localhost:3000"])
            #expect(items.headers["Access-Control-Allow-Credentials"] == ["true"])
            let published = try await server.post("/api/items", #"{"title":"from the app"}"#, headers: listed)
            #expect(published.status == 201)
            let missing = try await server.get("/api/sessions/nobody", headers: listed)
            #expect(missing.status == 404)
            #expect(missing.headers["Access-Control-Allow-Origin"] == ["http://localhost:3000"])
            #expect(missing.headers["Access-Control-Allow-Credentials"] == ["true"])
            let stream = try await server.events(session, headers: listed)
            #expect(stream.status == 200)
            #expect(stream.header("Access-Control-Allow-Origin") == "http://localhost:3000")
            #expect(stream.header("Access-Control-Allow-Credentials") == "true")
            #expect(stream.headers.contains { $0.0.lowercased() == "vary" && $0.1.contains("Origin") })

            let unlisted = [("Origin", "https://attacker.example")]
            let refused = try await server.post("/api/sessions/\(session)/samples", #"{"seq":2,"y":-10,"phase":"drag"}"#, headers: unlisted)
            #expect(refused.status == 403)
            #expect(refused.headers["Access-Control-Allow-Origin"].isEmpty)
            #expect(refused.headers["Access-Control-Allow-Credentials"].isEmpty)
            let read = try await server.get("/api/items", headers: unlisted)
            #expect(read.headers["Access-Control-Allow-Origin"].isEmpty)
            #expect(read.headers["Access-Control-Allow-Credentials"].isEmpty)
            let otherStream = try await server.events(session, headers: unlisted)
            #expect(otherStream.header("Access-Control-Allow-Origin") == nil)
            #expect(otherStream.header("Access-Control-Allow-Credentials") == nil)

            // Without an Origin: no CORS fields, but every answer says it varies by Origin, so a
            // shared cache never gives this copy to a listed origin's page.
            for answer in [
                try await server.get("/app.js"), try await server.get("/api/items"), try await server.get("/api/sessions/nobody"),
                try await server.post("/api/sessions/\(session)/samples", #"{"seq":3,"y":-10,"phase":"drag"}"#),
                try await server.post("/api/sessions/\(session)/samples", "{"),
            ] {
                #expect(answer.headers["Access-Control-Allow-Origin"].isEmpty)
                #expect(answer.headers["Vary"].contains("Origin"), "\(answer.status) \(answer.headers["Vary"])")
            }
            let plainStream = try await server.events(session)
            #expect(plainStream.header("Access-Control-Allow-Origin") == nil)
            #expect(plainStream.headers.contains { $0.0.lowercased() == "vary" && $0.1.contains("Origin") })
        }
    }

    @Test func withoutCORSOriginsNoPreflightIsAnswered() async throws {
        try await TestServer.run { server in
            let preflight = try await server.request(
                .OPTIONS, "/api/items", headers: [("Origin", "https://app.example"), ("Access-Control-Request-Method", "POST")])
            #expect(preflight.status == 405)
            #expect(preflight.headers["Access-Control-Allow-Origin"].isEmpty)
            #expect(preflight.headers["Access-Control-Allow-Credentials"].isEmpty)
            // No origin is ever answered differently: nothing varies by it.
            for answer in [try await server.get("/app.js"), try await server.get("/api/items", headers: [("Origin", "https://app.example")])] {
                #expect(!answer.headers["Vary"].contains("Origin"), "\(answer.headers["Vary"])")
            }
        }
    }

    // MARK: - Headers of the page and of every answer

    @Test func thePageAndEveryAnswerCarryTheSecurityHeaders() async throws {
        try await TestServer.run { server in
            for path in ["/", "/app.js", "/styles.css", "/favicon.svg"] {
                let reply = try await server.get(path)
                #expect(reply.status == 200, "\(path)")
                let policy = reply.headers["Content-Security-Policy"].first ?? ""
                #expect(policy.contains("default-src 'self'"), "\(path)")
                #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe"), "\(path)")
                #expect(policy.contains("frame-ancestors 'none'"), "\(path)")
                #expect(reply.headers["Referrer-Policy"] == ["no-referrer"], "\(path)")
                #expect(reply.headers["X-Content-Type-Options"] == ["nosniff"], "\(path)")
            }
            let session = try await server.session()
            let answers = [
                try await server.get("/healthz"), try await server.get("/api/items"), try await server.get("/nothing"),
                try await server.post("/api/sessions/\(session)/samples", #"{"seq":1,"y":0,"phase":"drag"}"#),
                try await server.post("/api/sessions/\(session)/samples", "{"),
                try await server.request(.PUT, "/api/items"), try await server.get("/metrics"),
            ]
            for reply in answers {
                #expect(reply.headers["X-Content-Type-Options"] == ["nosniff"], "\(reply.status) \(reply.text.prefix(80))")
            }
            let stream = try await server.events(session)
            #expect(stream.header("X-Content-Type-Options") == "nosniff")
        }
    }

    // MARK: - Logs

    @Test func clientTextCannotForgeALogLine() async throws {
        let lines = LogCapture()
        var logger = Logger(label: "refresh-server") { _ in lines }
        logger.logLevel = .debug
        try await TestServer.run(logger: logger) { server in
            let forged = "%0A2026-01-01T00:00:00+0000%20critical%20refresh-server:%20forged%0D%0A"
            _ = try await server.get("/api/items?before=x\(forged)")
            _ = try await server.get("/nothing\(forged)")
            _ = try await server.get("/api/sessions/a\(forged)")
            _ = try await server.get("/api/sessions/a%E2%80%A8b%1B%5B31m/events")
            // Give the routed requests' lines time to be written.
            try await Task.sleep(for: .milliseconds(100))
        }
        let logged = lines.records
        #expect(logged.count >= 4)
        for record in logged {
            let text = record.message + record.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            #expect(
                !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x2028 || (0x7F...0x9F).contains($0.value) },
                "\(text.debugDescription)")
        }
        #expect(logged.contains { $0.message.contains(#"x\n2026-01-01T00:00:00+0000 critical refresh-server: forged\r\n"#) })
    }

    @Test func theTextLogHandlerKeepsEveryLineOne() {
        let lines = LogCapture()
        let logger = Logger(label: "x") { _ in LineSafeLogHandler(lines) }
        logger.notice("one\ntwo\r\nthree\u{2028}four", metadata: ["path": "/a\nb", "list": .array(["c\rd"])])
        let record = lines.records.first
        #expect(record?.message == #"one\ntwo\r\nthree\u{2028}four"#)
        #expect(record?.metadata["path"] == #"/a\nb"#)
        #expect(record?.metadata["list"] == #"["c\\rd"]"# || record?.metadata["list"]?.contains(#"c\r"#) == true)
        #expect("a\\b\u{7}".escapedForLog == #"a\\b\u{7}"#)
        #expect("plain".escapedForLog == "plain")
    }

    // MARK: - The policy as plain values

    @Test func thePolicyReadsHostsOriginsAndTypesByteByByte() {
        var configuration = ServerConfiguration()
        configuration.publicHosts = ["App.Example", "[2001:db8::1]"]
        configuration.corsOrigins = ["https://Tool.Example/"]
        let policy = RequestPolicy(configuration)
        for host in ["localhost", "LocalHost:80", "127.0.0.1", "127.0.0.1:8080", "app.example", "app.example:8443", "[2001:db8::1]:80"] {
            #expect(policy.allowsHost(host), "\(host)")
        }
        for host in ["", ":80", "127.0.0.2", "app.example.evil", "evil.app.example", "[::1]", "localhost.", "127.0.0.1@evil"] {
            #expect(!policy.allowsHost(host), "\(host)")
        }
        for type in ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8", " application/json"] {
            #expect(RequestPolicy.isJSON(type), "\(type)")
        }
        for type in ["", "text/plain", "application/jsonx", "application/x-www-form-urlencoded", "application/ld+json", "json"] {
            #expect(!RequestPolicy.isJSON(type), "\(type)")
        }
        // Own origin: the host of Host, and its port when it names one.
        #expect(policy.allowsOrigin("http://127.0.0.1:8080", fetchSite: "same-origin", host: "127.0.0.1:8080"))
        #expect(policy.allowsOrigin("http://localhost", fetchSite: nil, host: "localhost:80"))
        #expect(policy.allowsOrigin("https://app.example:8443", fetchSite: nil, host: "app.example"))
        #expect(!policy.allowsOrigin("http://127.0.0.1:8081", fetchSite: "same-site", host: "127.0.0.1:8080"))
        #expect(!policy.allowsOrigin("https://localhost", fetchSite: nil, host: "localhost:80"))
        #expect(!policy.allowsOrigin("http://127.0.0.1:8080/", fetchSite: nil, host: "127.0.0.1:8080"))
        #expect(!policy.allowsOrigin("null", fetchSite: nil, host: "localhost"))
        #expect(!policy.allowsOrigin("file://", fetchSite: nil, host: "localhost"))
        #expect(!policy.allowsOrigin("http://localhost:8080", fetchSite: nil, host: nil))
        // Scheme and host in any case; a value shorter than a scheme is read to its end, not past it.
        #expect(policy.allowsOrigin("HTTP://LocalHost", fetchSite: nil, host: "localhost"))
        #expect(policy.allowsOrigin("HTTPS://APP.example:8443", fetchSite: nil, host: "app.example:8443"))
        #expect(!policy.allowsOrigin("htt", fetchSite: nil, host: "localhost"))
        // A listed origin, as browsers write it.
        #expect(policy.allowsOrigin("https://tool.example", fetchSite: "cross-site", host: "localhost"))
        #expect(policy.corsOrigin("https://tool.example") == "https://tool.example")
        #expect(policy.corsOrigin("https://tool.example:444") == nil)
        // No Origin: a program, unless the browser says cross-site.
        #expect(policy.allowsOrigin(nil, fetchSite: nil, host: "localhost"))
        #expect(policy.allowsOrigin(nil, fetchSite: "none", host: "localhost"))
        #expect(!policy.allowsOrigin(nil, fetchSite: "Cross-Site", host: "localhost"))

        var wildcard = ServerConfiguration()
        wildcard.host = "::"
        let any = RequestPolicy(wildcard)
        #expect(any.allowsHost("10.0.0.1") && any.allowsHost("[fe80::1%25eth0]") == false && any.allowsHost("[::ffff:10.0.0.1]:80"))
        #expect(!any.allowsHost("10.0.0") && !any.allowsHost("1.2.3.4.5") && !any.allowsHost("1234.1.1.1"))
    }

    /// `--host localhost` binds a loopback address, which a client may well name by number.
    @Test func listeningOnLocalhostAnswersTheLoopbackAddressesByNumber() {
        var configuration = ServerConfiguration()
        configuration.host = "localhost"
        let policy = RequestPolicy(configuration)
        for host in ["localhost:8080", "127.0.0.1", "127.0.0.1:8080", "[::1]", "[::1]:8080"] {
            #expect(policy.allowsHost(host), "\(host)")
        }
        for host in ["127.0.0.2", "10.0.0.1", "evil.example", "[::2]"] {
            #expect(!policy.allowsHost(host), "\(host)")
        }
    }

    // MARK: - Labels in events and the page

    /// Labels are a session's config, text its client chose: in the event stream each event
    /// stays one `data:` line of JSON, and nothing in it reads as markup.
    @Test func hostileLabelsCannotBreakEventFramingOrInjectMarkup() async throws {
        let hostile = "Pull\n\ndata: {\"forged\":true}\r\nevent: done\n</script><img src=x onerror=alert(1)>\u{2028}\u{2029}end"
        let config = try String(
            decoding: JSONSerialization.data(withJSONObject: [
                "config": ["top": ["labels": ["pull": hostile, "release": hostile, "active": hostile]]]
            ]), as: UTF8.self)
        try await TestServer.run { server in
            let session = try await server.session(config)
            let stream = try await server.events(session)
            _ = try await stream.nextEvent()
            try await server.sample(session, seq: 1, y: -20)
            let state = try await stream.nextEvent()
            #expect(state.event == "state")
            #expect(state.json["label"] as? String == hostile)
            let raw = String(decoding: stream.raw, as: UTF8.self)
            let block = raw.components(separatedBy: "\n\n").first { $0.contains("\"seq\":1") } ?? ""
            let lines = block.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.filter { $0.hasPrefix("data:") }.count == 1, "\(block.debugDescription)")
            #expect(lines.allSatisfy { $0.hasPrefix("id:") || $0.hasPrefix("event:") || $0.hasPrefix("data:") }, "\(block.debugDescription)")
            #expect(
                !block.contains("<") && !block.contains(">") && !block.contains("\r") && !block.contains("\u{2028}") && !block.contains("\u{2029}"))
            // The session's own answer carries the config the same way.
            let answer = try await server.get("/api/sessions/\(session)")
            #expect(!answer.text.contains("</script>") && !answer.text.contains("\u{2028}"))
        }
    }
}

extension TestServer {
    var port: Int { Int(base.split(separator: ":").last!)! }
}

/// Bytes in, bytes out, over a real socket: requests no HTTP client would send (a foreign
/// `Host`, none at all).
enum RawHTTP {
    static func exchange(port: Int, _ request: String) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        return try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                try await channel.executeThenClose { inbound, outbound in
                    try await outbound.write(ByteBuffer(string: request))
                    var reply = ""
                    for try await chunk in inbound {
                        reply += String(buffer: chunk)
                        // One answer is enough: a stream's head, or a whole answer.
                        if let end = reply.range(of: "\r\n\r\n"), reply.contains("text/event-stream") || Self.complete(reply, headEnd: end.upperBound)
                        {
                            break
                        }
                    }
                    return reply
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                throw TestFailure("no complete answer within 30 s")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    private static func complete(_ reply: String, headEnd: String.Index) -> Bool {
        let head = reply[..<headEnd].lowercased()
        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
            let length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces))
        else { return !head.contains("transfer-encoding") }
        return reply[headEnd...].utf8.count >= length
    }
}

/// A log handler that keeps what it is given, as it is given.
final class LogCapture: LogHandler, @unchecked Sendable {
    // `@unchecked`: `records` is only touched inside `lock`.
    struct Record {
        var message: String
        var metadata: [String: String]
    }

    private let lock = Mutex<[Record]>([])
    var records: [Record] { lock.withLock { $0 } }
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).mapValues { "\($0)" }
        lock.withLock { $0.append(Record(message: event.message.description, metadata: fields)) }
    }
}
