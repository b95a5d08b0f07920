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
    /// Stores items, replacing any with the same id; returns them as stored, with their
    /// positions (the last of a batch's items with one id, compared by bytes as ``ItemKey``
    /// does). New ids take positions in the order of their dates (``DateOrder``), so the
    /// newest of a batch becomes the head. Throws
    /// ``InvalidFeedItem``, storing nothing, when an item breaks ``ItemRules``.
    func publish(_ items: [FeedItem]) async throws -> [FeedItem]
    /// ``publish(_:)``, answering also the head the write made when the store knows it
    /// without another read (`nil`: whoever needs the head reads ``head()``). A remote store
    /// learns it with the write, where a read would cost its publisher a round trip more.
    func publishReportingHead(_ items: [FeedItem]) async throws -> (stored: [FeedItem], head: FeedHead?)
    /// The item with this id, with its position.
    func item(id: String) async throws -> FeedItem?
    /// The position the item with this id took, to know what a page showing it has seen.
    func position(of id: String) async throws -> FeedPosition?
    /// Throws when the store cannot serve now, for `/readyz`: by default, when the head
    /// cannot be read.
    func checkReady() async throws
}

extension FeedSource {
    public func checkReady() async throws {
        _ = try await head()
    }

    public func publishReportingHead(_ items: [FeedItem]) async throws -> (stored: [FeedItem], head: FeedHead?) {
        (try await publish(items), nil)
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
