/// Where a refresh is at, as a feed reports it while bringing itself up to date.
public struct FeedProgress: Sendable, Equatable {
    /// 0…1 within the update.
    public var fraction: Double
    /// A short machine-readable step name: `connecting`, `downloading`, `parsing`, `storing`…
    public var stage: String
    /// The same for people.
    public var message: String

    public init(fraction: Double, stage: String, message: String) {
        self.fraction = fraction
        self.stage = stage
        self.message = message
    }
}

public typealias ProgressSink = @Sendable (FeedProgress) -> Void

/// What one update brought in.
public struct FeedUpdate: Sendable, Equatable {
    /// Items the feed did not have before.
    public var added: Int
    /// For people: "3 new items", "Already up to date".
    public var message: String

    public init(added: Int, message: String) {
        self.added = added
        self.message = message
    }
}

/// The list's items and where new ones come from. Refreshes call `update` (shared by every
/// session refreshing at the same moment), then read what the feed gained after the position
/// each session shows; load-more reads what is older.
///
/// Every item the feed gains takes the next ``FeedPosition``, and a store must make positions
/// visible in order: once a read has seen position p, no item can later appear at p or
/// below (a database sequence alone does not promise this, as transactions commit out of
/// sequence order). Upserting an existing id takes no new position. The list is in the order
/// of positions, newest first, and pages are read by position: a republished item, whatever
/// its new date, stays where it stood, so no page skips or repeats it.
public protocol FeedSource: Sendable {
    /// Brings the feed up to date with its upstream, reporting progress as it goes.
    func update(progress: @escaping ProgressSink) async throws -> FeedUpdate
    /// Items that took a position after `position`, the newest `limit` of them, newest
    /// first; `hasMore` when there are more than `limit` (a gap the caller cannot fill by
    /// prepending). The page's `head` is the position the reader has then seen everything
    /// up to.
    func added(after position: FeedPosition, limit: Int) async throws -> FeedPage
    /// Items at positions below `position` (from the head when `nil`), newest first;
    /// `hasMore` when older ones remain.
    func older(than position: FeedPosition?, limit: Int) async throws -> FeedPage
    /// The newest position and its item; `nil` while the feed is empty.
    func head() async throws -> FeedHead?
    /// Stores items, replacing any with the same id, and answers what the write did: the
    /// items as stored, with their positions and versions (the last of a batch's items with
    /// one id, compared by bytes as ``ItemKey`` does), the head when it added items and the
    /// store knows it without another read, and the edits it made. New ids take positions in
    /// the order of their dates (``DateOrder``), so the newest of a batch becomes the head; a
    /// known id whose fields differ is edited in place and takes a new version, one that is
    /// the same changes nothing. Throws ``InvalidFeedItem``, storing nothing, when an item
    /// breaks ``ItemRules``.
    func publishing(_ items: [FeedItem]) async throws -> FeedWrite
    /// Replaces the fields of the item with `item`'s id, where it stands; throws
    /// ``FeedItemNotFound`` for an id the feed does not hold, and ``FeedVersionMismatch``,
    /// changing nothing, when `version` is given and is not the item's.
    func replace(_ item: FeedItem, ifVersion version: FeedVersion?) async throws -> FeedWrite
    /// Removes the item with this id, leaving a tombstone of its id and position; throws as
    /// ``replace(_:ifVersion:)`` does.
    func remove(id: String, ifVersion version: FeedVersion?) async throws -> FeedWrite
    /// The net changes after `version` to the items at `positions`: each one's last edit, or
    /// its removal, in version order. `nil` when they cannot be told: tombstones after
    /// `version` were forgotten, or there are more than `limit`.
    func changes(since version: FeedVersion, within positions: ClosedRange<FeedPosition>, limit: Int) async throws -> FeedChanges?
    /// Forgets the tombstones of items removed before `time`, in every feed of the store;
    /// answers how many. A reader behind the newest of a feed's can no longer be told what
    /// changed in it.
    func forgetRemovals(before time: Timestamp) async throws -> Int
    /// The item with this id, with its position and version.
    func item(id: String) async throws -> FeedItem?
    /// The position the item with this id took (for a removed one, the one it had), to know
    /// what a page showing it has seen and to page on from it.
    func position(of id: String) async throws -> FeedPosition?
    /// Throws when the store cannot serve now, for `/readyz`: by default, when the head
    /// cannot be read.
    func checkReady() async throws
}

extension FeedSource {
    public func checkReady() async throws {
        _ = try await head()
    }

    /// ``publishing(_:)``, answering only the items as stored.
    public func publish(_ items: [FeedItem]) async throws -> [FeedItem] {
        try await publishing(items).stored
    }
}

/// The store cannot be reached or failed, so nothing was read or stored: answered `503`
/// with `Retry-After`, since the same request may well succeed shortly.
public struct FeedStoreUnavailable: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
