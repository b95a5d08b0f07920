import Testing

@testable import RefreshEngine

@Suite struct SwiftUILabTests {
    /// The seed's arrow: 0° up to 60 % of the threshold, linear to 180° at it.
    @Test(arguments: [(0.0, 0.0), (20, 0), (48, 0), (56, 45), (64, 90), (72, 135), (79, 174.375)])
    func arrowRotation(distance: Double, degrees: Double) {
        var driver = Driver(.swiftUILab)
        let state = driver.pull(distance).state
        #expect(state?.rotation == degrees)
        #expect(state?.phase == (distance > 0 ? .pulling : .idle))
    }

    @Test func arrowStaysAt180FromTheThresholdOn() {
        var driver = Driver(.swiftUILab)
        #expect(driver.pull(80).state?.rotation == 180)
        #expect(driver.pull(120).state?.rotation == 180)
        #expect(driver.pull(300).state?.rotation == 180)
    }

    @Test func refreshStartsOnTheSampleThatCrosses80() {
        var driver = Driver(.swiftUILab)
        for distance in [10.0, 40, 79, 79.99] {
            let effects = driver.pull(distance)
            #expect(effects.start == nil)
            #expect(effects.state?.phase == .pulling)
            #expect(effects.state?.label == "Pull to refresh")
        }
        let crossing = driver.pull(80)
        #expect(crossing.start == Job(id: ActionID(rawValue: 1), kind: .refresh, origin: .pull))
        #expect(crossing.state?.phase == .refreshing)
        #expect(crossing.state?.label == "Refreshing…")
        #expect(crossing.state?.edge == .top)
        #expect(crossing.state?.pull == 1)
        #expect(driver.pull(100).start == nil)
    }

    @Test func indicatorStaysHeldWhileTheFingerGoesBackUp() {
        var driver = Driver(.swiftUILab)
        driver.pull(40, 90)
        for distance in [60.0, 20, 0] {
            let state = driver.pull(distance).state
            #expect(state?.phase == .refreshing)
            #expect(state?.indicatorOffset == 80)
            #expect(state?.distance == distance)
            #expect(state?.reveal == 0)
        }
        #expect(driver.move(to: 0, .release).state?.indicatorOffset == 80)
        let done = driver.engine.actionFinished(ActionID(rawValue: 1), outcome: .completed)
        #expect(done.state == .resting(seq: driver.seq))
    }

    @Test func pullingPastTheHeldOffsetMovesTheIndicatorWithTheFinger() {
        var driver = Driver(.swiftUILab)
        #expect(driver.pull(120).state?.indicatorOffset == 120)
    }
}

@Suite struct IOS15Tests {
    /// The first sample's offset is the rest position: a scroll view under a large title
    /// rests at a negative offset.
    @Test func measuresFromTheFirstSample() {
        var driver = Driver(.iOS15)
        let rest = -96.0
        #expect(driver.move(to: rest).state == .resting(seq: 1))
        let nearly = driver.move(to: rest - 144)
        #expect(nearly.start == nil)
        #expect(nearly.state?.distance == 144)
        #expect(nearly.state?.phase == .pulling)
        #expect(nearly.state?.rotation == 0, "ios15 has no arrow rotation")
        let crossing = driver.move(to: rest - 146)
        #expect(crossing.start?.kind == .refresh)
        #expect(crossing.state?.indicatorOffset == 146)
        #expect(driver.move(to: rest).state?.indicatorOffset == 44)
    }

    @Test func holdingPastTheThresholdAfterCompletionDoesNotTriggerAgain() {
        var driver = Driver(.iOS15)
        driver.move(to: 0)
        let job = driver.move(to: -146).start
        #expect(job != nil)
        driver.move(to: -200)
        let finished = driver.engine.actionFinished(job!.id, outcome: .completed)
        #expect(finished.state?.phase == .idle)
        #expect(finished.state?.distance == 200)
        for distance in [200.0, 210, 180, 150, 146] {
            #expect(driver.move(to: -distance).start == nil)
        }
        #expect(driver.move(to: -140).state?.phase == .pulling)
        #expect(driver.move(to: -150).start?.kind == .refresh, "re-armed after coming back under")
    }

