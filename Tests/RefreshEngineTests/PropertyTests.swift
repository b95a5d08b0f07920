import Testing

@testable import RefreshEngine

/// SplitMix64: small, fast and reproducible, so a failing seed can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random inputs of every kind an owner can give, walked against invariants that must hold
/// after each one, whatever the order.
@Suite struct PropertyTests {
    static let seeds: [UInt64] = Array(1...40)

    @Test(arguments: Preset.allCases)
    func invariantsHoldForRandomInputs(preset: Preset) throws {
        for seed in Self.seeds {
            try walk(preset: preset, seed: seed, steps: 600)
        }
    }

    private func walk(preset: Preset, seed: UInt64, steps: Int) throws {
        var random = SeededGenerator(state: seed)
        var engine = RefreshEngine(config: preset.config)
        var seq = 0
        // What the owner believes is running: started and not yet cancelled or finished.
        var running: [Job] = []
        var finishedIDs: [ActionID] = []

        func perform(_ effects: Effects) {
            if let cancelled = effects.cancel {
                #expect(running.contains(cancelled), "seed \(seed): cancelled a job that was not running")
                running.removeAll { $0 == cancelled }
            }
            if let started = effects.start {
                #expect(running.isEmpty, "seed \(seed): started \(started) while \(running) runs")
                #expect(!finishedIDs.contains(started.id), "seed \(seed): reused an action id")
                running.append(started)
            }
        }

        for _ in 0..<steps {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<70:
                seq += Int.random(in: -2...3, using: &random)
                let y: Double =
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: Double.random(in: -300...0, using: &random)
                    case 1: Double.random(in: -20...20, using: &random)
                    case 2: Double.random(in: 0...4000, using: &random)
                    default: Double.random(in: 3000...3500, using: &random)
                    }
                let phase = Sample.Phase.allCases.randomElement(using: &random)!
                let heights = Int.random(in: 0..<10, using: &random) == 0
                let sample = Sample(
                    seq: seq, t: Double(abs(seq)), y: y, phase: phase,
                    contentHeight: heights ? Double.random(in: 0...5000, using: &random) : nil,
                    viewportHeight: heights ? Double.random(in: 100...1000, using: &random) : nil)
                if sample.seq < 0 { continue }
                perform(try engine.sampleReceived(sample))
            case 70..<76:
                let bad = [Double.nan, .infinity, -.infinity, 2e7, -2e7].randomElement(using: &random)!
                let before = (engine.gestureState, engine.runningJob, engine.ignoredSamples, engine.hasMore)
                let sample = Sample(seq: seq + 1, y: bad, phase: .release)
                #expect(throws: SampleError.self) { try engine.sampleReceived(sample) }
                let after = (engine.gestureState, engine.runningJob, engine.ignoredSamples, engine.hasMore)
                #expect(before == after, "seed \(seed): a refused sample changed the engine")
            case 76..<82:
                switch engine.refreshRequested() {
                case .started(let job, let effects):
                    #expect(effects.start == job)
                    perform(effects)
                case .joined(let job):
                    #expect(running == [job])
                case .refused:
                    Issue.record("seed \(seed): a refresh was refused")
                }
            case 82..<88:
                switch engine.loadMoreRequested() {
                case .started(let job, let effects):
                    #expect(effects.start == job)
                    perform(effects)
                case .joined(let job), .refused(let job):
                    #expect(running == [job])
                }
            case 88..<92:
                perform(engine.cancelRequested(Bool.random(using: &random) ? .refresh : .loadMore))
            default:
                // Finish the running job, or one long gone (a late reply).
                if let job = running.first, Int.random(in: 0..<5, using: &random) > 0 {
                    let outcome = Outcome.allCases.randomElement(using: &random)!
                    let effects = engine.actionFinished(job.id, outcome: outcome, hasMore: Bool.random(using: &random))
                    #expect(effects.start == nil && effects.cancel == nil)
                    running.removeAll()
                    finishedIDs.append(job.id)
                } else if let stale = finishedIDs.randomElement(using: &random) {
                    #expect(engine.actionFinished(stale, outcome: .completed) == .none)
                }
            }
            try check(engine.gestureState, engine: engine, running: running, seed: seed)
        }
    }

    private func check(_ state: GestureState, engine: RefreshEngine, running: [Job], seed: UInt64) throws {
        #expect(running.count <= 1)
        #expect(engine.runningJob == running.first, "seed \(seed): the engine and its owner disagree")
        #expect((0...1).contains(state.pull), "seed \(seed): pull \(state.pull)")
        #expect((0...180).contains(state.rotation), "seed \(seed): rotation \(state.rotation)")
        #expect(state.distance >= 0 && state.indicatorOffset >= state.distance)
        #expect(state.reveal <= 0)
        switch state.phase {
        case .refreshing:
            #expect(running.first?.kind == .refresh && state.edge == .top)
            #expect(state.indicatorOffset > 0, "seed \(seed): the refreshing indicator was not held")
        case .loading:
            #expect(running.first?.kind == .loadMore && state.edge == .bottom)
        case .armed:
            #expect(state.pull == 1 && state.edge != nil)
        case .pulling:
            #expect(state.distance > 0 && state.edge != nil)
        case .idle:
            #expect(running.first?.kind != .refresh)
        }
        if running.first?.kind == .refresh { #expect(state.phase == .refreshing) }
    }
}
