import RefreshFeed

/// A set of feeds named in a right or a setting: one feed by its name (`user:42`), or every
/// feed whose name starts with a prefix, written with a trailing `*` (`user:42:*`, `team.*`,
/// `*` for all).
///
/// A pattern is parsed once, where it enters (a token's claim, `--public-feed`), so that
/// deciding a right is a comparison of bytes, and a pattern that cannot be parsed is refused
/// there: it makes the token invalid or stops the start, never widens what is allowed.
struct FeedPattern: Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable {
        case feed(FeedName)
        /// Feed names that start with these bytes (ASCII, as every name is).
        case prefix(String)
    }

    private let kind: Kind

    /// Why a text is not a pattern.
    struct Invalid: Error, Equatable, CustomStringConvertible {
        let pattern: String
        var description: String {
            "\(pattern.prefix(FeedName.maximumLength + 1)) is not a feed pattern: a feed's name, or the start of one followed by *"
        }
    }

    init(_ text: String) throws(Invalid) {
        guard text.hasSuffix("*") else {
            guard let name = FeedName(text) else { throw Invalid(pattern: text) }
            kind = .feed(name)
            return
        }
        let prefix = String(text.dropLast())
        // The start of a name is itself a valid name (and `x*` names `x` too); `*` alone is
        // every feed.
        guard prefix.isEmpty || FeedName(prefix) != nil else { throw Invalid(pattern: text) }
        kind = .prefix(prefix)
    }

    /// Whether `feed` is one of the feeds the pattern names.
    func matches(_ feed: FeedName) -> Bool {
        switch kind {
        case .feed(let name): name == feed
        case .prefix(let prefix): feed.rawValue.utf8.starts(with: prefix.utf8)
        }
    }

    /// Whether every feed `other` names is one this names.
    func covers(_ other: FeedPattern) -> Bool {
        switch (kind, other.kind) {
        case (.feed(let name), .feed(let named)): name == named
        case (.feed, .prefix): false
        case (.prefix(let prefix), .feed(let named)): named.rawValue.utf8.starts(with: prefix.utf8)
        case (.prefix(let prefix), .prefix(let named)): named.utf8.starts(with: prefix.utf8)
        }
    }

    /// `*`: every feed.
    static let all = try! FeedPattern("*")

    var description: String {
        switch kind {
        case .feed(let name): name.rawValue
        case .prefix(let prefix): prefix + "*"
        }
    }
}

extension Array where Element == FeedPattern {
    /// Whether any pattern names `feed`.
    func matches(_ feed: FeedName) -> Bool {
        contains { $0.matches(feed) }
    }
}