    @Test func moreThanThresholdInOneJumpStillTriggers() {
        var driver = Driver(.iOS15)
        driver.move(to: 0)
        #expect(driver.move(to: -400).start != nil)
    }
}

@Suite struct ReleaseModeTests {
    @Test func armsAt80AndRefreshesOnRelease() {
        var driver = Driver(.standard)
        #expect(driver.pull(79.9).state?.phase == .pulling)
        let armed = driver.pull(80)
        #expect(armed.start == nil)
        #expect(armed.state?.phase == .armed)
        #expect(armed.state?.label == "Release to refresh")
        #expect(armed.state?.rotation == 180)
        #expect(driver.pull(110).state?.phase == .armed)
        let released = driver.pull(100, phase: .release)
        #expect(released.start?.kind == .refresh)
        #expect(released.start?.origin == .pull)
        #expect(released.state?.phase == .refreshing)
        #expect(driver.move(to: 0, .scroll).state?.indicatorOffset == 50)
    }

    @Test func movingBackUnderTheThresholdBeforeReleasingDisarms() {
        var driver = Driver(.standard)
        driver.pull(40, 85)
        let back = driver.pull(70)
        #expect(back.state?.phase == .pulling)
        #expect(back.state?.label == "Pull to refresh")
        let released = driver.pull(70, phase: .release)
        #expect(released.start == nil)
        #expect(driver.engine.runningJob == nil)
    }

    @Test func aReleasePastTheThresholdWithoutEarlierSamplesRefreshes() {
        var driver = Driver(.standard)
        #expect(driver.pull(95, phase: .release).start?.kind == .refresh)
    }

    @Test func momentumNeverArmsNorTriggers() {
        var driver = Driver(.standard)
        let bounced = driver.pull(120, phase: .scroll)
        #expect(bounced.start == nil)
        #expect(bounced.state?.phase == .pulling)
        #expect(driver.pull(120, phase: .release).start?.kind == .refresh)
    }

    @Test func momentumLeavesAnArmedEdgeArmed() {
        var driver = Driver(.standard)
        driver.pull(90)
        #expect(driver.pull(95, phase: .scroll).state?.phase == .armed)
        #expect(driver.pull(95, phase: .release).start != nil)
    }

    @Test func stillArmedWhenTheRefreshEndsMustComeBackUnderFirst() {
        var driver = Driver(.standard)
        let job = driver.pull(90, phase: .release).start!
        driver.pull(120)
        #expect(driver.engine.actionFinished(job.id, outcome: .completed).state?.phase == .idle)
        #expect(driver.pull(130).state?.phase == .idle)
        #expect(driver.pull(130, phase: .release).start == nil)
        driver.pull(30)
        driver.pull(90)
        #expect(driver.state.phase == .armed)
        #expect(driver.pull(90, phase: .release).start?.id == ActionID(rawValue: 2))
    }

    @Test func aFailedRefreshEndsTheSameWay() {
        var driver = Driver(.standard)
        let job = driver.pull(90, phase: .release).start!
        driver.move(to: 0, .scroll)
        let failed = driver.engine.actionFinished(job.id, outcome: .failed)
        #expect(failed.state == .resting(seq: driver.seq))
        #expect(driver.engine.runningJob == nil)
    }

    @Test func rotationFollowsTheThresholdOfTheEdge() {
        var driver = Driver(.standard)
        #expect(driver.pull(64).state?.rotation == 90)
    }

    @Test func rotationCanBeTurnedOff() throws {
        var driver = Driver(config: try Preset.standard.config.applying(.init(rotation: false)))
        #expect(driver.pull(80).state?.rotation == 0)
    }

    @Test func customLabelsAreReported() throws {
        let config = try Preset.standard.config.applying(
            .init(top: .init(labels: .init(pull: "Tirez", release: "Relâchez", active: "Actualisation…"))))
        var driver = Driver(config: config)
        #expect(driver.pull(20).state?.label == "Tirez")
        #expect(driver.pull(90).state?.label == "Relâchez")
        #expect(driver.pull(90, phase: .release).state?.label == "Actualisation…")
    }
}
