import Foundation
import NIOCore
import NIOEmbedded
import RefreshEngine
import Synchronization
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// The session's decisions as values: each row gives the machine an input and checks the
/// events it appends to the log and the work it hands the session, with no task, loop or
/// store in between.
@Suite struct SessionMachineTests {
    /// The feed's head and change log as a table gives them.
    final class Head: FeedHeadReading, @unchecked Sendable {
        var head: FeedHead?
        var changeLog: ChangeLog?
        var removed: [FeedPosition] = []
        var position: FeedPosition { head?.position ?? 0 }

        func count(after shown: FeedPosition, through head: FeedPosition) -> FeedPosition {
            head - shown - FeedPosition(removed.filter { $0 > shown && $0 <= head }.count)
        }

        func move(to position: FeedPosition, version: FeedVersion? = nil) {
            head = FeedHead(position: position, item: item(position), version: version ?? position)
        }
    }

    final class Listener: EventListener, @unchecked Sendable {
        let eventLoop: any EventLoop
        init(_ loop: any EventLoop) { eventLoop = loop }
        func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {}
    }

    static func item(_ position: FeedPosition) -> FeedItem {
        FeedItem(
            id: "item-\(position)", title: "Item \(position)", published: Timestamp(milliseconds: 1_800_000_000_000 + Int64(position)),
            position: position, version: position)
    }

    private func item(_ position: FeedPosition) -> FeedItem { Self.item(position) }

    private func machine(
        news mode: RefreshConfig.NewsMode = .badge, head: Head = Head(), rate: Double = 1_000, now: ContinuousClock.Instant = .now
    )
        -> SessionMachine
    {
        var config = Preset.standard.config
        config.news = mode
        return SessionMachine(config: config, news: head, log: EventLog(capacity: 64), bucket: TokenBucket(rate: rate, now: now), now: now)
    }

    /// The kinds of the events the log holds after `cursor`.
    private func kinds(_ machine: inout SessionMachine, after cursor: UInt64 = 0) -> [ServerEvent.Kind] {
        machine.replay(after: cursor).events.map(\.kind)
    }

    private func drag(_ seq: Int, _ y: Double, _ phase: Sample.Phase = .drag) throws -> ValidSample {
        try ValidSample(Sample(seq: seq, t: Double(seq) * 16, y: y, phase: phase))
    }

    /// A machine whose page shows positions 1...3 at version 3.
    private func showing(news mode: RefreshConfig.NewsMode = .badge, head: Head) -> SessionMachine {
        var machine = machine(news: mode, head: head)
        head.move(to: 3)
        head.changeLog = ChangeLog(version: 3)
        machine.firstPageShown(FeedPage(items: [item(3), item(2), item(1)], hasMore: false, head: 3, version: 3))
        return machine
    }

    // MARK: - Requests

    @Test func samplesAppendTheStateAndDecideNoWork() throws {
        var machine = machine()
        let answer = try machine.samples([try drag(1, -20), try drag(2, -40)], now: .now)
        #expect(machine.takeActions().isEmpty)
        #expect(kinds(&machine) == [.state])
        #expect(answer == machine.log.latestState?.data)
        #expect(machine.counts.samplesApplied == 2)
        #expect(machine.sampleArrival != nil)
    }

    @Test func aBatchOverTheRateChangesNothing() throws {
        let now = ContinuousClock.now
        var machine = machine(rate: 1, now: now)
        let before = machine.log.lastID
        #expect(throws: APIError.self) { try machine.samples([try drag(1, -20), try drag(2, -40), try drag(3, -60)], now: now) }
        #expect(machine.log.lastID == before)
        #expect(machine.counts == SessionMachine.Counts())
        #expect(machine.engine.gestureState.phase == .idle)
    }

