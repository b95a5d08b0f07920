import Foundation
import RefreshEngine
import RefreshFeed
import RefreshJSON
import Synchronization
import Testing

@testable import RefreshServer

/// A pull, sample by sample, through the engine and the tracker, as a session applies them.
private struct Puller {
    var engine: RefreshEngine
    var tracker: PullTracker
    var seq = 0
    var records: [PullRecord] = []

    init(_ preset: Preset = .standard) {
        engine = RefreshEngine(config: preset.config)
        tracker = PullTracker(config: preset.config)
    }

    /// Several samples in one request, as the page sends a release and the rest after it.
    mutating func batch(_ moves: [(Double, Sample.Phase, Double)]) throws {
        var samples: [ValidSample] = []
        for (y, phase, t) in moves {
            seq += 1
            samples.append(try ValidSample(Sample(seq: seq, t: t, y: y, phase: phase)))
        }
        let effects = engine.samplesReceived(samples)
        _ = try #require(effects.state)
        records += tracker.samplesApplied(samples, started: effects.start)
        if let job = effects.start { _ = engine.actionFinished(job.id, outcome: .completed) }
    }

    mutating func move(_ y: Double, _ phase: Sample.Phase = .drag, at t: Double, input: Sample.Input? = nil, viewport: Double? = nil) throws {
        seq += 1
        let sample = try ValidSample(Sample(seq: seq, t: t, y: y, phase: phase, contentHeight: 5000, viewportHeight: viewport, input: input))
        let effects = engine.samplesReceived([sample])
        _ = try #require(effects.state)
        records += tracker.samplesApplied([sample], started: effects.start)
        if let job = effects.start { _ = engine.actionFinished(job.id, outcome: .completed) }
    }
}

/// What a pull comes to, decided from the engine's answers: table tests over sample sequences.
@Suite struct PullTrackerTests {
    @Test func aPullPastTheThresholdAndReleasedRefreshes() throws {
        var puller = Puller()
        try puller.move(-30, at: 0, input: .touch, viewport: 700)
        try puller.move(-90, at: 200)
        #expect(puller.records.isEmpty)
        try puller.move(-90, .release, at: 400)
        let record = try #require(puller.records.first)
        #expect(puller.records.count == 1)
        #expect(record.armed && record.trigger == .refresh && !record.takenBack && !record.short && !record.retriggered)
        #expect(record.releaseDistance == 90 && record.duration == 400)
        #expect(record.input == .touch && record.band == .from600)
    }

    /// One request's samples, numbered from 1: each move is the offset, the phase and the
    /// page's clock.
    static func samples(_ moves: [(y: Double, phase: Sample.Phase, t: Double)]) throws -> [ValidSample] {
        try moves.enumerated().map { index, move in try ValidSample(Sample(seq: index + 1, t: move.t, y: move.y, phase: move.phase)) }
    }

    /// A request sent again (its answer was lost) repeats samples the engine has applied: it
    /// ignores them, and the pull they belonged to is not counted again or begun anew.
    @Test func samplesSentAgainAreNotFollowedTwice() throws {
        var engine = RefreshEngine(config: Preset.standard.config)
        var tracker = PullTracker(config: Preset.standard.config)
        let samples = try Self.samples([(-30, .drag, 0), (-90, .drag, 200), (-90, .release, 400)])
        let effects = engine.samplesReceived(samples)
        let first = tracker.samplesApplied(samples, started: effects.start)
        #expect(first.map(\.trigger) == [.refresh])
        _ = engine.samplesReceived(samples + [try ValidSample(Sample(seq: 4, t: 600, y: 0, phase: .drag))])
        #expect(tracker.samplesApplied(samples, started: nil).isEmpty)
        let later = try ValidSample(Sample(seq: 5, t: 800, y: 0, phase: .drag))
        _ = engine.samplesReceived([later])
        #expect(tracker.samplesApplied([later], started: nil).isEmpty)
    }

