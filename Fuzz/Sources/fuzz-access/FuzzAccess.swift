import FuzzSupport
import RefreshFeed

@testable import RefreshServer

/// Feed patterns and the rights a token's `ptr` claim gives, from what any token may carry.
/// The input is lines: the first names a feed to ask about, the others are patterns, read
/// rights until a line `-`, publish rights after it. Every pattern is judged against the
/// grammar written out here, apart from the parser: a feed's name, or the start of one (or
/// nothing) followed by one `*`; what parses must name the same text back and match exactly
/// the feeds the grammar says. The claim is valid only when every pattern is and there are
/// not too many, and the decision for the feed follows the rules as the SPEC states them.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAccess(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: start, count: count)
    var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    guard !lines.isEmpty else { return 0 }
    let asked = lines.removeFirst()
    let feed = FeedName(asked) ?? .main
    invariant((FeedName(asked) != nil) == isName(asked), "\(asked.debugDescription) judged a name: \(FeedName(asked) != nil)")

    var read: [String] = []
    var publish: [String] = []
    var publishing = false
    for line in lines {
        if line == "-", !publishing {
            publishing = true
        } else if publishing {
            publish.append(line)
        } else {
            read.append(line)
        }
    }
    // The first 32 patterns each on their own, the claim whole: checking hundreds of lines
    // one by one made an input cost as much as a hundred short ones, for the same branches.
    for text in (read + publish).prefix(32) { checkPattern(text, against: feed) }
    checkClaim(read: read, publish: publish, feed: feed)
    return 0
}

/// The grammar of a name, as the SPEC writes it: 1 to 128 ASCII letters, digits and
/// `._~:@-`, the first a letter or a digit.
private func isName(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    func alphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
    guard let first = bytes.first, bytes.count <= 128, alphanumeric(first) else { return false }
    return bytes.allSatisfy { alphanumeric($0) || Array("._~:@-".utf8).contains($0) }
}

/// A pattern is a name, or a name or nothing followed by one `*`.
private func isPattern(_ text: String) -> Bool {
    guard text.utf8.last == UInt8(ascii: "*") else { return isName(text) }
    let prefix = String(decoding: text.utf8.dropLast(), as: UTF8.self)
    return prefix.isEmpty || isName(prefix)
}

/// Whether the pattern written `text` names `feed`: the same bytes, or the feed's name
/// starts with the bytes before the `*`.
private func names(_ text: String, _ feed: FeedName) -> Bool {
    let pattern = Array(text.utf8)
    let name = Array(feed.rawValue.utf8)
    guard pattern.last == UInt8(ascii: "*") else { return pattern == name }
    return name.starts(with: pattern.dropLast())
}

private func checkPattern(_ text: String, against feed: FeedName) {
    let pattern: FeedPattern
    do {
        pattern = try FeedPattern(text)
    } catch {
        invariant(!isPattern(text), "\(text.debugDescription) refused: \(error)")
        invariant(error.pattern == text, "the refusal names another pattern: \(error.pattern.debugDescription)")
        // A refusal quotes the pattern, never more than a name's length of it (in characters,
        // as the message is cut).
        invariant(error.description.count <= FeedName.maximumLength + 1 + 80, "a refusal \(error.description.count) characters long")
        return
    }
    invariant(isPattern(text), "\(text.debugDescription) taken as a pattern")
    invariant(Array(pattern.description.utf8) == Array(text.utf8), "\(text.debugDescription) written back as \(pattern.description.debugDescription)")
    invariant((try? FeedPattern(pattern.description)) == pattern, "\(text.debugDescription) does not parse back to itself")
    invariant(pattern.matches(feed) == names(text, feed), "\(text.debugDescription) on \(feed): matches says \(pattern.matches(feed))")
    // A pattern names the feed its text spells without the `*`, when that is a name (`team*`
    // names `team`), and `*` names every feed.
    let spelled = text.hasSuffix("*") ? String(text.dropLast()) : text
    if let named = FeedName(spelled) {
        invariant(pattern.matches(named), "\(text.debugDescription) does not name \(named)")
    }
    if text == "*" { invariant(pattern.matches(feed), "* does not name \(feed)") }
}

private func checkClaim(read: [String], publish: [String], feed: FeedName) {
    let rights: FeedRights
    do throws(FeedRights.Invalid) {
        rights = try FeedRights(read: read, publish: publish)
    } catch {
        switch error {
        case .tooManyPatterns:
            invariant(read.count + publish.count > FeedRights.maximumPatterns, "\(read.count + publish.count) patterns are too many")
        case .pattern(let invalid):
            invariant(read.count + publish.count <= FeedRights.maximumPatterns, "too many patterns not refused as such")
            invariant(
                !isPattern(invalid.pattern) && (read + publish).contains(invalid.pattern), "refused for \(invalid.pattern.debugDescription)")
        }
        return
    }
    invariant(read.count + publish.count <= FeedRights.maximumPatterns, "\(read.count + publish.count) patterns taken")
    invariant((read + publish).allSatisfy(isPattern), "a claim with an invalid pattern taken")
    invariant(rights.read.map(\.description) == read && rights.publish.map(\.description) == publish, "rights not as claimed")

    // The rules: a public feed is read by anyone; reading otherwise needs a token with a
    // read right, publishing a publish right or the static publish token; a publish right is
    // no read right, and the publish token reads nothing more than anyone.
    let access = FeedAccess(publicFeeds: [mainPattern])
    let isPublic = names("main", feed)
    let mayRead = read.contains { names($0, feed) }
    let mayPublish = publish.contains { names($0, feed) }
    let token = FeedAccess.Credentials.token(rights)
    invariant(access.decide(.read, on: feed, with: .none) == (isPublic ? .allowed : .tokenNeeded), "read without a token")
    invariant(access.decide(.read, on: feed, with: .publishToken) == (isPublic ? .allowed : .tokenNeeded), "read with the publish token")
    invariant(access.decide(.publish, on: feed, with: .none) == .tokenNeeded, "publish without a token")
    invariant(access.decide(.publish, on: feed, with: .publishToken) == .allowed, "publish with the publish token")
    invariant(access.decide(.read, on: feed, with: token) == (isPublic || mayRead ? .allowed : .insufficientScope), "read with \(rights) on \(feed)")
    invariant(access.decide(.publish, on: feed, with: token) == (mayPublish ? .allowed : .insufficientScope), "publish with \(rights) on \(feed)")
}

/// `--public-feed`'s default.
private let mainPattern = try! FeedPattern("main")
