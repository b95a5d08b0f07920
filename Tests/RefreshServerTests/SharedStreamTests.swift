import Foundation
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// One event stream for several sessions of one client (`GET /api/events`), as the tabs of a
/// browser share it: each session's events follow an `event: session` naming it, with the
/// session's own ids; each resumes from its own last id; one ends while the others go on;
/// each is checked as its own stream would be; bad targets are refused whole.
@Suite struct SharedStreamTests {
    /// The events of a shared stream read until `until` holds, each with the session the
    /// `event: session` before it named.
    final class Shared: @unchecked Sendable {
        let reader: EventReader
        private(set) var events: [(session: String, event: SSE)] = []
        private var current = ""

        init(_ reader: EventReader) { self.reader = reader }

        @discardableResult
        func read(until done: ([(session: String, event: SSE)]) -> Bool) async throws -> [(session: String, event: SSE)] {
            while !done(events) {
                let event = try await reader.nextEvent()
                if event.event == "session" {
                    current = event.data
                } else {
                    events.append((current, event))
                }
            }
            return events
        }

        /// The newest id received of `session`.
        func lastID(of session: String) -> UInt64? {
            events.last { $0.session == session && $0.event.id != nil }?.event.id
        }
    }

    @Test func twoSessionsShareAStreamEachNamedAndEachWithItsOwnIDs() async throws {
        try await TestServer.run(TestServer.configuration()) { server in
            let a = try await server.session()
            let b = try await server.session()
            let reader = try await server.stream("/api/events?session=\(a)&session=\(b)")
            #expect(reader.status == 200)
            #expect(reader.header("content-type")?.hasPrefix("text/event-stream") == true)
            let shared = Shared(reader)
            // Each session's snapshot, named.
            try await shared.read { events in Set(events.map(\.session)) == [a, b] }
            #expect(shared.events.map(\.session) == [a, b])
            #expect(shared.events.allSatisfy { $0.event.event == "state" })

            _ = try await server.sample(b, seq: 1, y: 30)
            _ = try await server.sample(a, seq: 1, y: 50)
            let seen = try await shared.read { events in events.count >= 4 }
            #expect(seen[2].session == b && seen[2].event.json["seq"] as? Int == 1)
            #expect(seen[3].session == a && seen[3].event.json["seq"] as? Int == 1)
            // Ids are each session's own, rising per session.
            #expect(seen[2].event.id! > seen[1].event.id!)
            #expect(seen[3].event.id! > seen[0].event.id!)
        }
    }

    /// A reader that comes back with each session's last id gets what each missed, and no
    /// more: nothing lost, nothing twice.
    @Test func eachSessionResumesFromItsOwnLastID() async throws {
        try await TestServer.run(TestServer.configuration()) { server in
            let a = try await server.session()
            let b = try await server.session()
            let first = Shared(try await server.stream("/api/events?session=\(a)&session=\(b)"))
            try await first.read { Set($0.map(\.session)) == [a, b] }
            _ = try await server.sample(a, seq: 1, y: 20)
            try await first.read { $0.count >= 3 }
            let lastA = try #require(first.lastID(of: a))
            let lastB = try #require(first.lastID(of: b))

            // While the reader is away (its first stream stays open, unread, as a lost
            // connection can linger): a refresh of b (its items and done), a sample of a.
            _ = try await server.post("/api/sessions/\(b)/refresh")
            _ = try await server.sample(a, seq: 2, y: 40)
            try await Task.sleep(for: .milliseconds(300))

            let again = Shared(try await server.stream("/api/events?session=\(a):\(lastA)&session=\(b):\(lastB)"))
            let events = try await again.read { events in
                events.contains { $0.session == b && $0.event.event == "done" } && events.contains { $0.session == a }
            }
            #expect(events.allSatisfy { ($0.session == a ? lastA : lastB) < ($0.event.id ?? 0) }, "nothing it had seen comes again")
            #expect(events.filter { $0.session == a }.map(\.event.event) == ["state"])
            #expect(events.filter { $0.session == b && $0.event.event == "done" }.count == 1)
            #expect(!events.contains { $0.event.event == "reset" })
        }
    }

    @Test func aSessionThatEndsLeavesAndTheOthersGoOn() async throws {
        try await TestServer.run(TestServer.configuration()) { server in
            let a = try await server.session()
            let b = try await server.session()
            let shared = Shared(try await server.stream("/api/events?session=\(a)&session=\(b)"))
            try await shared.read { Set($0.map(\.session)) == [a, b] }
            #expect(try await server.request(.DELETE, "/api/sessions/\(a)").status == 204)
            let ended = try await shared.read { $0.contains { $0.event.event == "ended" } }
            #expect(ended.last?.session == a)
            #expect(ended.last?.event.json["session"] as? String == a)
            _ = try await server.sample(b, seq: 1, y: 25)
            let after = try await shared.read { $0.count > ended.count }
            #expect(after.last?.session == b && after.last?.event.event == "state")
            // The last one ending ends the stream.
            #expect(try await server.request(.DELETE, "/api/sessions/\(b)").status == 204)
            #expect(try await shared.reader.ends(within: 30))
        }
    }

    @Test(arguments: [
        ("", 400, "missing_field"),
        ("?session=", 400, "invalid_value"),
        ("?session=SAME&session=SAME", 400, "invalid_value"),
        ("?session=SAME:notanumber", 400, "invalid_value"),
        ("?session=SAME&session=nobody", 404, "session_not_found"),
    ])
    func badTargetsAreRefusedWhole(query: String, status: Int, code: String) async throws {
        try await TestServer.run(TestServer.configuration()) { server in
            let id = try await server.session()
            let reply = try await server.get("/api/events" + query.replacingOccurrences(of: "SAME", with: id))
            #expect(reply.status == status, "\(reply.text)")
            #expect(reply.json["error"] as? String == code)
        }
    }

