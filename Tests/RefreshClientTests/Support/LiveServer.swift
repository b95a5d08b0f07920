import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import OpenAPIAsyncHTTPClient
import RefreshClient
import RefreshEngine
import RefreshServer
import RefreshServerTesting
import Synchronization

/// The real server (``ServerUnderTest``) with the client speaking to it over HTTP.
final class LiveServer: Sendable {
    let server: ServerUnderTest
    var port: Int { server.port }
    var url: URL { URL(string: server.base)! }

    private init(_ server: ServerUnderTest) {
        self.server = server
    }

    static func configuration(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
        ServerUnderTest.configuration { configuration in
            // Streams cut by a test come back at once rather than after the browser's second.
            configuration.reconnectDelayMilliseconds = 20
            configuration.shutdownDrainTimeout = .milliseconds(200)
            configuration.lingerTimeout = .milliseconds(100)
            adjust(&configuration)
        }
    }

    static var publicDirectory: String { ServerUnderTest.publicDirectory }

    static func start(_ configuration: ServerConfiguration = configuration()) async throws -> LiveServer {
        LiveServer(try await ServerUnderTest.start(configuration))
    }

    /// Stops it as SIGTERM would, and waits until it has.
    func stop() async throws {
        try await within(60, "the server to stop") { try await self.server.stop() }
    }

    /// Runs a server around `body`, stopped after it whatever happens.
    static func run(
        _ configuration: ServerConfiguration = configuration(), _ body: @Sendable (LiveServer) async throws -> Void
    ) async throws {
        let server = try await start(configuration)
        do {
            try await body(server)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    func client(token: String? = nil) -> RefreshClient {
        RefreshClient(serverURL: url, transport: AsyncHTTPClientTransport(), token: token)
    }

    // MARK: Asking the server directly, beside the client

    /// `GET path`, or `POST path` (with `body` when given), straight to the server.
    func json(_ path: String, post: Bool = false, body: String? = nil) async throws -> (status: Int, json: [String: Any]) {
        let reply = try await server.request(post ? .POST : .GET, path, body: body, timeout: .seconds(10))
        return (reply.status, reply.json)
    }

    /// The session as the server holds it (`GET /api/sessions/{id}`).
    func session(_ id: String) async throws -> [String: Any] {
        let answer = try await json("/api/sessions/\(id)")
        guard answer.status == 200 else { throw TestFailure("GET session \(id): \(answer.status)") }
        return answer.json
    }

    func openStreams(_ id: String) async throws -> Int {
        try await session(id)["openStreams"] as? Int ?? -1
    }

    func stateSeq(_ id: String) async throws -> Int? {
        (try await session(id)["state"] as? [String: Any])?["seq"] as? Int
    }
}

/// Runs `body`, failing with what was awaited if it takes longer than `seconds`: a test
/// never hangs, even on a wait that does not end when cancelled (the body is cancelled and
/// left behind).
func within<T: Sendable>(_ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let answer = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let finish = { @Sendable (result: Result<T, any Error>) in
        answer.withLock { continuation in
            continuation?.resume(with: result)
            continuation = nil
        }
    }
    return try await withCheckedThrowingContinuation { continuation in
        answer.withLock { $0 = continuation }
        let work = Task {
            do { finish(.success(try await body())) } catch { finish(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            work.cancel()
            finish(.failure(TestFailure("timed out after \(seconds) s waiting for \(what)")))
        }
    }
}

/// Polls `condition` until it holds, failing after `seconds`.
func eventually(_ seconds: Double, _ what: String, _ condition: @escaping @Sendable () async throws -> Bool) async throws {
    try await within(seconds, what) {
        while try await !condition() {
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// Reads a session's events in a task of its own and keeps them, so a test can wait for the
/// one it expects with a bound and then look at all of them.
final class EventRecorder: Sendable {
    private struct State {
        var events: [SessionEvent] = []
        var ended: Result<Void, any Error>?
    }

    private let state = Mutex(State())
    private let reader: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(_ session: RemoteSession) {
        let task = Task { [self] in
            do {
                for try await event in session.events {
                    self.state.withLock { $0.events.append(event) }
                }
                self.state.withLock { $0.ended = .success(()) }
            } catch {
                self.state.withLock { $0.ended = .failure(error) }
            }
        }
        reader.withLock { $0 = task }
    }

    var events: [SessionEvent] { state.withLock { $0.events } }
    var ended: Result<Void, any Error>? { state.withLock { $0.ended } }

    /// Waits until an event matches, and answers it.
    @discardableResult
    func next(
        _ what: String, within seconds: Double = 30, after count: Int = 0, where match: @escaping @Sendable (SessionEvent) -> Bool
    ) async throws -> SessionEvent {
        try await within(seconds, what) {
            while true {
                let (events, ended) = self.state.withLock { ($0.events, $0.ended) }
                if let found = events.dropFirst(count).first(where: match) { return found }
                if let ended { throw TestFailure("the events ended (\(ended)) before \(what)") }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// Cancels the reading task, as an app leaving the screen does.
    func cancel() {
        reader.withLock { $0?.cancel() }
    }

    func waitUntilEnded(_ seconds: Double = 30) async throws {
        try await eventually(seconds, "the events to end") { self.ended != nil }
    }
}

extension SessionEvent {
    var items: ItemsUpdate? {
        if case .items(let update) = self { return update }
        return nil
    }

    var progress: ActionProgress? {
        if case .progress(let progress) = self { return progress }
        return nil
    }

    var done: ActionResult? {
        if case .done(let result) = self { return result }
        return nil
    }

    var news: News? {
        if case .news(let news) = self { return news }
        return nil
    }

    var resetReason: String? {
        if case .reset(let reason) = self { return reason }
        return nil
    }

    var gestureState: GestureState? {
        if case .state(let state) = self { return state }
        return nil
    }
}

/// A test's own failure, said in words (every file of the suite names it).
typealias TestFailure = RefreshServerTesting.TestFailure
