import Foundation
import NIOSSL
import PostgresNIO

/// A `postgres://` URL taken apart; errors say what is wrong with it, never echo a password.
public struct PostgresLocation: Equatable {
    /// As libpq reads `sslmode`: `prefer` and `require` encrypt without checking the
    /// server's certificate (Debian's PostgreSQL ships a self-signed one), `verify-full`
    /// checks it and the host name.
    enum TLSMode: String {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    var user: String
    var password: String?
    var host: String
    var port: Int
    var database: String
    var tls: TLSMode

    public static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    public init(url text: String) throws {
        guard Self.isPostgresURL(text), let url = URLComponents(string: text) else {
            throw DatabaseLocationError(problem: "database URL must look like postgres://USER[:PASSWORD]@HOST[:PORT]/DB")
        }
        guard let user = url.percentEncodedUser, !user.isEmpty else {
            throw DatabaseLocationError(problem: "database URL names no user (postgres://USER@HOST/DB)")
        }
        guard let host = url.host, !host.isEmpty else { throw DatabaseLocationError(problem: "database URL names no host (postgres://USER@HOST/DB)") }
        let database = String(url.percentEncodedPath.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw DatabaseLocationError(problem: "database URL names no database (postgres://USER@HOST/DB)")
        }
        let port = url.port ?? 5432
        guard (1...65535).contains(port) else { throw DatabaseLocationError(problem: "database URL port \(port) is not 1…65535") }
        var tls = TLSMode.prefer
        for item in url.queryItems ?? [] {
            guard item.name == "sslmode" else {
                throw DatabaseLocationError(problem: "database URL option '\(item.name)' is not known (only sslmode is)")
            }
            guard let mode = item.value.flatMap(TLSMode.init(rawValue:)) else {
                throw DatabaseLocationError(problem: "database URL sslmode must be disable, prefer, require or verify-full")
            }
            tls = mode
        }
        self.user = user.removingPercentEncoding ?? user
        self.password = url.percentEncodedPassword.map { $0.removingPercentEncoding ?? $0 }
        self.host = host
        self.port = port
        self.database = database.removingPercentEncoding ?? database
        self.tls = tls
    }
}

extension PostgresLocation.TLSMode {
    /// The same for a single connection outside the pool.
    var connection: PostgresConnection.Configuration.TLS {
        get throws {
            var unverified = TLSConfiguration.makeClientConfiguration()
            unverified.certificateVerification = .none
            return switch self {
            case .disable: .disable
            case .prefer: .prefer(try NIOSSLContext(configuration: unverified))
            case .require: .require(try NIOSSLContext(configuration: unverified))
            case .verifyFull: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        }
    }

    var client: PostgresClient.Configuration.TLS {
        var unverified = TLSConfiguration.makeClientConfiguration()
        unverified.certificateVerification = .none
        return switch self {
        case .disable: .disable
        case .prefer: .prefer(unverified)
        case .require: .require(unverified)
        case .verifyFull: .require(.makeClientConfiguration())
        }
    }
}