    /// One request can end a pull and start the next (the Swift client, or the page resending
    /// after a refusal, sends several samples at once): each is told, and the job goes to the
    /// pull that fired it, not to the one that ended first.
    @Test func twoPullsInOneRequestAreToldApartAndTheJobIsTheSecondOnes() throws {
        let config = Preset.swiftUILab.config
        var engine = RefreshEngine(config: config)
        var tracker = PullTracker(config: config)
        let samples = try Self.samples([(-5, .drag, 0), (0, .drag, 100), (-130, .drag, 200)])
        let effects = engine.samplesReceived(samples)
        #expect(effects.start?.kind == .refresh)
        let ended = tracker.samplesApplied(samples, started: effects.start)
        #expect(ended.count == 1)
        #expect(ended.first?.short == true && ended.first?.trigger == nil && ended.first?.armed == false)
        let release = try ValidSample(Sample(seq: 4, t: 300, y: -130, phase: .release))
        let second = tracker.samplesApplied([release], started: nil)
        #expect(second.count == 1 && second.first?.trigger == .refresh && second.first?.armed == true)
    }

    /// A pull that went past the threshold and back within one request armed all the same.
    @Test func aPullThatArmedAndCameBackWithinOneRequestIsTakenBack() throws {
        var engine = RefreshEngine(config: Preset.standard.config)
        var tracker = PullTracker(config: Preset.standard.config)
        let samples = try Self.samples([(-130, .drag, 0), (-40, .drag, 100), (-40, .release, 200)])
        let effects = engine.samplesReceived(samples)
        #expect(effects.start == nil)
        let ended = tracker.samplesApplied(samples, started: effects.start)
        #expect(ended.count == 1 && ended.first?.armed == true && ended.first?.takenBack == true)
    }

    /// A second refresh counts as `retriggered` only forward on the page's clock and against
    /// the refresh before it, not a load-more, nor a clock that went back.
    @Test func retriggeredIsARefreshSoonAfterARefreshForwardInTime() throws {
        var puller = Puller()
        try puller.move(-90, at: 20_000)
        try puller.move(-90, .release, at: 20_100)
        try puller.move(0, at: 20_200)
        try puller.move(-90, at: 1_000)
        try puller.move(-90, .release, at: 1_100)
        let refreshes = puller.records.filter { $0.trigger == .refresh }
        #expect(refreshes.count == 2)
        #expect(refreshes.allSatisfy { !$0.retriggered }, "the clock went back: no telling how soon")
    }

    /// A pull under way when its session ends is told, as one never released.
    @Test func aPullUnderWayWhenTheSessionEndsIsTold() throws {
        var tracker = PullTracker(config: Preset.standard.config)
        #expect(tracker.sessionEnded() == nil)
        _ = tracker.samplesApplied([try ValidSample(Sample(seq: 1, t: 0, y: -50, phase: .drag))], started: nil)
        let ended = tracker.sessionEnded()
        let record = try #require(ended)
        #expect(record.farthest == 50 && record.releaseDistance == nil && record.trigger == nil)
        #expect(tracker.sessionEnded() == nil)
    }

    @Test func armedThenTakenBackBeforeTheRelease() throws {
        var puller = Puller()
        try puller.move(-90, at: 0)
        try puller.move(-40, at: 100)
        try puller.move(-40, .release, at: 200)
        let record = try #require(puller.records.first)
        #expect(record.armed && record.takenBack && record.trigger == nil)
        #expect(record.releaseDistance == 40)
    }

    @Test func aShortPullBackToRestIsAccidentalAndHasNoRelease() throws {
        var puller = Puller()
        try puller.move(-4, at: 0, input: .mouse)
        try puller.move(0, at: 50)
        let record = try #require(puller.records.first)
        #expect(record.short && !record.armed && record.releaseDistance == nil && record.duration == nil)
        #expect(record.input == .mouse)
    }

    @Test func aSecondRefreshWithinTenSecondsIsRetriggered() throws {
        var puller = Puller()
        for start in [0.0, 5_000, 20_000] {
            try puller.move(-90, at: start)
            try puller.move(-90, .release, at: start + 100)
            try puller.move(0, at: start + 400)
        }
        #expect(puller.records.map(\.retriggered) == [false, true, false])
        #expect(puller.records.allSatisfy { $0.trigger == .refresh })
    }

