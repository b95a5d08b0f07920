import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// The feed's change log as sessions read it, and which sessions a move of it wakes.
@Suite struct ChangeLogTests {
    static func update(_ position: FeedPosition, version: FeedVersion, title: String = "t") -> FeedChange {
        .update(FeedItem(id: "item-\(position)", title: title, published: Timestamp(milliseconds: 0), position: position, version: version))
    }

    static func remove(_ position: FeedPosition, version: FeedVersion) -> FeedChange {
        .remove(id: "item-\(position)", position: position, version: version)
    }

    @Test func theLogKeepsTheNewestChangeOfEachPositionInVersionOrder() {
        var log = ChangeLog(version: 10)
        log.append([Self.update(3, version: 11), Self.update(5, version: 12)], through: 12)
        log.append([Self.update(3, version: 13, title: "again"), Self.remove(4, version: 14)], through: 14)
        let all = log.changes(after: 10, within: 1...10)?.map(\.change.version)
        #expect(all == [12, 13, 14], "position 3 once, as it now is")
        #expect(log.changes(after: 12, within: 1...10)?.map(\.change.version) == [13, 14])
        #expect(log.changes(after: 10, within: 4...4)?.map(\.change.position) == [4])
        #expect(log.changes(after: 14, within: 1...10)?.isEmpty == true)
        #expect(log.changes(after: 9, within: 1...10) == nil, "before the log began: not known here")
    }

    @Test func changesDroppedForRoomRaiseTheFloor() {
        var log = ChangeLog(version: 0)
        let count = FeedPosition(ChangeLog.capacity + 10)
        log.append((1...count).map { Self.update($0, version: $0) }, through: count)
        #expect(log.entries.count == ChangeLog.capacity)
        #expect(log.changes(after: 9, within: 1...count) == nil)
        #expect(log.changes(after: 10, within: 1...count)?.count == ChangeLog.capacity)
    }

    @Test func aMoveWakesOnlyTheWindowsItChanges() {
        let log = ChangeLog(version: 0)
        let edit = ChangePayloads(log: log, changes: [Self.update(40, version: 7)], head: nil, removed: [])
        #expect(edit.mayConcern(30...50))
        #expect(!edit.mayConcern(1...39), "an edit above the window: not shown yet, told as it is when it comes")
        #expect(!edit.mayConcern(41...60))
        #expect(!edit.mayConcern(nil), "a page that shows nothing")
        // A removal above a window may be among the items its news counted.
        let removal = ChangePayloads(log: log, changes: [Self.remove(70, version: 8)], head: nil, removed: [70])
        #expect(removal.mayConcern(30...50))
        #expect(removal.mayConcern(nil))
        #expect(!removal.mayConcern(71...90))
        // Changes that are not known (a log that started again) concern every page.
        #expect(ChangePayloads(log: log, changes: nil, head: nil, removed: []).mayConcern(1...2))
    }
}
