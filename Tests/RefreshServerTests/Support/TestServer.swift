import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import RefreshServerTesting

@testable import RefreshFeed
@testable import RefreshServer

/// A server on an ephemeral port (``ServerUnderTest``), spoken to over real HTTP with
/// AsyncHTTPClient so event streams can be read as they arrive.
struct TestServer {
    let server: ServerUnderTest
    var base: String { server.base }

    /// Leaves bodies as the server sent them (the shared client inflates gzip itself).
    static var client: HTTPClient { ServerUnderTest.client }

    typealias Reply = ServerUnderTest.Reply

    static func configuration(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
        ServerUnderTest.configuration(adjust)
    }

    /// The repository's own `Public/`, so static-file tests serve the real page.
    static var publicDirectory: String { ServerUnderTest.publicDirectory }

    /// Runs the server on a free port around `body`, then stops it gracefully, as SIGTERM would.
    static func run(
        _ configuration: ServerConfiguration = configuration(), feed: (any FeedSource)? = nil,
        logger: Logger = Logger(label: "refresh-server"),
        _ body: @Sendable (TestServer) async throws -> Void
    ) async throws {
        try await ServerUnderTest.run(configuration, feed: feed, logger: logger) { try await body(TestServer(server: $0)) }
    }

    func request(_ method: HTTPMethod, _ path: String, body: String? = nil, headers: [(String, String)] = []) async throws -> Reply {
        try await server.request(method, path, body: body, headers: headers)
    }

    func post(_ path: String, _ body: String? = nil, headers: [(String, String)] = []) async throws -> Reply {
        try await request(.POST, path, body: body, headers: headers)
    }

    func get(_ path: String, headers: [(String, String)] = []) async throws -> Reply {
        try await request(.GET, path, headers: headers)
    }

    /// Creates a session and answers its id.
    func session(_ body: String = "{}") async throws -> String {
        let reply = try await post("/api/sessions", body)
        guard reply.status == 201, let id = reply.json["id"] as? String else {
            throw TestFailure("session not created: \(reply.status) \(reply.text)")
        }
        return id
    }

    /// A new session with its event stream open and past the opening snapshot.
    func watchedSession(_ body: String = "{}") async throws -> (id: String, stream: EventReader) {
        let id = try await session(body)
        let stream = try await events(id)
        _ = try await stream.nextEvent()
        return (id, stream)
    }

    @discardableResult
    func sample(
        _ session: String, seq: Int, y: Double, phase: String = "drag", content: Double? = nil, viewport: Double? = nil
    ) async throws -> [String: Any] {
        var fields = ["\"seq\":\(seq)", "\"y\":\(y)", "\"phase\":\"\(phase)\""]
        if let content { fields.append("\"contentHeight\":\(content)") }
        if let viewport { fields.append("\"viewportHeight\":\(viewport)") }
        let reply = try await post("/api/sessions/\(session)/samples", "{\(fields.joined(separator: ","))}")
        guard reply.status == 200 else { throw TestFailure("sample refused: \(reply.status) \(reply.text)") }
        return reply.json["state"] as? [String: Any] ?? [:]
    }

    func state(_ session: String) async throws -> [String: Any] {
        try await get("/api/sessions/\(session)").json
    }

    /// The event stream at `path` (with its query), as it opens.
    func stream(_ path: String, headers: [(String, String)] = []) async throws -> EventReader {
        var request = HTTPClientRequest(url: "\(base)\(path)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await TestServer.client.execute(request, timeout: .seconds(30))
        return EventReader(response: response)
    }

    func events(_ session: String, lastEventID: UInt64? = nil, headers: [(String, String)] = []) async throws -> EventReader {
        var request = HTTPClientRequest(url: "\(base)/api/sessions/\(session)/events")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: String(lastEventID)) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await TestServer.client.execute(request, timeout: .seconds(30))
        return EventReader(response: response)
    }
}

/// A test's own failure, said in words (every file of the suite names it).
typealias TestFailure = RefreshServerTesting.TestFailure