    @Test func atMostThirtyTwoSessionsShareAStream() async throws {
        try await TestServer.run(TestServer.configuration()) { server in
            var ids: [String] = []
            for _ in 0..<33 { ids.append(try await server.session()) }
            let reply = try await server.get("/api/events?" + ids.map { "session=\($0)" }.joined(separator: "&"))
            #expect(reply.status == 400 && reply.json["error"] as? String == "invalid_value", "\(reply.text)")
            let fine = try await server.stream("/api/events?" + ids.prefix(32).map { "session=\($0)" }.joined(separator: "&"))
            #expect(fine.status == 200)
            let shared = Shared(fine)
            try await shared.read { Set($0.map(\.session)).count == 32 }
        }
    }

    /// Each session is checked as its own stream would be; one of another owner is refused as
    /// one that does not exist, naming it, and nothing of either is sent.
    @Test func aSessionOfAnotherOwnerIsRefusedAsOneThatDoesNotExist() async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        try await TestServer.run(TestServer.configuration { $0.authKeys = keys.files }) { server in
            let alice = try await keys.token("hs", sub: "alice", read: ["user:1"])
            let mallory = try await keys.token("hs", sub: "mallory", read: ["*"])
            func session(_ token: String) async throws -> String {
                let reply = try await server.post("/api/sessions", #"{"feed":"user:1"}"#, headers: [("Authorization", "Bearer \(token)")])
                return try #require(reply.json["id"] as? String, "\(reply.text)")
            }
            let hers = try await session(alice)
            let his = try await session(mallory)
            let foreign = try await server.get("/api/events?session=\(his)&session=\(hers)", headers: [("Authorization", "Bearer \(mallory)")])
            let unknown = try await server.get(
                "/api/events?session=\(his)&session=0123456789abcdef", headers: [("Authorization", "Bearer \(mallory)")])
            #expect(foreign.status == 404 && unknown.status == 404)
            #expect(foreign.json["error"] as? String == "session_not_found")
            #expect(
                foreign.text.replacingOccurrences(of: hers, with: "ID") == unknown.text.replacingOccurrences(of: "0123456789abcdef", with: "ID"),
                "the same answer for another owner's session and for none")
            #expect(try await server.get("/api/events?session=\(his)").status == 401, "a token's session needs the token")
            let own = try await server.stream("/api/events?session=\(hers)", headers: [("Authorization", "Bearer \(alice)")])
            #expect(own.status == 200)
        }
    }

    /// A shared stream opened with a token ends cleanly by the token's expiry, even after the
    /// session it was opened with first has left it.
    @Test func aSharedStreamEndsByItsTokensExpiryWhicheverSessionLeft() async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        try await TestServer.run(TestServer.configuration { $0.authKeys = keys.files }) { server in
            // Ten seconds: time enough to make the sessions and open the stream on a busy machine.
            let token = try await keys.token("hs", sub: "alice", read: ["user:1"], expires: Date().addingTimeInterval(10))
            var ids: [String] = []
            for _ in 0..<2 {
                let reply = try await server.post("/api/sessions", #"{"feed":"user:1"}"#, headers: [("Authorization", "Bearer \(token)")])
                ids.append(try #require(reply.json["id"] as? String, "\(reply.text)"))
            }
            let shared = Shared(
                try await server.stream("/api/events?session=\(ids[0])&session=\(ids[1])", headers: [("Authorization", "Bearer \(token)")]))
            #expect(shared.reader.status == 200)
            try await shared.read { Set($0.map(\.session)) == Set(ids) }
            let started = ContinuousClock.now
            #expect(try await server.request(.DELETE, "/api/sessions/\(ids[0])", headers: [("Authorization", "Bearer \(token)")]).status == 204)
            #expect(try await shared.reader.ends(within: 30))
            #expect(ContinuousClock.now - started < .seconds(15), "closed by the token's expiry in 10 s")
        }
    }

    /// A shared stream counts once against the limits on open streams.
    @Test func aSharedStreamCountsOnceAgainstTheStreamLimits() async throws {
        try await TestServer.run(TestServer.configuration { $0.maxStreamsPerClient = 1 }) { server in
            let a = try await server.session()
            let b = try await server.session()
            let shared = Shared(try await server.stream("/api/events?session=\(a)&session=\(b)"))
            try await shared.read { Set($0.map(\.session)) == [a, b] }
            // A second stream is told to come back later, as any stream past the limit is.
            let second = try await server.stream("/api/events?session=\(a)")
            #expect(second.status == 200)
            let told = try await second.next()
            #expect(told.retry != nil || told.comment != nil)
            #expect(try await second.ends(within: 30))
        }
    }

    /// Each member's session ticks, but the connection needs one keepalive comment when it
    /// is quiet, and no name before it: a comment is nothing of any session's.
    @Test func aQuietSharedStreamSendsBareKeepalivesNotOneNamedPerSession() async throws {
        try await TestServer.run(TestServer.configuration { $0.keepaliveInterval = .seconds(1) }) { server in
            var sessions: [String] = []
            for _ in 0..<4 { sessions.append(try await server.session()) }
            let reader = try await server.stream("/api/events?" + sessions.map { "session=\($0)" }.joined(separator: "&"))
            let shared = Shared(reader)
            try await shared.read { Set($0.map(\.session)) == Set(sessions) }
            var blocks: [SSE] = []
            while blocks.filter({ $0.comment != nil }).count < 3 { blocks.append(try await reader.next()) }
            #expect(blocks.allSatisfy { $0.comment != nil }, "\(blocks)")
        }
    }
}
