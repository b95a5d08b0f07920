import Foundation
import Testing

@testable import RefreshServer

/// Every bad input of the contract gets its 4xx JSON error and leaves the session as it was.
@Suite struct BadInputTests {
    static let samples: [(body: String, status: Int, code: String)] = [
        ("{", 400, "malformed_json"),
        ("", 400, "malformed_json"),
        ("[1,2]", 400, "invalid_type"),
        (#"{"seq":"one","y":0}"#, 400, "invalid_type"),
        (#"{"seq":1}"#, 400, "missing_field"),
        (#"{"seq":1.5,"y":0}"#, 400, "invalid_value"),
        (#"{"seq":1,"y":0,"phase":"fling"}"#, 400, "invalid_value"),
        (#"{"seq":1,"y":"-90"}"#, 400, "invalid_type"),
        (#"{"samples":{"seq":1}}"#, 400, "invalid_type"),
        (#"{"seq":1,"y":0,"y":-90}"#, 400, "malformed_json"),
        (#"{"samples":[{"seq":1,"y":-90,"seq":9}]}"#, 400, "malformed_json"),
        (#"{"seq":1,"y":NaN}"#, 422, "out_of_range"),
        (#"{"seq":1,"y":Infinity}"#, 422, "out_of_range"),
        (#"{"seq":1,"y":-Infinity}"#, 422, "out_of_range"),
        (#"{"seq":1,"y":1e999}"#, 422, "out_of_range"),
        (#"{"seq":1,"y":10000001}"#, 422, "out_of_range"),
        (#"{"seq":1,"y":0,"contentHeight":-1}"#, 422, "out_of_range"),
        (#"{"seq":1,"y":0,"viewportHeight":-1}"#, 422, "out_of_range"),
        (#"{"seq":-4,"y":0}"#, 422, "out_of_range"),
        (#"{"samples":[{"seq":5,"y":-90},{"seq":6,"y":-90,"phase":"release"},{"seq":7,"y":NaN}]}"#, 422, "out_of_range"),
    ]

    @Test func badSamplesAreRefusedAndChangeNothing() async throws {
        try await TestServer.run { server in
            let id = try await server.session()
            try await server.sample(id, seq: 1, y: -40)
            let before = try await server.state(id)["state"] as? [String: Any]
            for (body, status, code) in Self.samples {
                let reply = try await server.post("/api/sessions/\(id)/samples", body)
                #expect(reply.status == status, "\(body): \(reply.text)")
                #expect(reply.json["error"] as? String == code, "\(body): \(reply.text)")
                #expect((reply.json["message"] as? String)?.isEmpty == false)
                #expect(reply.headers["Content-Type"].first == "application/json")
            }
            let after = try await server.state(id)["state"] as? [String: Any]
            #expect(NSDictionary(dictionary: before ?? [:]) == NSDictionary(dictionary: after ?? [:]))
            #expect(try await server.sample(id, seq: 2, y: -50)["seq"] as? Int == 2, "no seq was consumed")
        }
    }

    @Test func anOldSeqIsIgnoredNotAnError() async throws {
        try await TestServer.run { server in
            let id = try await server.session()
            try await server.sample(id, seq: 10, y: -40)
            let state = try await server.sample(id, seq: 9, y: -95, phase: "release")
            #expect(state["seq"] as? Int == 10)
            #expect(state["phase"] as? String == "pulling")
            #expect(try await server.state(id)["ignoredSamples"] as? Int == 1)
        }
    }

    @Test func unknownSessionsAre404() async throws {
        try await TestServer.run { server in
            for (method, path) in [("POST", "samples"), ("POST", "refresh"), ("DELETE", "refresh"), ("POST", "load-more"), ("GET", "events")] {
                let reply = try await server.request(.init(rawValue: method), "/api/sessions/nope/\(path)", body: #"{"seq":1,"y":0}"#)
                #expect(reply.status == 404, "\(method) \(path)")
                #expect(reply.json["error"] as? String == "session_not_found")
            }
        }
    }

    @Test func aBodyOverTheLimitIs413() async throws {
        var configuration = TestServer.configuration()
        configuration.maxBodyBytes = 1024
        try await TestServer.run(configuration) { server in
            let id = try await server.session()
            let padding = String(repeating: " ", count: 2000)
            let reply = try await server.post("/api/sessions/\(id)/samples", #"{"seq":1,"y":0}"# + padding)
            #expect(reply.status == 413)
            #expect(reply.json["error"] as? String == "body_too_large")
        }
    }

    @Test func tooManySamplesInOneRequestIs429() async throws {
        var configuration = TestServer.configuration()
        configuration.maxSamplesPerRequest = 4
        try await TestServer.run(configuration) { server in
            let id = try await server.session()
            let samples = (1...5).map { #"{"seq":\#($0),"y":0}"# }.joined(separator: ",")
            let reply = try await server.post("/api/sessions/\(id)/samples", #"{"samples":[\#(samples)]}"#)
            #expect(reply.status == 429)
            #expect(reply.headers["Retry-After"].first == "1")
            #expect(try await server.state(id)["state"].flatMap { ($0 as? [String: Any])?["seq"] } is NSNull)
        }
    }

    @Test func samplesTooFastAre429WithRetryAfter() async throws {
        var configuration = TestServer.configuration()
        // One a second: the bucket must refuse one of ten posts in a row, however slowly a
        // loaded machine sends them (at five a second, ten posts of 200 ms each all passed).
        configuration.maxSamplesPerSecond = 1
        configuration.maxSamplesPerRequest = 1
        try await TestServer.run(configuration) { server in
            let id = try await server.session()
            var refused: TestServer.Reply?
            for seq in 1...10 where refused == nil {
                let reply = try await server.post("/api/sessions/\(id)/samples", #"{"seq":\#(seq),"y":-1}"#)
                if reply.status != 200 { refused = reply }
            }
            let reply = try #require(refused)
            #expect(reply.status == 429)
            #expect(reply.json["error"] as? String == "rate_limited")
            #expect(Int(reply.headers["Retry-After"].first ?? "") ?? 0 >= 1)
        }
    }

    @Test func tooManySessionsIs503WithRetryAfter() async throws {
        var configuration = TestServer.configuration()
        configuration.maxSessions = 2
        try await TestServer.run(configuration) { server in
            _ = try await server.session()
            _ = try await server.session()
            let reply = try await server.post("/api/sessions", "{}")
            #expect(reply.status == 503)
            #expect(reply.json["error"] as? String == "too_many_sessions")
            #expect(reply.headers["Retry-After"].first != nil)
        }
    }

    @Test(arguments: [
        (#"{"preset":"android"}"#, 400),
        (#"{"preset":3}"#, 400),
        (#"{"config":{"top":{"threshold":-5}}}"#, 422),
        (#"{"config":{"top":{"heldOffset":900}}}"#, 422),
        (#"{"config":{"top":{"treshold":90}}}"#, 400),
        (#"{"config":{"top":{"trigger":"swipe"}}}"#, 400),
        (#"{"config":"fast"}"#, 400),
    ])
    func badSessionRequests(body: String, status: Int) async throws {
        try await TestServer.run { server in
            let reply = try await server.post("/api/sessions", body)
            #expect(reply.status == status, "\(body): \(reply.text)")
            #expect(reply.json["error"] is String)
        }
    }

    @Test func presetsAndOverridesAreEchoed() async throws {
        try await TestServer.run { server in
            let reply = try await server.post("/api/sessions", #"{"preset":"ios15","config":{"top":{"labels":{"pull":"Tirez"}}}}"#)
            #expect(reply.status == 201)
            let top = (reply.json["config"] as? [String: Any])?["top"] as? [String: Any]
            #expect(top?["threshold"] as? Double == 145)
            #expect(top?["heldOffset"] as? Double == 44)
            #expect(top?["trigger"] as? String == "cross")
            #expect((top?["labels"] as? [String: Any])?["pull"] as? String == "Tirez")
            #expect((reply.json["events"] as? String)?.hasSuffix("/events") == true)
        }
    }

    @Test func badItemsAreRefused() async throws {
        try await TestServer.run { server in
            for body in [
                #"{"summary":"no title"}"#, #"{"title":""}"#, #"{"title":"x","link":"javascript:alert(1)"}"#,
                #"{"title":"x","published":"yesterday"}"#, #"{"items":[]}"#, #"{"title":7}"#, #"{"title":"x","colour":"red"}"#,
            ] {
                let reply = try await server.post("/api/items", body)
                #expect(reply.status == 400, "\(body): \(reply.text)")
            }
            #expect(try await server.get("/api/items?limit=0").status == 400)
            #expect(try await server.get("/api/items?limit=100000").status == 422)
            #expect(try await server.get("/api/items?before=missing").status == 404)
        }
    }

    @Test func publishingNeedsTheTokenWhenOneIsSet() async throws {
        var configuration = TestServer.configuration()
        configuration.publishToken = "s3cret"
        try await TestServer.run(configuration) { server in
            let anonymous = try await server.post("/api/items", #"{"title":"x"}"#)
            #expect(anonymous.status == 401)
            #expect(anonymous.json["error"] as? String == "unauthorized")
            let wrong = try await server.post("/api/items", #"{"title":"x"}"#, headers: [("Authorization", "Bearer wrong")])
            #expect(wrong.status == 401)
            let right = try await server.post("/api/items", #"{"title":"x"}"#, headers: [("Authorization", "Bearer s3cret")])
            #expect(right.status == 201)
        }
    }

    /// A front on this host forwards everyone's requests from loopback: without a token, a
    /// publish it forwards for another host is refused, whatever the path's spelling.
    @Test func aPublishForwardedForAnotherHostNeedsTheToken() async throws {
        let configuration = TestServer.configuration { $0.trustedProxies = ["127.0.0.1"] }
        try await TestServer.run(configuration) { server in
            for path in ["/api/items", "/api/items/"] {
                let forwarded = try await server.post(path, #"{"title":"x"}"#, headers: [("X-Forwarded-For", "203.0.113.9")])
                #expect(forwarded.status == 403, "\(path)")
                #expect(forwarded.json["error"] as? String == "publishing_disabled")
            }
            let local = try await server.post("/api/items/", #"{"title":"x"}"#, headers: [("X-Forwarded-For", "127.0.0.1")])
            #expect(local.status == 201)
        }
    }

    @Test func publishingIsClosedBeyondLoopbackWithoutAToken() throws {
        var configuration = ServerConfiguration()
        configuration.host = "0.0.0.0"
        #expect(!configuration.listensOnLoopbackOnly)
        configuration.host = "127.0.0.1"
        #expect(configuration.listensOnLoopbackOnly)
    }
}