    @Test func aPullPastTheThresholdStartsOneRefreshWithTheWindow() throws {
        let head = Head()
        var machine = showing(head: head)
        _ = try machine.samples([try drag(1, -40), try drag(2, -120)], now: .now)
        _ = try machine.samples([try drag(3, -120, .release)], now: .now)
        let actions = machine.takeActions()
        let job = try #require(machine.engine.runningJob)
        #expect(actions == [.start(job, window: machine.window)])
        #expect(job.kind == .refresh)
    }

    @Test func aSecondRequestJoinsTheRunningRefresh() {
        var machine = machine()
        let first = machine.refreshRequested(now: .now)
        #expect(machine.takeActions().count == 1)
        let second = machine.refreshRequested(now: .now)
        #expect(second == first)
        #expect(machine.takeActions().isEmpty)
    }

    @Test func aLoadMoreDuringARefreshIsRefusedAndDecidesNothing() {
        var machine = machine()
        _ = machine.refreshRequested(now: .now)
        _ = machine.takeActions()
        #expect(throws: APIError.self) { try machine.loadMoreRequested(now: .now) }
        #expect(machine.takeActions().isEmpty)
    }

    @Test func cancellingStopsTheTaskAndTellsThePage() throws {
        var machine = machine()
        let id = machine.refreshRequested(now: .now)
        _ = machine.takeActions()
        let cursor = machine.log.lastID
        #expect(machine.cancelRequested(now: .now) == id)
        #expect(machine.takeActions() == [.cancel(id)])
        #expect(kinds(&machine, after: cursor).contains(.done))
        #expect(machine.engine.runningJob == nil)
        #expect(machine.cancelRequested(now: .now) == nil)
    }

    // MARK: - Reports from actions

    @Test func progressNeverGoesBack() throws {
        var machine = machine()
        _ = machine.refreshRequested(now: .now)
        let job = try #require(machine.engine.runningJob)
        machine.progress(job, fraction: 0.6, stage: "fetch", message: "")
        machine.progress(job, fraction: 0.2, stage: "fetch", message: "")
        let progress = machine.replay(after: 0).events.filter { $0.kind == .progress }
        #expect(progress.count == 2)
        let last = try #require(progress.last)
        #expect(String(buffer: last.data).contains(#""fraction":0.6"#))
    }

    @Test func aFinishedRefreshSendsItsItemsThenDoneThenState() throws {
        let head = Head()
        var machine = showing(head: head)
        _ = machine.refreshRequested(now: .now)
        let job = try #require(machine.engine.runningJob)
        let cursor = machine.log.lastID
        head.move(to: 5)
        machine.finished(job, .completed(ActionResult(op: .prepend, items: [item(5), item(4)], head: 5, version: 5)))
        #expect(kinds(&machine, after: cursor) == [.items, .done, .state])
        #expect(machine.window.positions == 1...5)
        #expect(machine.engine.runningJob == nil)
    }

    @Test func aLateResultOfACancelledActionIsDropped() throws {
        var machine = machine()
        _ = machine.refreshRequested(now: .now)
        let job = try #require(machine.engine.runningJob)
        _ = machine.cancelRequested(now: .now)
        let cursor = machine.log.lastID
        machine.finished(job, .completed(ActionResult(op: .prepend, items: [item(1)], head: 1, version: 1)))
        machine.progress(job, fraction: 1, stage: "late", message: "")
        #expect(machine.log.lastID == cursor)
        #expect(machine.window.positions == nil)
    }

    @Test func aRefreshThatReplacesTheListResetsThePageFirst() throws {
        let head = Head()
        var machine = showing(head: head)
        _ = machine.refreshRequested(now: .now)
        let job = try #require(machine.engine.runningJob)
        let cursor = machine.log.lastID
        head.move(to: 500)
        machine.finished(job, .completed(ActionResult(op: .prepend, items: [item(500)], replacesList: true, head: 500, version: 500)))
        #expect(kinds(&machine, after: cursor) == [.reset, .items, .done, .state])
        #expect(machine.counts.resets == [.listReplaced])
    }

    // MARK: - News