    @Test func crossModeArmsAndTriggersOnTheCrossingAndEndsAtTheRelease() throws {
        var puller = Puller(.swiftUILab)
        try puller.move(-50, at: 0, input: .wheel, viewport: 1300)
        try puller.move(-85, at: 100)
        #expect(puller.records.isEmpty)
        try puller.move(-100, .release, at: 300)
        let record = try #require(puller.records.first)
        #expect(record.armed && record.trigger == .refresh && record.releaseDistance == 100 && record.band == .from1200)
    }

    @Test func aBottomPullLoadsMore() throws {
        var puller = Puller(.uikitBottom)
        try puller.move(4300, .scroll, at: 0, viewport: 700)
        try puller.move(4300 + 130, at: 100)
        try puller.move(4300 + 130, .release, at: 300)
        let record = try #require(puller.records.last)
        #expect(record.trigger == .loadMore)
    }

    /// The page sends the release and the rest position after it together: the distance at
    /// release is the release's, not the rest's.
    @Test func aReleaseAndTheRestInOneRequest() throws {
        var puller = Puller()
        try puller.move(-50, at: 0)
        try puller.batch([(-95, .drag, 100), (-95, .release, 200), (0, .scroll, 201)])
        let record = try #require(puller.records.first)
        #expect(record.trigger == .refresh && record.releaseDistance == 95 && record.farthest == 95 && record.duration == 200)
        // A whole pull in one request (a program) is a pull too.
        try puller.batch([(-120, .drag, 20_000), (-120, .release, 20_100), (0, .scroll, 20_101)])
        #expect(puller.records.count == 2 && puller.records.last?.trigger == .refresh)
    }

    /// A disabled edge is never pulled, as the engine sees it.
    @Test func aDisabledEdgeIsNoPull() throws {
        var puller = Puller(.uikitBottom)
        try puller.move(-90, at: 0)
        try puller.move(-90, .release, at: 100)
        #expect(puller.records.isEmpty)
    }

    @Test func momentumIsNoPull() throws {
        var puller = Puller()
        try puller.move(-20, .scroll, at: 0)
        try puller.move(0, .scroll, at: 100)
        #expect(puller.records.isEmpty)
    }
}

/// The counts kept: by pattern, preset, input and band, and nothing of who pulled.
@Suite struct PullInsightsTests {
    private static func record(_ input: Sample.Input?, trigger: ActionKind? = .refresh, distance: Double = 90) -> PullRecord {
        PullRecord(
            input: input, band: .from600, armed: trigger != nil, trigger: trigger, retriggered: false, farthest: distance, releaseDistance: distance,
            duration: 300)
    }

