import Foundation
import Logging
import PostgresNIO

@testable import RefreshFeed
@testable import RefreshServer

/// A PostgreSQL server for the store tests: `PTR_TEST_POSTGRES` names one
/// (`postgres://USER@HOST:PORT/DB`, a user allowed to create databases; `scripts/test`
/// starts one with `scripts/postgres`). Each test gets a database of its own.
///
/// Without it the PostgreSQL cases are left out, except under CI, where they must run: there
/// a missing server fails them instead of passing unseen.
enum TestPostgres {
    static let url = ProcessInfo.processInfo.environment["PTR_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }

    static var isRequired: Bool { url != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    /// A fresh, empty database's URL.
    static func freshDatabase() async throws -> String {
        guard let url else { throw TestFailure("PTR_TEST_POSTGRES is not set: start one with scripts/postgres start DIR") }
        let name = "ptr_test_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        let location = try PostgresLocation(url: url)
        let configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: .disable)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        defer { Task { try? await connection.close() } }
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        guard var components = URLComponents(string: url) else { throw TestFailure("PTR_TEST_POSTGRES is not a URL") }
        components.path = "/\(name)"
        return components.string ?? url
    }

    /// A feed on a fresh database, its schema migrated: the test's first operation then
    /// does only what it names.
    static func freshFeed(upstreams: [FeedName: UpstreamSet] = [:]) async throws -> PostgresFeed {
        let feed = try feed(url: try await freshDatabase(), upstreams: upstreams)
        _ = try await feed.appliedMigrations()
        return feed
    }

    /// How long an operation of a test's feed may wait for PostgreSQL. The suite runs its
    /// cases side by side, dozens migrating and committing at once on a small machine: a
    /// test decides what the store does, not how fast this machine does it. A test of the
    /// deadline itself gives its own.
    static let operationDeadline: Duration = .seconds(60)

    /// A feed on the database at `url`, as one instance has it, its connection pool running
    /// for the rest of the test run (idle connections close by themselves).
    static func feed(
        url: String, upstreams: [FeedName: UpstreamSet] = [:], operationDeadline: Duration = operationDeadline
    ) throws -> PostgresFeed {
        let feed = try PostgresFeed(url: url, upstreams: upstreams, operationDeadline: operationDeadline, logger: logger)
        Task { await feed.client.run() }
        return feed
    }

    static let logger = Logger(label: "test-postgres")
}
