import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// The rules of access as a table: every action on public and private feeds, with no
/// credentials, the static publish token, and tokens with and without the right.
@Suite struct FeedAccessTests {
    private static func feed(_ name: String) -> FeedName { FeedName(name)! }

    @Test(arguments: [
        ("main", "main", true), ("main", "mainly", false), ("user:42", "user:42", true), ("user:42", "user:421", false),
        ("user:42:*", "user:42:inbox", true), ("user:42:*", "user:42:", true), ("user:42:*", "user:43:inbox", false),
        ("user:42:*", "user:42", false), ("*", "anything.at@all", true), ("team.*", "team.eng", true), ("team.*", "teams", false),
        ("Team.*", "team.eng", false),
    ])
    func aPatternNamesItsFeeds(pattern: String, feed: String, matches: Bool) throws {
        #expect(try FeedPattern(pattern).matches(Self.feed(feed)) == matches)
    }

    @Test(arguments: ["", "**", "*a", "a*b", "-x", "-*", "user 42", "caf\u{E9}", "a/b*", String(repeating: "a", count: 129), "\u{0}*"])
    func aTextThatIsNoPatternIsRefused(text: String) {
        #expect(throws: FeedPattern.Invalid.self) { try FeedPattern(text) }
    }

    @Test func theLongestNameIsAPatternAndAPrefix() throws {
        let name = String(repeating: "a", count: 128)
        #expect(try FeedPattern(name).matches(Self.feed(name)))
        #expect(try FeedPattern(name + "*").matches(Self.feed(name)))
    }

    @Test func aClaimWithOneBadPatternOrTooManyGivesNoRights() throws {
        #expect(throws: FeedRights.Invalid.pattern(FeedPattern.Invalid(pattern: "a*b"))) {
            try FeedRights(read: ["main", "a*b"], publish: [])
        }
        let many = (0...FeedRights.maximumPatterns).map { "f\($0)" }
        #expect(throws: FeedRights.Invalid.tooManyPatterns) { try FeedRights(read: many, publish: []) }
        let rights = try FeedRights(read: ["user:42:*"], publish: ["user:42:outbox"])
        #expect(rights.read.map(\.description) == ["user:42:*"])
        #expect(rights.publish.map(\.description) == ["user:42:outbox"])
    }

    typealias Row = (action: FeedAccess.Action, feed: String, credentials: FeedAccess.Credentials, decision: FeedAccess.Decision)

    static let inbox = try! FeedRights(read: ["user:42:*"], publish: ["user:42:outbox"])
    static let rows: [Row] = [
        // Public feeds: anyone reads; publishing still needs a right.
        (.read, "main", .none, .allowed),
        (.read, "news.local", .none, .allowed),
        (.publish, "main", .none, .tokenNeeded),
        (.publish, "main", .token(inbox), .insufficientScope),
        (.publish, "main", .publishToken, .allowed),
        // Private feeds: a token with the right, and nothing else.
        (.read, "user:42:inbox", .none, .tokenNeeded),
        (.read, "user:42:inbox", .token(inbox), .allowed),
        (.read, "user:43:inbox", .token(inbox), .insufficientScope),
        (.read, "user:42:inbox", .token(FeedRights()), .insufficientScope),
        (.read, "user:42:inbox", .publishToken, .tokenNeeded),
        // A right to publish is not a right to read, nor the other way round.
        (.read, "user:42:outbox", .token(FeedRights(publish: inbox.publish)), .insufficientScope),
        (.publish, "user:42:outbox", .token(inbox), .allowed),
        (.publish, "user:42:inbox", .token(inbox), .insufficientScope),
        (.publish, "user:43:outbox", .publishToken, .allowed),
        (.publish, "user:42:outbox", .none, .tokenNeeded),
    ]

    @Test func everyActionCredentialAndFeedIsDecidedAsTheTableSays() throws {
        let access = FeedAccess(publicFeeds: [try FeedPattern("main"), try FeedPattern("news.*")])
        for row in Self.rows {
            #expect(access.decide(row.action, on: Self.feed(row.feed), with: row.credentials) == row.decision, "\(row)")
        }
    }

    @Test func withNoPublicFeedEveryReadNeedsAToken() throws {
        let access = FeedAccess(publicFeeds: [])
        #expect(access.decide(.read, on: .main, with: .none) == .tokenNeeded)
        #expect(access.decide(.read, on: .main, with: .token(try FeedRights(read: ["*"], publish: []))) == .allowed)
    }
}