    @Test func nothingPerPersonIsKept() throws {
        let now = Mutex(1_800_000_000.0)
        let insights = PullInsights(patterns: [try FeedPattern("user:*")], clock: { now.withLock { $0 } })
        // A thousand people, each on their own feed and session, pull once.
        for person in 0..<1000 {
            let recorder = insights.recorder(feed: try #require(FeedName("user:\(person)")), preset: .standard)
            recorder.record(Self.record(.touch))
        }
        // What is kept is one tally per key per slot in each shard: not one per person.
        #expect(insights.storedTallies <= 2)
        let report = insights.report(since: nil, buckets: [0, 1])
        #expect(report.total[.begun] == 1000 && report.total[.refreshed] == 1000)
        #expect(report.byFeed.keys.sorted() == ["user:*"])
        var json = JSONWriter()
        json.insights(report, instance: "a")
        let text = String(decoding: json.buffer.readableBytesView, as: UTF8.self)
        #expect(!text.contains("user:1") && !text.contains("user:42"))
    }

    @Test func feedsAreCountedUnderTheFirstPatternThatNamesThemElseAll() throws {
        let insights = PullInsights(patterns: [try FeedPattern("team.*"), try FeedPattern("main")])
        #expect(insights.patterns.map(\.description) == ["team.*", "main", "*"])
        insights.recorder(feed: try #require(FeedName("team.eng")), preset: .standard).record(Self.record(.mouse))
        insights.recorder(feed: .main, preset: .iOS15).record(Self.record(.touch))
        insights.recorder(feed: try #require(FeedName("other")), preset: .standard).record(Self.record(nil, trigger: nil, distance: 5))
        let team = insights.report(since: nil, buckets: [0])
        #expect(team.total[.begun] == 1 && team.byInput.keys.sorted() == ["mouse"])
        let all = insights.report(since: nil, buckets: [0, 1, 2])
        #expect(all.total[.begun] == 3 && all.total[.refreshed] == 2 && all.total[.short] == 1)
        #expect(all.byInput.keys.sorted() == ["mouse", "touch", "unknown"])
        #expect(all.byPreset.keys.sorted() == ["default", "ios15"])
        #expect(all.total.distance.count == 3)
    }

    @Test func sinceLeavesOutEarlierSlotsAndADayIsKept() throws {
        let now = Mutex(1_800_000_000.0)
        let insights = PullInsights(patterns: [], clock: { now.withLock { $0 } })
        let recorder = insights.recorder(feed: .main, preset: .standard)
        recorder.record(Self.record(.touch))
        now.withLock { $0 += 3600 }
        recorder.record(Self.record(.touch))
        #expect(insights.report(since: nil, buckets: [0]).total[.begun] == 2)
        #expect(insights.report(since: 1_800_000_000 + 1800, buckets: [0]).total[.begun] == 1)
        #expect(insights.report(since: nil, buckets: [0]).series.count == 2)
        now.withLock { $0 += 25 * 3600 }
        recorder.record(Self.record(.touch))
        #expect(insights.report(since: nil, buckets: [0]).total[.begun] == 1)
        // A quiet day after: nothing older than a day is answered, though nothing new was
        // recorded to clear it; nor, with the clock set back, what now lies ahead of it.
        now.withLock { $0 += 25 * 3600 }
        #expect(insights.report(since: nil, buckets: [0]).total[.begun] == 0)
        #expect(insights.report(since: 0, buckets: [0]).total[.begun] == 0)
        now.withLock { $0 -= 25 * 3600 }
        recorder.record(Self.record(.touch))
        now.withLock { $0 -= 3600 }
        #expect(insights.report(since: nil, buckets: [0]).total[.begun] == 0)
    }
}

/// `GET /api/insights` over HTTP, and the samples that feed it.
@Suite struct InsightsRouteTests {
    private func pull(_ server: TestServer, _ session: String, samples: [String]) async throws {
        for sample in samples {
            let reply = try await server.post("/api/sessions/\(session)/samples", sample)
            #expect(reply.status == 200, "\(reply.text)")
        }
    }

    @Test func pullsAreCountedAndAnsweredOnLoopback() async throws {
        try await TestServer.run { server in
            let session = try await server.session()
            try await pull(
                server, session,
                samples: [
                    #"{"seq":1,"t":0,"y":-40,"phase":"drag","input":"touch","viewportHeight":700,"contentHeight":5000}"#,
                    #"{"seq":2,"t":100,"y":-95,"phase":"drag","input":"touch"}"#,
                    #"{"seq":3,"t":300,"y":-95,"phase":"release","input":"touch"}"#,
                ])
            let reply = try await server.get("/api/insights")
            #expect(reply.status == 200, "\(reply.text)")
            let total = try #require(reply.json["total"] as? [String: Any])
            #expect(total["begun"] as? Int == 1 && total["refreshed"] as? Int == 1 && total["armed"] as? Int == 1)
            let byInput = try #require(reply.json["byInput"] as? [String: Any])
            #expect(Set(byInput.keys) == ["touch"])
            let byBand = try #require(reply.json["byBand"] as? [String: Any])
            #expect(Set(byBand.keys) == ["600-899"])
            #expect(reply.json["instance"] as? String != nil)
            #expect(reply.json["feeds"] as? [String] == ["*"])

            let metrics = try await server.get("/metrics").text
            #expect(metrics.contains(#"ptr_pulls_total{outcome="refreshed",input="touch"} 1"#))
            #expect(metrics.contains("ptr_pull_distance_points_bucket"))
            #expect(!metrics.contains(session))
            let byPreset = try #require(reply.json["byPreset"] as? [String: Any])
            #expect(Set(byPreset.keys) == ["default"])
        }
    }

    /// A session with a configuration of its own (a threshold, a mode) is not judged as its
    /// preset's: its pulls are counted as `custom`; one that names its preset's own values is
    /// that preset's.
    @Test func aSessionsOwnConfigurationIsCountedAsCustom() async throws {
        try await TestServer.run { server in
            let samples = [
                #"{"seq":1,"t":0,"y":-40,"phase":"drag"}"#, #"{"seq":2,"t":100,"y":-130,"phase":"drag"}"#,
                #"{"seq":3,"t":300,"y":-130,"phase":"release"}"#,
            ]
            try await pull(server, try await server.session(#"{"config":{"top":{"threshold":120}}}"#), samples: samples)
            try await pull(server, try await server.session(#"{"preset":"ios15","config":{"top":{"threshold":"fit"}}}"#), samples: samples)
            try await pull(server, try await server.session(#"{"config":{"top":{"threshold":80}}}"#), samples: samples)
            let reply = try await server.get("/api/insights")
            let byPreset = try #require(reply.json["byPreset"] as? [String: [String: Any]])
            #expect(byPreset["custom"]?["begun"] as? Int == 2)
            #expect(byPreset["default"]?["begun"] as? Int == 1)
        }
    }

    @Test func badInputIsRefusedAndNothingIsCounted() async throws {
        try await TestServer.run { server in
            let session = try await server.session()
            for (body, status) in [
                (#"{"seq":1,"y":-90,"input":"finger"}"#, 400),
                (#"{"seq":1,"y":-90,"input":"touch","viewportHeight":-5}"#, 422),
                (#"{"seq":1,"y":-90,"input":"touch","viewportHeight":1e9}"#, 422),
                (#"{"samples":[{"seq":1,"y":-90,"input":"touch"},{"seq":2,"y":-90,"phase":"release","input":"pen"}]}"#, 400),
            ] {
                let reply = try await server.post("/api/sessions/\(session)/samples", body)
                #expect(reply.status == status, "\(body): \(reply.text)")
                #expect(reply.json["error"] as? String != nil)
            }
            for query in ["since=yesterday", "since=2026-13-01T00:00:00Z", "feed=bad%20name"] {
                let reply = try await server.get("/api/insights?\(query)")
                #expect(reply.status == 400, "\(query): \(reply.text)")
            }
            #expect(try await server.get("/api/insights?feed=team.*").status == 404)
            let reply = try await server.get("/api/insights")
            let total = try #require(reply.json["total"] as? [String: Any])
            #expect(total["begun"] as? Int == 0)
        }
    }

    @Test func insightsNeedAPublishOrInsightsRightOnEveryFeedOfAPattern() async throws {
        let keys = try await TestKeys.make()
        defer { keys.remove() }
        let configuration = TestServer.configuration {
            $0.authKeys = keys.files
            $0.publishToken = "publish-token-of-the-insights-test"
            $0.insightsFeeds = ["team.*", "user:*"]
        }
        try await TestServer.run(configuration) { server in
            func get(_ path: String, _ token: String?) async throws -> TestServer.Reply {
                try await server.get(path, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [])
            }
            #expect(try await get("/api/insights", nil).status == 401)
            let reader = try await keys.token(read: ["*"])
            #expect(try await get("/api/insights", reader).status == 403)
            let team = try await keys.token(insights: ["team.*"])
            let teamAnswer = try await get("/api/insights", team)
            #expect(teamAnswer.status == 200)
            #expect(teamAnswer.json["feeds"] as? [String] == ["team.*"])
            #expect(try await get("/api/insights?feed=user:*", team).status == 403)
            #expect(try await get("/api/insights?feed=*", team).status == 403)
            // A right on a part of a pattern is no right on the pattern.
            let eng = try await keys.token(publish: ["team.eng"])
            #expect(try await get("/api/insights?feed=team.*", eng).status == 403)
            let publisher = try await keys.token(publish: ["user:*"])
            #expect(try await get("/api/insights?feed=user:*", publisher).status == 200)
            let all = try await get("/api/insights", "publish-token-of-the-insights-test")
            #expect(all.json["feeds"] as? [String] == ["team.*", "user:*", "*"])
        }
    }
}
