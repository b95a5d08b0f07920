/// A feed's name, checked once where it enters (a URL, a session's `feed`, a setting), so
/// that every store, notification and log line downstream holds a valid one.
///
/// "Letters" means the ASCII letters `A`–`Z` and `a`–`z`, and "digits" `0`–`9`. A name
/// travels in a URL path, in a `NOTIFY` payload and in a log line: ASCII needs no
/// percent-encoding there and cannot be written two ways, whereas `é` is one `String` but
/// two byte sequences (precomposed or not) that the databases would keep as two feeds (see
/// ``ItemKey``). Limited to ASCII, names compare equal as `String`s exactly when their bytes
/// do, so a dictionary keyed by `FeedName` and a database row keyed by its text agree.
public struct FeedName: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The name, as given.
    public let rawValue: String

    /// The feed `/api/items` and sessions created without `feed` read.
    public static let main = FeedName(checked: "main")

    /// The longest name, in characters (ASCII, so bytes too).
    public static let maximumLength = 128

    /// The punctuation allowed after the first character.
    static let punctuation: Set<UInt8> = Set("._~:@-".utf8)

    /// `nil` when `rawValue` is not a valid name.
    public init?(_ rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    private init(checked rawValue: String) {
        self.rawValue = rawValue
    }

    /// 1 to 128 ASCII letters, digits and `._~:@-`, the first a letter or a digit.
    public static func isValid(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= maximumLength, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || punctuation.contains($0) }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }
}
