import Testing

@testable import RefreshEngine

@Suite struct UIKitBottomTests {
    @Test func triggersAt3320NotAt3319() {
        var driver = Driver(.uikitBottom)
        driver.move(to: 0, .scroll, content: 4000, viewport: 800)
        let near = driver.move(to: 3319)
        #expect(near.start == nil)
        #expect(near.state?.edge == .bottom)
        #expect(near.state?.phase == .pulling)
        #expect(near.state?.distance == 119)
        #expect(near.state?.label == "Pull up to load more")
        let crossing = driver.move(to: 3320)
        #expect(crossing.start == Job(id: ActionID(rawValue: 1), kind: .loadMore, origin: .pull))
        #expect(crossing.state?.phase == .loading)
        #expect(crossing.state?.label == "Loading…")
    }

    @Test func neverTriggersWhenTheContentFitsTheViewport() {
        var driver = Driver(.uikitBottom)
        driver.move(to: 0, content: 500, viewport: 800)
        for y in [100.0, 300, 500, 2000, 9000] {
            let effects = driver.move(to: y)
            #expect(effects.start == nil)
            #expect(effects.state == .resting(seq: driver.seq))
        }
    }

    @Test func neverTriggersBeforeTheHeightsAreKnown() {
        var driver = Driver(.uikitBottom)
        #expect(driver.move(to: 5000).start == nil)
    }

    @Test func topPullsDoNothing() {
        var driver = Driver(.uikitBottom)
        driver.move(to: 0, content: 4000, viewport: 800)
        let pulled = driver.move(to: -300)
        #expect(pulled.start == nil)
        #expect(pulled.state == .resting(seq: driver.seq))
    }

    /// The seed reveals its 50-point indicator by `min(0, -(maxY - y + 50))`.
    @Test(arguments: [3200.5, 3210, 3230, 3249, 3250, 3270])
    func revealMatchesTheSeedFormula(y: Double) {
        var driver = Driver(.uikitBottom)
        driver.move(to: 0, content: 4000, viewport: 800)
        let maxY = 3200.0
        #expect(driver.move(to: y).state?.reveal == min(0, -(maxY - y + 50)))
    }

    @Test func heldWhileLoadingThenReArmsOnlyAfterComingBack() {
        var driver = Driver(.uikitBottom)
        driver.move(to: 0, content: 4000, viewport: 800)
        let job = driver.move(to: 3330).start!
        let held = driver.move(to: 3200, .release)
        #expect(held.state?.indicatorOffset == 50)
        #expect(held.state?.reveal == 0)
        driver.move(to: 3330)
        _ = driver.engine.actionFinished(job.id, outcome: .completed, hasMore: true)
        #expect(driver.move(to: 3340).start == nil)
        driver.move(to: 3250)
        #expect(driver.move(to: 3321).start?.id == ActionID(rawValue: 2))
    }
}

@Suite struct DefaultBottomTests {
    @Test func pullUpArmsAt120AndLoadsOnRelease() throws {
        var driver = Driver(config: try Preset.standard.config.applying(.init(prefetch: false)))
        driver.move(to: 0, .scroll, content: 2000, viewport: 800)
        let armed = driver.move(to: 1320)
        #expect(armed.state?.phase == .armed)
        #expect(armed.state?.label == "Release to load more")
        #expect(armed.start == nil)
        let released = driver.move(to: 1325, .release)
        #expect(released.start?.kind == .loadMore)
        #expect(released.state?.phase == .loading)
        #expect(released.state?.indicatorOffset == 125)
    }

    @Test func prefetchStartsNearTheEndWithoutAPull() {
        var driver = Driver(.standard)
        #expect(driver.move(to: 0, .scroll, content: 2000, viewport: 800).start == nil)
        #expect(driver.move(to: 899, .scroll).start == nil)
        let near = driver.move(to: 900, .scroll)
        #expect(near.start == Job(id: ActionID(rawValue: 1), kind: .loadMore, origin: .prefetch))
        #expect(near.state?.edge == .bottom)
        #expect(near.state?.phase == .loading)
    }

    @Test func keepsLoadingUntilTheViewportIsFilled() {
        var driver = Driver(.standard)
        var job = driver.move(to: 0, .scroll, content: 300, viewport: 800).start
        #expect(job?.origin == .prefetch)
        #expect(driver.move(to: 0, .scroll).start == nil, "one load at a time")
        _ = driver.engine.actionFinished(job!.id, outcome: .completed, hasMore: true)
        job = driver.move(to: 0, .scroll, content: 700, viewport: 800).start
        #expect(job?.kind == .loadMore)
        _ = driver.engine.actionFinished(job!.id, outcome: .completed, hasMore: true)
        #expect(driver.move(to: 0, .scroll, content: 1400, viewport: 800).start == nil, "filled, end far away")
    }

    @Test func stopsWhenTheFeedEnds() {
        var driver = Driver(.standard)
        let job = driver.move(to: 0, .scroll, content: 300, viewport: 800).start!
        _ = driver.engine.actionFinished(job.id, outcome: .completed, hasMore: false)
        #expect(!driver.engine.hasMore)
        #expect(driver.move(to: 0, .scroll, content: 400, viewport: 800).start == nil)
    }

    @Test func startsWithoutPrefetchWhenTheFeedIsKnownEmpty() {
        var driver = Driver(.standard, hasMore: false)
        #expect(driver.move(to: 0, .scroll, content: 300, viewport: 800).start == nil)
    }

    /// A first page given with the session says whether older items remain, as a load-more
    /// would have: a short list of a feed that has no more loads nothing by itself.
    @Test(arguments: [true, false])
    func aFirstPageShownWithTheSessionSetsPaging(hasMore: Bool) {
        var driver = Driver(.standard)
        driver.engine.firstPageShown(hasMore: hasMore)
        #expect(driver.engine.hasMore == hasMore)
        #expect((driver.move(to: 0, .scroll, content: 300, viewport: 800).start?.origin == .prefetch) == hasMore)
    }

    @Test func aFailedLoadPausesPrefetchUntilAskedAgain() {
        var driver = Driver(.standard)
        let job = driver.move(to: 0, .scroll, content: 300, viewport: 800).start!
        _ = driver.engine.actionFinished(job.id, outcome: .failed)
        #expect(driver.move(to: 0, .scroll).start == nil)
        guard case .started(let retry, _) = driver.engine.loadMoreRequested() else {
            Issue.record("a load-more request after a failure was not started")
            return
        }
        _ = driver.engine.actionFinished(retry.id, outcome: .completed, hasMore: true)
        #expect(driver.move(to: 0, .scroll).start?.origin == .prefetch)
    }

    @Test func noPrefetchWhilePullingDown() {
        var driver = Driver(.standard)
        #expect(driver.move(to: -30, .drag, content: 300, viewport: 800).start == nil)
    }

    @Test func aRefreshResetsPaging() {
        var driver = Driver(.standard)
        let load = driver.move(to: 0, .scroll, content: 300, viewport: 800).start!
        _ = driver.engine.actionFinished(load.id, outcome: .completed, hasMore: false)
        guard case .started(let refresh, _) = driver.engine.refreshRequested() else {
            Issue.record("refresh not started")
            return
        }
        _ = driver.engine.actionFinished(refresh.id, outcome: .completed, hasMore: true)
        #expect(driver.engine.hasMore)
        #expect(driver.move(to: 0, .scroll).start?.kind == .loadMore)
    }
}
