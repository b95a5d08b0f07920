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
/// session refreshing at the same moment), then read what is newer than what each session
/// shows; load-more reads what is older.
public protocol FeedSource: Sendable {
    /// Brings the feed up to date with its upstream, reporting progress as it goes.
    func update(progress: @escaping ProgressSink) async throws -> FeedUpdate
    /// Items strictly newer than `cursor`, the newest `limit` of them; `hasMore` when there
    /// are more than `limit` (a gap the caller cannot fill by prepending).
    func newer(than cursor: FeedCursor, limit: Int) async throws -> FeedPage
    /// Items strictly older than `cursor` (from the newest when `nil`), newest first;
    /// `hasMore` when older ones remain.
    func older(than cursor: FeedCursor?, limit: Int) async throws -> FeedPage
    /// Stores items, replacing any with the same id; returns them as stored.
    func publish(_ items: [FeedItem]) async throws -> [FeedItem]
    /// The item with this id, to turn ids given by clients into cursors.
    func item(id: String) async throws -> FeedItem?
}
