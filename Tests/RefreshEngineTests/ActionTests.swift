import Testing

@testable import RefreshEngine

@Suite struct RequestTests {
    @Test func aRequestedRefreshHoldsTheIndicatorWithoutAPull() throws {
        var driver = Driver(.standard)
        let jobRequest = driver.engine.refreshRequested()
        let (job, effects) = try #require(jobRequest.started)
        #expect(job == Job(id: ActionID(rawValue: 1), kind: .refresh, origin: .request))
        #expect(effects.start == job)
        #expect(effects.cancel == nil)
        #expect(effects.state?.phase == .refreshing)
        #expect(effects.state?.indicatorOffset == 50)
        #expect(effects.state?.edge == .top)
    }

    @Test func aSecondRefreshJoinsTheRunningOne() {
        var driver = Driver(.standard)
        let pulled = driver.pull(90, phase: .release).start!
        #expect(driver.engine.refreshRequested() == .joined(pulled))
        #expect(driver.engine.refreshRequested() == .joined(pulled))
    }

    @Test func aRefreshSupersedesARunningLoadMore() throws {
        var driver = Driver(.standard)
        let load = driver.move(to: 0, .scroll, content: 300, viewport: 800).start!
        let refreshRequest = driver.engine.refreshRequested()
        let (refresh, effects) = try #require(refreshRequest.started)
        #expect(effects.cancel == load)
        #expect(effects.start == refresh)
        #expect(driver.engine.actionFinished(load.id, outcome: .cancelled) == .none, "already forgotten")
        #expect(driver.engine.runningJob == refresh)
    }

    @Test func aPullDownDuringALoadMoreShowsThePullAndSupersedesIt() {
        var driver = Driver(.standard)
        let load = driver.move(to: 0, .scroll, content: 300, viewport: 800).start!
        let pulling = driver.pull(30)
        #expect(pulling.state?.edge == .top)
        #expect(pulling.state?.phase == .pulling)
        #expect(driver.pull(90).state?.phase == .armed)
        let released = driver.pull(90, phase: .release)
        #expect(released.cancel == load)
        #expect(released.start?.kind == .refresh)
        #expect(released.state?.phase == .refreshing)
    }

    @Test func loadMoreIsRefusedDuringARefreshAndJoinedDuringALoad() throws {
        var driver = Driver(.standard)
        let refreshRequest = driver.engine.refreshRequested()
        let refresh = try #require(refreshRequest.started).job
        #expect(driver.engine.loadMoreRequested() == .refused(runningJob: refresh))
        _ = driver.engine.actionFinished(refresh.id, outcome: .completed, hasMore: true)
        let loadRequest = driver.engine.loadMoreRequested()
        let (load, effects) = try #require(loadRequest.started)
        #expect(load.origin == .request)
        #expect(effects.state?.phase == .loading)
        #expect(driver.engine.loadMoreRequested() == .joined(load))
    }

    @Test func aBottomPullDuringARefreshCannotLoad() throws {
        var driver = Driver(config: try! Preset.standard.config.applying(.init(prefetch: false)))
        driver.move(to: 0, .scroll, content: 2000, viewport: 800)
        let refreshRequest = driver.engine.refreshRequested()
        let refresh = try #require(refreshRequest.started).job
        let pulled = driver.move(to: 1400, .release)
        #expect(pulled.start == nil)
        #expect(pulled.state?.phase == .refreshing)
        _ = driver.engine.actionFinished(refresh.id, outcome: .completed)
        #expect(driver.move(to: 1400, .release).start == nil, "must come back under first")
        driver.move(to: 1200)
        #expect(driver.move(to: 1330, .release).start?.kind == .loadMore)
    }

    @Test func aBottomArmedDuringARefreshLoadsOnReleaseAfterIt() throws {
        var driver = Driver(config: try! Preset.standard.config.applying(.init(prefetch: false)))
        driver.move(to: 0, .scroll, content: 2000, viewport: 800)
        let refreshRequest = driver.engine.refreshRequested()
        let refresh = try #require(refreshRequest.started).job
        driver.move(to: 1330)
        _ = driver.engine.actionFinished(refresh.id, outcome: .completed)
        #expect(driver.state.phase == .armed)
        #expect(driver.move(to: 1330, .release).start?.kind == .loadMore)
    }
}

@Suite struct CancellationTests {
    @Test func cancellingARefreshFreesTheEdgeAtOnce() throws {
        var driver = Driver(.standard)
        let firstRequest = driver.engine.refreshRequested()
        let first = try #require(firstRequest.started).job
        let cancelled = driver.engine.cancelRequested(.refresh)
        #expect(cancelled.cancel == first)
        #expect(cancelled.state == .resting(seq: nil))
        #expect(driver.engine.runningJob == nil)
        #expect(driver.engine.actionFinished(first.id, outcome: .cancelled) == .none)
        let secondRequest = driver.engine.refreshRequested()
        let second = try #require(secondRequest.started).job
        #expect(second.id > first.id)
    }

    @Test func cancellingWhatIsNotRunningDoesNothing() {
        var driver = Driver(.standard)
        #expect(driver.engine.cancelRequested(.refresh) == .none)
        _ = driver.engine.loadMoreRequested()
        #expect(driver.engine.cancelRequested(.refresh) == .none)
        #expect(driver.engine.cancelRequested(.loadMore).cancel?.kind == .loadMore)
        #expect(driver.engine.cancelRequested(.loadMore) == .none)
    }

