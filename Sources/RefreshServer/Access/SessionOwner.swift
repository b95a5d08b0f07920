/// Whose a session is. One created with a token belongs to the token's `sub` (a token without
/// one to every token without one): its stream then needs a token of the same owner that may
/// still read the feed. One created without a token belongs to nobody, and its id alone opens
/// its stream, as every session's id alone carries its samples, refreshes and load-mores.
struct SessionOwner: Equatable, Sendable {
    var subject: String?
}
