/// Whose a session is. One created with a token belongs to the token's `sub` (a token without
/// one to every token without one): its stream then needs a token of the same owner that may
/// still read the feed. One created without a token belongs to nobody, and its id alone opens
/// its stream, as every session's id alone carries its samples, refreshes and load-mores.
///
/// Owners compare by the bytes of `sub`, as item ids do: two spellings Unicode calls
/// canonically equivalent (`caf\u{E9}` and `cafe\u{301}`) are two people.
struct SessionOwner: Equatable, Sendable {
    var subject: String?

    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs.subject, rhs.subject) {
        case (nil, nil): true
        case (let lhs?, let rhs?): lhs.utf8.elementsEqual(rhs.utf8)
        default: false
        }
    }
}