    @Test func cancellingWhileStillPulledPastLeavesTheEdgeSpent() {
        var driver = Driver(.swiftUILab)
        driver.pull(90)
        #expect(driver.engine.cancelRequested(.refresh).state?.phase == .idle)
        #expect(driver.pull(95).start == nil)
    }

    @Test func cancellingALoadMoreKeepsPaging() {
        var driver = Driver(.standard)
        _ = driver.engine.loadMoreRequested()
        _ = driver.engine.cancelRequested(.loadMore)
        #expect(driver.engine.hasMore)
    }

    @Test func finishingAnUnknownActionIsIgnored() throws {
        var driver = Driver(.standard)
        #expect(driver.engine.actionFinished(ActionID(rawValue: 42), outcome: .completed) == .none)
        let jobRequest = driver.engine.refreshRequested()
        let job = try #require(jobRequest.started).job
        #expect(driver.engine.actionFinished(ActionID(rawValue: 42), outcome: .completed) == .none)
        #expect(driver.engine.runningJob == job)
    }
}

@Suite struct SampleTests {
    @Test func anOldSeqIsIgnoredAndCounted() throws {
        var engine = RefreshEngine(config: Preset.standard.config)
        _ = try engine.sampleReceived(Sample(seq: 5, y: -30))
        let before = engine.gestureState
        #expect(try engine.sampleReceived(Sample(seq: 5, y: -90)) == .none)
        #expect(try engine.sampleReceived(Sample(seq: 3, y: -90, phase: .release)) == .none)
        #expect(engine.ignoredSamples == 2)
        #expect(engine.gestureState == before)
        #expect(try engine.sampleReceived(Sample(seq: 6, y: -40)).state?.seq == 6)
    }

    @Test(arguments: [
        (Sample(seq: 1, y: .nan), SampleError.notFinite(field: "y")),
        (Sample(seq: 1, y: .infinity), .notFinite(field: "y")),
        (Sample(seq: 1, y: -.infinity), .notFinite(field: "y")),
        (Sample(seq: 1, y: 10_000_001), .outOfRange(field: "y", reason: "must be within ±10000000")),
        (Sample(seq: 1, y: -10_000_001), .outOfRange(field: "y", reason: "must be within ±10000000")),
        (Sample(seq: 1, t: .nan, y: 0), .notFinite(field: "t")),
        (Sample(seq: 1, t: -1, y: 0), .outOfRange(field: "t", reason: "must not be negative")),
        (Sample(seq: -1, y: 0), .outOfRange(field: "seq", reason: "must not be negative")),
        (Sample(seq: 1, y: 0, contentHeight: -1), .outOfRange(field: "contentHeight", reason: "must be from 0 to 10000000")),
        (Sample(seq: 1, y: 0, viewportHeight: .nan), .notFinite(field: "viewportHeight")),
        (Sample(seq: 1, y: 0, viewportHeight: 2e7), .outOfRange(field: "viewportHeight", reason: "must be from 0 to 10000000")),
    ])
    func absurdSamplesAreRefusedAndChangeNothing(sample: Sample, error: SampleError) throws {
        var driver = Driver(.standard)
        driver.pull(90)
        let before = driver.engine
        #expect(throws: error) { try driver.engine.sampleReceived(sample) }
        #expect(driver.engine.gestureState == before.gestureState)
        #expect(driver.engine.runningJob == nil)
        // The refused sample's seq was not consumed: a valid one with the same seq applies.
        var valid = sample
        valid.seq = driver.seq + 1
        valid.y = -90
        valid.t = 1
        valid.phase = .release
        valid.contentHeight = nil
        valid.viewportHeight = nil
        #expect(try driver.engine.sampleReceived(valid).start != nil)
        #expect(!error.description.isEmpty && error.description.hasPrefix(error.field))
    }

    @Test func aBatchWithOneBadSampleChangesNothing() {
        var driver = Driver(.standard)
        let batch = [Sample(seq: 1, y: -90), Sample(seq: 2, y: -90, phase: .release), Sample(seq: 3, y: .nan)]
        #expect(throws: SampleError.notFinite(field: "y")) { try driver.engine.samplesReceived(batch) }
        #expect(driver.engine.gestureState == .resting(seq: nil))
        #expect(driver.engine.runningJob == nil)
    }

    @Test func aBatchAppliesInOrderAndReportsTheLastState() throws {
        var engine = RefreshEngine(config: Preset.standard.config)
        let effects = try engine.samplesReceived([
            Sample(seq: 1, y: -40), Sample(seq: 2, y: -90), Sample(seq: 2, y: 0), Sample(seq: 3, y: -95, phase: .release),
        ])
        #expect(effects.start?.kind == .refresh)
        #expect(effects.state?.seq == 3)
        #expect(effects.state?.phase == .refreshing)
        #expect(engine.ignoredSamples == 1)
    }

    @Test func aBatchThatStartsAndSupersedesALoadStartsOnlyTheRefresh() throws {
        var engine = RefreshEngine(config: Preset.standard.config)
        let effects = try engine.samplesReceived([
            Sample(seq: 1, y: 0, phase: .scroll, contentHeight: 300, viewportHeight: 800),
            Sample(seq: 2, y: -90, phase: .release),
        ])
        #expect(effects.cancel == nil)
        #expect(effects.start == Job(id: ActionID(rawValue: 2), kind: .refresh, origin: .pull))
    }

    @Test func heightsCarryOverUntilChanged() {
        var driver = Driver(.uikitBottom)
        driver.move(to: 0, content: 4000, viewport: 800)
        driver.move(to: 10)
        #expect(driver.move(to: 3320).start != nil)
    }
}
