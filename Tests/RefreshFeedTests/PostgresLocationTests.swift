import Testing

@testable import RefreshFeed

@Suite struct PostgresLocationTests {
    @Test func readsEveryPartOfAURL() throws {
        let location = try PostgresLocation(url: "postgres://app:s%40cret@db.example:6543/feed?sslmode=require")
        #expect(location == PostgresLocation(user: "app", password: "s@cret", host: "db.example", port: 6543, database: "feed", tls: .require))
        let plain = try PostgresLocation(url: "postgresql://ptr@127.0.0.1/ptr")
        #expect(plain.port == 5432)
        #expect(plain.password == nil)
        #expect(plain.tls == .prefer)
    }

    @Test(arguments: [
        ("postgres://127.0.0.1/db", "no user"),
        ("postgres://u@/db", "no host"),
        ("postgres://u@h", "no database"),
        ("postgres://u@h/db?sslmode=sometimes", "sslmode"),
        ("postgres://u@h/db?pool=3", "'pool'"),
        ("mysql://u@h/db", "postgres://USER"),
    ])
    func aBadURLSaysWhatIsWrongWithoutEchoingIt(url: String, expected: String) {
        #expect {
            _ = try PostgresLocation(url: url)
        } throws: { error in
            "\(error)".contains(expected)
        }
    }
}

extension PostgresLocation {
    init(user: String, password: String?, host: String, port: Int, database: String, tls: TLSMode) {
        self = try! PostgresLocation(url: "postgres://x@h/d")
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.database = database
        self.tls = tls
    }
}
