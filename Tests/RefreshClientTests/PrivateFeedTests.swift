import Foundation
import JWTKit
import OpenAPIAsyncHTTPClient
import RefreshClient
import RefreshServerTesting
import Synchronization
import Testing

/// A feed that is not public, on a server that verifies tokens with an HMAC key file.
@Suite struct PrivateFeedTests {
    static let secret = "a-secret-of-at-least-thirty-two-bytes-for-hs256"

    struct Claims: JWTPayload {
        struct Rights: Codable, Sendable {
            var read: [String]
        }

        var exp: ExpirationClaim
        var sub: SubjectClaim
        var ptr: Rights

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// A token of the key file `hs.key` (its `kid` is the file's name) that may read `feeds`.
    static func token(reading feeds: [String], lasting seconds: Double = 600) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "hs")
        let claims = Claims(
            exp: ExpirationClaim(value: Date().addingTimeInterval(seconds)), sub: SubjectClaim(value: "user-7"), ptr: .init(read: feeds))
        return try await keys.sign(claims, kid: JWKIdentifier(string: "hs"))
    }

    /// A server that verifies tokens with the key file `hs.key` in a folder of its own.
    static func withKeyedServer(_ body: @Sendable (LiveServer) async throws -> Void) async throws {
        let directory = Scratch.path("client-keys")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("hs.key")
        try (Self.secret + "\n").write(to: keyFile, atomically: true, encoding: .utf8)
        try await LiveServer.run(LiveServer.configuration { $0.authKeys = [keyFile.path] }, body)
    }

    @Test func aTokenOpensAPrivateFeedAndItsAbsenceOrWantDoesNot() async throws {
        try await Self.withKeyedServer { server in
            let allowed = try await Self.token(reading: ["user:7"])
            let session = try await server.client(token: allowed).session(feed: "user:7")
            #expect(session.feed == "user:7")
            let events = EventRecorder(session)
            let first = try await events.next("the first page") { $0.items != nil }.items!
            #expect(first.items.isEmpty && first.head == 0)
            try await eventually(30, "the stream to open") { try await server.openStreams(await session.id) == 1 }
            events.cancel()
            await session.close()

            let anonymous = await #expect(throws: RefreshError.self) {
                _ = try await server.client().session(feed: "user:7")
            }
            #expect(anonymous?.status == 401 && anonymous?.isAccessRefused == true && anonymous?.isTransient == false)

            let other = try await Self.token(reading: ["user:8"])
            let refused = await #expect(throws: RefreshError.self) {
                _ = try await server.client(token: other).session(feed: "user:7")
            }
            #expect(refused?.status == 403 && refused?.isAccessRefused == true)
            #expect(refused?.code == "insufficient_scope")

            // The public feed needs no token.
            let open = try await server.client().session(feed: "main")
            await open.close()
        }
    }

    /// The provider is asked for every request: a renewed token reopens a dropped stream, and
    /// one that lost the right to the feed ends the events with the refusal, for good.
    @Test func aStreamReopensWithTheProvidersTokenAndEndsWhenItLosesTheRight() async throws {
        try await Self.withKeyedServer { server in
            try await LiveSessionTests.withProxy(to: server) { proxy in
                let first = try await Self.token(reading: ["user:7"])
                let current = Mutex(first)
                let client = RefreshClient(
                    serverURL: proxy.url, transport: AsyncHTTPClientTransport(), tokenProvider: { current.withLock { $0 } })
                let session = try await client.session(feed: "user:7")
                let id = await session.id
                let events = EventRecorder(session)
                _ = try await events.next("the first page") { $0.items != nil }
                try await eventually(30, "the stream to open") { try await server.openStreams(id) == 1 }

                let renewed = try await Self.token(reading: ["user:7", "user:9"], lasting: 900)
                #expect(renewed != first)
                current.withLock { $0 = renewed }
                #expect(proxy.cutStreams() == 1)
                try await eventually(30, "the stream to reopen") { proxy.streams.count == 2 }
                try await eventually(30, "the stream to be open") { try await server.openStreams(id) == 1 }
                let reopened = try #require(proxy.exchanges.last { $0.isEventStream })
                #expect(String(decoding: reopened.request, as: UTF8.self).contains("Bearer \(renewed)\r\n"))
                #expect(events.ended == nil)

                await session.post(LiveSessionTests.drag(-30))
                try await events.next("a state on the reopened stream") { $0.gestureState?.phase == .pulling }

                let elsewhere = try await Self.token(reading: ["user:8"])
                current.withLock { $0 = elsewhere }
                #expect(proxy.cutStreams() == 1)
                try await events.waitUntilEnded(5)
                guard case .failure(let error as RefreshError) = events.ended else {
                    Issue.record("the events ended with \(String(describing: events.ended)), not a refusal")
                    return
                }
                #expect(error.status == 403 && error.isAccessRefused)
                await session.close()
            }
        }
    }
}
