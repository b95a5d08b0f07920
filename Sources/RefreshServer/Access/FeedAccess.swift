import RefreshFeed

/// What a token allows: the feeds it may read and those it may publish to, from its `ptr`
/// claim (`{"read": [PATTERN, …], "publish": [PATTERN, …]}`). A right to publish is not a
/// right to read: an application that lets a service post to inboxes need not let it read
/// them.
struct FeedRights: Equatable, Sendable {
    var read: [FeedPattern] = []
    var publish: [FeedPattern] = []
    /// Whose pull insights it may read, besides those of the feeds it may publish to.
    var insights: [FeedPattern] = []

    /// The most patterns one claim may hold, so deciding a right stays cheap whatever a
    /// token carries (a token is at most 8 KiB anyway).
    static let maximumPatterns = 256

    init(read: [FeedPattern] = [], publish: [FeedPattern] = [], insights: [FeedPattern] = []) {
        self.read = read
        self.publish = publish
        self.insights = insights
    }

    /// Why a claim gives no rights at all.
    enum Invalid: Error, Equatable {
        case pattern(FeedPattern.Invalid)
        case tooManyPatterns
    }

    /// The claim's lists as the token carried them; any pattern that does not parse, or too
    /// many, makes the whole claim invalid (and so the token).
    init(read: [String], publish: [String], insights: [String] = []) throws(Invalid) {
        guard read.count + publish.count + insights.count <= Self.maximumPatterns else { throw .tooManyPatterns }
        do {
            self.read = try read.map { (text) throws(FeedPattern.Invalid) in try FeedPattern(text) }
            self.publish = try publish.map { (text) throws(FeedPattern.Invalid) in try FeedPattern(text) }
            self.insights = try insights.map { (text) throws(FeedPattern.Invalid) in try FeedPattern(text) }
        } catch {
            throw .pattern(error)
        }
    }
}

/// Decides whether a request may read or publish to a feed: the one place the rules of
/// access are written, a pure function of the server's settings, the feed, the action and
/// what the request proved (a token's rights, the static publish token), tested as a table.
struct FeedAccess: Sendable {
    enum Action: Sendable {
        case read
        case publish
    }

    /// What the request proved.
    enum Credentials: Sendable {
        case none
        /// A valid token, with its rights.
        case token(FeedRights)
        /// The server's static publish token, which may publish to every feed and reads nothing
        /// more than anyone.
        case publishToken
    }

    enum Decision: Equatable, Sendable {
        case allowed
        /// `401 invalid_token`: a token is needed and none was given.
        case tokenNeeded
        /// `403 insufficient_scope`: the token does not give this right.
        case insufficientScope
    }

    /// The feeds anyone may read without a token (`--public-feed`; by default `main`).
    var publicFeeds: [FeedPattern]

    func decide(_ action: Action, on feed: FeedName, with credentials: Credentials) -> Decision {
        switch (action, credentials) {
        case (.read, _) where publicFeeds.matches(feed): .allowed
        case (.publish, .publishToken): .allowed
        case (_, .none), (.read, .publishToken): .tokenNeeded
        case (.read, .token(let rights)): rights.read.matches(feed) ? .allowed : .insufficientScope
        case (.publish, .token(let rights)): rights.publish.matches(feed) ? .allowed : .insufficientScope
        }
    }

    /// Whether the request may read the pull insights counted under `pattern`: every feed
    /// the pattern names must be one its token may publish to or has the `insights` right
    /// on, so the figures never tell of a feed beyond them. The static publish token may
    /// read them all; being public does not open a feed's insights.
    func decideInsights(on pattern: FeedPattern, with credentials: Credentials) -> Decision {
        switch credentials {
        case .publishToken: .allowed
        case .none: .tokenNeeded
        case .token(let rights):
            (rights.publish + rights.insights).contains { $0.covers(pattern) } ? .allowed : .insufficientScope
        }
    }
}
