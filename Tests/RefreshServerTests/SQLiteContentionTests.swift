import Foundation
import GRDB
import Logging
import RefreshServerTesting
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// The SQLite file locked by someone else (a backup, a `sqlite3` shell in `BEGIN
/// EXCLUSIVE`): publishes are answered `503` within the store's deadline from their arrival,
/// however many queue, `/readyz` says the store is not ready, and all is well once the lock
/// is let go.
@Suite struct SQLiteContentionTests {
    @Test func queuedWritesWaitForTheLockAtMostTheDeadlineInAllAndReadyzSaysSo() async throws {
        let path = temporaryDatabase()
        let configuration = TestServer.configuration {
            $0.database = path
            $0.demo = false
        }
        try await TestServer.run(configuration) { server in
            // Ready: answered within its 2 s deadline, once the machine lets it be.
            try await eventually("the store to be ready") { try await server.get("/readyz").status == 200 }
            let holder = try SQLiteLockHolder(path: path)

            let ready = try await server.get("/readyz")
            #expect(ready.status == 503, "\(ready.text)")
            #expect(ready.json["error"] as? String == "store_unavailable")

            let started = ContinuousClock.now
            let answers = try await withThrowingTaskGroup(of: (Int, Duration).self) { group in
                for index in 0..<5 {
                    group.addTask {
                        let reply = try await server.post("/api/items", #"{"id": "queued-\#(index)", "title": "Queued"}"#)
                        return (reply.status, ContinuousClock.now - started)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let slowest = answers.map(\.1).max() ?? .zero
            print("5 publishes behind a held SQLite lock: all answered within \(slowest)")
            #expect(answers.map(\.0) == Array(repeating: 503, count: 5))
            // Each waited at most the deadline from its arrival, not behind the others' waits
            // (the fifth would then have waited five deadlines).
            #expect(slowest < SQLiteFeed.lockDeadline * 2, "the slowest of 5 answered after \(slowest)")

            try holder.release()
            let publish = try await server.post("/api/items", #"{"id": "after", "title": "After"}"#)
            #expect(publish.status == 201, "\(publish.text)")
            try await eventually("the store to be ready again") { try await server.get("/readyz").status == 200 }
            let ids = (try await server.get("/api/items").json["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(ids == ["after"], "no 503 was stored")
        }
    }
}

/// Another connection to the file holding its write lock, as another process would: SQLite
/// locks between connections of one process as between processes.
final class SQLiteLockHolder {
    private let queue: DatabaseQueue

    init(path: String) throws {
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.writeWithoutTransaction { try $0.execute(sql: "BEGIN EXCLUSIVE") }
    }

    func release() throws {
        try queue.writeWithoutTransaction { try $0.execute(sql: "ROLLBACK") }
    }
}

/// `--database` naming what can never hold an SQLite database stops the start with one
/// configuration error that names the setting (and so `refresh-server` exits 78).
@Suite struct DatabaseLocationTests {
    @Test func aFolderOrAnUnwritablePathIsAConfigurationErrorNamingTheSetting() throws {
        let folder = Scratch.path("db").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = (folder as NSString).appendingPathComponent("plain-file")
        _ = FileManager.default.createFile(atPath: file, contents: Data(String(repeating: "not a database ", count: 512).utf8))
        let cases = [
            (folder, "is a folder"),
            (folder + "/", "is a folder"),
            ((file as NSString).appendingPathComponent("refresh.sqlite"), "is a file, not a folder"),
            ("/proc/ptr-no-such/refresh.sqlite", "cannot be created"),
            (file, "cannot be opened as an SQLite database"),
        ]
        for (path, expected) in cases {
            var configuration = ServerConfiguration()
            configuration.database = path
            configuration.demo = false
            let error = #expect(throws: ConfigurationError.self, "\(path)") {
                _ = try RefreshApplication.defaultStore(configuration, metrics: ServerMetrics(), logger: Logger(label: "test"))
            }
            #expect(error?.setting == "database")
            #expect(error?.description.hasPrefix("database \(path): ") == true, "\(String(describing: error))")
            #expect(error?.description.contains(expected) == true, "\(path): \(String(describing: error))")
            #expect(error?.description.contains("\n") == false)
        }
    }
}