    @Test(arguments: [
        // mode, a refresh running, resting at the top: the event, the work
        (RefreshConfig.NewsMode.badge, false, ServerEvent.Kind?.some(.news), false),
        (RefreshConfig.NewsMode.badge, true, nil, false),
        (RefreshConfig.NewsMode.off, false, nil, false),
        (RefreshConfig.NewsMode.live, false, nil, true),
        (RefreshConfig.NewsMode.live, true, nil, false),
    ])
    func whatAnAdvancedHeadTells(mode: RefreshConfig.NewsMode, refreshing: Bool, event: ServerEvent.Kind?, bringsIn: Bool) throws {
        let head = Head()
        var machine = showing(news: mode, head: head)
        // A page at rest at the top, as a live page needs to take items in place.
        _ = try machine.samples([try drag(1, 0, .release)], now: .now)
        if refreshing { _ = machine.refreshRequested(now: .now) }
        _ = machine.takeActions()
        let cursor = machine.log.lastID
        head.move(to: 5)
        machine.headAdvanced(NewsPayloads(head: try #require(head.head)))
        #expect(kinds(&machine, after: cursor) == (event.map { [$0] } ?? []))
        #expect(machine.takeActions() == (bringsIn ? [.bringIn(after: 3)] : []))
    }

    @Test func theSameHeadIsToldOnce() throws {
        let head = Head()
        var machine = showing(head: head)
        head.move(to: 5)
        let payloads = NewsPayloads(head: try #require(head.head))
        machine.headAdvanced(payloads)
        let cursor = machine.log.lastID
        machine.headAdvanced(payloads)
        machine.catchUpOnNews()
        #expect(machine.log.lastID == cursor)
    }

    @Test func liveItemsBroughtInArePrependedOrToldAsNews() throws {
        let head = Head()
        var machine = showing(news: .live, head: head)
        _ = try machine.samples([try drag(1, 0, .release)], now: .now)
        head.move(to: 5)
        machine.catchUpOnNews()
        #expect(machine.takeActions() == [.bringIn(after: 3)])
        #expect(machine.live == .running)
        let cursor = machine.log.lastID
        machine.broughtIn(LiveRead(page: FeedPage(items: [item(5), item(4)], hasMore: false, head: 5, version: 5)), after: 3)
        #expect(kinds(&machine, after: cursor) == [.items])
        #expect(machine.window.positions == 1...5)

        // Too many to bring in: the page is told by news, and no read is tried again for that head.
        head.move(to: 200)
        machine.catchUpOnNews()
        #expect(machine.takeActions() == [.bringIn(after: 5)])
        let before = machine.log.lastID
        machine.broughtIn(LiveRead(page: FeedPage(items: [item(200)], hasMore: true, head: 200, version: 200)), after: 5)
        #expect(kinds(&machine, after: before) == [.news])
        #expect(machine.live == .gaveUp(at: 200))
        #expect(machine.takeActions().isEmpty)
    }

    // MARK: - Changes

    @Test func aWindowBehindTheChangeLogReadsTheStoreOnceThenTells() throws {
        let head = Head()
        var machine = showing(head: head)
        // The log starts after the window's version: what changed between must be read.
        head.changeLog = ChangeLog(version: 9)
        machine.catchUpOnChanges()
        let window = machine.window
        let segment = SessionMachine.Segment(positions: 1...3, since: 3)
        #expect(machine.takeActions() == [.readChanges([segment], window: window)])
        machine.catchUpOnChanges()
        #expect(machine.takeActions().isEmpty, "one read at a time")

        let cursor = machine.log.lastID
        var edited = item(2)
        edited.title = "Edited"
        edited.version = 7
        machine.changesRead([FeedChanges(changes: [.update(edited)], version: 9)], for: [segment], window: window)
        #expect(kinds(&machine, after: cursor) == [.changes])
        #expect(machine.window.version == 9)
        #expect(machine.counts.changesSent == 1)
    }

    @Test func changesThatCanNoLongerBeToldStartTheListOver() throws {
        let head = Head()
        var machine = showing(head: head)
        head.changeLog = ChangeLog(version: 9)
        machine.catchUpOnChanges()
        let actions = machine.takeActions()
        let cursor = machine.log.lastID
        let segment = SessionMachine.Segment(positions: 1...3, since: 3)
        #expect(actions == [.readChanges([segment], window: machine.window)])
        machine.changesRead([nil], for: [segment], window: machine.window)
        #expect(kinds(&machine, after: cursor) == [.reset])
        #expect(machine.window.positions == nil)
        #expect(machine.counts.resets == [.gap])
    }

    // MARK: - Streams and the end

    @Test func theFirstStreamOnALoopOpensItsGroupAndTheLastClosesIt() throws {
        let loop = EmbeddedEventLoop()
        var machine = machine()
        let first = Listener(loop)
        let second = Listener(loop)
        let answer = machine.streamOpened(first, lastEventID: nil, now: .now)
        let opened = try #require(answer)
        #expect(opened.initial.map(\.kind) == [.state])
        let actions = machine.takeActions()
        let listeners = try #require(actions.first?.group)
        #expect(actions == [.streamsOpened(listeners)])
        _ = machine.streamOpened(second, lastEventID: nil, now: .now)
        #expect(machine.takeActions().isEmpty)
        machine.streamClosed(first, now: .now)
        #expect(machine.takeActions().isEmpty)
        machine.streamClosed(second, now: .now)
        #expect(machine.takeActions() == [.streamsClosed(listeners)])
    }

    @Test func aStreamBackPastTheBufferIsToldWhatChangedOrReset() throws {
        let head = Head()
        var machine = showing(head: head)
        // A log that keeps one event: a reader at the first id has a gap.
        machine.log = EventLog(capacity: 1, maxBytes: 1)
        func fillTheBuffer() {
            for _ in 0..<4 {
                _ = machine.refreshRequested(now: .now)
                _ = machine.cancelRequested(now: .now)
            }
        }
        fillTheBuffer()
        // The list did not move after the reader's id: it is told what changed since.
        let told = machine.replay(after: 1)
        #expect(told.gap)
        #expect(told.events.map(\.kind) == [.changes, .state])
        #expect(machine.counts.resumedByVersion == 1)
        #expect(machine.counts.resets.isEmpty)

        // Rows came after the reader's id: only a reload makes up for them.
        let cursor = machine.log.lastID
        _ = machine.refreshRequested(now: .now)
        let job = try #require(machine.engine.runningJob)
        head.move(to: 5)
        machine.finished(job, .completed(ActionResult(op: .prepend, items: [item(5), item(4)], head: 5, version: 5)))
        fillTheBuffer()
        let reset = machine.replay(after: cursor)
        #expect(reset.gap)
        #expect(reset.events.map(\.kind) == [.reset, .state])
        #expect(machine.counts.resets == [.gap])
        #expect(machine.window.positions == nil)
    }

    @Test func theEndStopsEveryTaskAndClosesTheStreams() throws {
        let loop = EmbeddedEventLoop()
        var machine = machine()
        _ = machine.streamOpened(Listener(loop), lastEventID: nil, now: .now)
        _ = machine.refreshRequested(now: .now)
        _ = machine.takeActions()
        let wakeup = machine.end()
        #expect(wakeup != nil)
        let actions = machine.takeActions()
        #expect(actions.count == 2)
        #expect(actions.last == .stopAll)
        let late = machine.streamOpened(Listener(loop), lastEventID: nil, now: .now)
        #expect(late?.cursor == nil, "an ended session opens no stream")
        #expect(machine.log.openStreams == 0)
    }
}

extension SessionMachine.Action {
    /// The group of streams an action opens or closes.
    fileprivate var group: LoopListeners? {
        switch self {
        case .streamsOpened(let group), .streamsClosed(let group): group
        default: nil
        }
    }
}
