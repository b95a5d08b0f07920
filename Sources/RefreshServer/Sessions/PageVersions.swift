import RefreshFeed

/// The versions a page shows its window as, by the id of the event that made each so (an
/// `items` event, or a `changes` one): a page that comes back past the replay buffer with the
/// id of the last event it got is told what changed since the version of the newest of these
/// at or before it, unless its list moved after that id (new rows, a `reset`), which only a
/// reload can make up for. A few are kept: a page further behind starts over.
struct PageVersions: Sendable {
    private var marks: [(id: UInt64, version: FeedVersion)] = []
    /// The version before the first mark, from `baseID` on (`nil`: not known).
    private var base: FeedVersion?
    private var baseID: UInt64
    /// The last event that moved the list: a page behind it cannot be told by changes.
    private var movedAt: UInt64

    static let kept = 32

    /// A page that shows its window as `version` from event `id` on.
    init(version: FeedVersion? = nil, at id: UInt64 = 0) {
        base = version
        baseID = id
        movedAt = id
    }

    /// Event `id` moved the list (items came, or it was reset); it is shown as `version`
    /// from then on (`nil`: not as any, after a reset).
    mutating func windowMoved(at id: UInt64, version: FeedVersion? = nil) {
        marks.removeAll()
        base = version
        baseID = id
        movedAt = id
    }

    /// Event `id` told the page what changed up to `version`.
    mutating func changed(at id: UInt64, version: FeedVersion) {
        marks.append((id, version))
        if marks.count > Self.kept {
            let oldest = marks.removeFirst()
            base = oldest.version
            baseID = oldest.id
        }
    }

    /// The version the page shows its window as once it got every event up to `cursor`;
    /// `nil` when that cannot be told.
    func version(at cursor: UInt64) -> FeedVersion? {
        guard cursor >= movedAt, cursor >= baseID else { return nil }
        return marks.last { $0.id <= cursor }?.version ?? base
    }
}
