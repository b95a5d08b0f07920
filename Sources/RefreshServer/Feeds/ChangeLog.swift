import NIOCore
import RefreshFeed
import RefreshJSON

/// A feed's recent changes as this instance heard of them, net: for each position its newest
/// change (the item as it now is, or its removal), in version order, each encoded once. The
/// sessions of the feed read what changed in their window since the version they show here,
/// without a read of the store, as long as the log reaches back that far.
struct ChangeLog: Sendable {
    struct Entry: Sendable {
        let change: FeedChange
        /// The change as the `changes` event lists it.
        let json: ByteBuffer
    }

    /// Ascending in version; one per position.
    private(set) var entries: [Entry] = []
    /// The feed's version this log is complete up to.
    private(set) var version: FeedVersion
    /// Changes at or below this version may be missing (dropped for room, or before the log
    /// started): a reader behind it reads the store.
    private(set) var floor: FeedVersion

    /// The most entries kept.
    static let capacity = 512

    init(version: FeedVersion) {
        self.version = version
        floor = version
    }

    /// The changes after ``version`` up to `newVersion`, all of them (a caller that does not
    /// have them all calls ``restart(at:)``).
    mutating func append(_ changes: [FeedChange], through newVersion: FeedVersion) {
        guard newVersion > version else { return }
        for change in changes.sorted(by: { $0.version < $1.version }) where change.version > version {
            entries.removeAll { $0.change.position == change.position }
            entries.append(Entry(change: change, json: Self.encode(change)))
        }
        version = newVersion
        if entries.count > Self.capacity {
            let dropped = entries.count - Self.capacity
            floor = max(floor, entries[dropped - 1].change.version)
            entries.removeFirst(dropped)
        }
    }

    /// Starts again at `newVersion`, forgetting what came before: what changed below it is
    /// read from the store by whoever needs it.
    mutating func restart(at newVersion: FeedVersion) {
        entries.removeAll()
        version = max(version, newVersion)
        floor = version
    }

    /// The changes after `since` within `positions`; `nil` when the log does not reach back
    /// that far.
    func changes(after since: FeedVersion, within positions: ClosedRange<FeedPosition>) -> [Entry]? {
        guard since >= floor else { return nil }
        guard since < version else { return [] }
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].change.version <= since { low = middle + 1 } else { high = middle }
        }
        return entries[low...].filter { positions.contains($0.change.position) }
    }

    /// A change as the `changes` event lists it: `{"op": "update", "item"}` or `{"op":
    /// "remove", "id", "position", "version"}`.
    static func encode(_ change: FeedChange) -> ByteBuffer {
        var json = JSONWriter(capacity: 256)
        json.beginObject()
        switch change {
        case .update(let item):
            json.field("op", "update")
            json.key("item")
            json.item(item)
        case .remove(let id, let position, let version):
            json.field("op", "remove")
            json.field("id", id)
            json.field("position", Int(position))
            json.field("version", Int(version))
        }
        json.endObject()
        return json.buffer
    }
}
