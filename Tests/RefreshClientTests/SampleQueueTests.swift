import RefreshEngine
import Testing

@testable import RefreshClient

/// The queue's rules, walked step by step: every push, answer and pause end with the action
/// the queue asks for.
@Suite struct SampleQueueTests {
    /// One input to the queue and what it must answer.
    enum Step {
        /// Pushes a sample; the queue answers this `seq` and this action.
        case push(Sample.Phase, y: Double, seq: Int, then: SampleQueue.Action)
        case finished(Int, SampleQueue.Answer, then: SampleQueue.Action)
        case pauseEnded(then: SampleQueue.Action)
        case replaced
        case empty(Bool)
    }

    static func drag(_ y: Double, _ seq: Int) -> Sample { Sample(seq: seq, y: y, phase: .drag) }
    static func release(_ y: Double, _ seq: Int) -> Sample { Sample(seq: seq, y: y, phase: .release) }
    static func scroll(_ y: Double, _ seq: Int) -> Sample { Sample(seq: seq, y: y, phase: .scroll) }
    static func send(_ id: Int, _ samples: Sample...) -> SampleQueue.Action { .send(.init(id: id, samples: samples)) }

    static let wait = Duration.seconds(1)

    static let walks: [(String, [Step])] = [
        (
            "one request of positions out at a time; a newer drag replaces the one queued",
            [
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .push(.drag, y: -20, seq: 2, then: .none),
                .push(.drag, y: -30, seq: 3, then: .none),
                .push(.scroll, y: -35, seq: 4, then: .none),
                .empty(false),
                .finished(1, .taken, then: send(2, scroll(-35, 4))),
                .finished(2, .taken, then: .none),
                .empty(true),
            ]
        ),
        (
            "a release goes out at once beside a drag still out, replacing the queued positions; later drags wait for the positions' slot",
            [
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .push(.drag, y: -90, seq: 2, then: .none),
                .push(.release, y: -95, seq: 3, then: send(2, release(-95, 3))),
                .push(.drag, y: -40, seq: 4, then: .none),
                .push(.drag, y: -30, seq: 5, then: .none),
                .finished(2, .taken, then: .none),
                .finished(1, .taken, then: send(3, drag(-30, 5))),
                .finished(3, .taken, then: .none),
                .empty(true),
            ]
        ),
        (
            "two releases in a row: the second waits for the first's slot, and both are sent",
            [
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .push(.release, y: -90, seq: 2, then: send(2, release(-90, 2))),
                .push(.release, y: -20, seq: 3, then: .none),
                .finished(2, .taken, then: send(3, release(-20, 3))),
                .finished(1, .taken, then: .none),
                .finished(3, .taken, then: .none),
                .empty(true),
            ]
        ),
        (
            "a refused release is put back with a newer seq and sent after the pause",
            [
                .push(.release, y: -90, seq: 1, then: send(1, release(-90, 1))),
                .finished(1, .notNow(retryAfter: wait), then: .pause(wait)),
                .empty(false),
                .push(.drag, y: -5, seq: 3, then: .none),
                .pauseEnded(then: send(2, release(-90, 2), drag(-5, 3))),
                .finished(2, .notNow(retryAfter: .seconds(2)), then: .pause(.seconds(2))),
                // The release again, and the drag (still the newest sample pushed) after it.
                .pauseEnded(then: send(3, release(-90, 4), drag(-5, 5))),
                .finished(3, .taken, then: .none),
                .empty(true),
            ]
        ),
        (
            "a refused release stays ahead of a drag pushed while it was out",
            [
                .push(.release, y: -90, seq: 1, then: send(1, release(-90, 1))),
                .push(.drag, y: -3, seq: 2, then: .none),
                .finished(1, .notNow(retryAfter: wait), then: .pause(wait)),
                .pauseEnded(then: send(2, release(-90, 3), drag(-3, 4))),
            ]
        ),
        (
            "a refused drag is put back while nothing newer was pushed",
            [
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .finished(1, .notNow(retryAfter: wait), then: .pause(wait)),
                .pauseEnded(then: send(2, drag(-10, 2))),
            ]
        ),
        (
            "a refused drag is dropped when a newer one is queued",
            [
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .push(.drag, y: -20, seq: 2, then: .none),
                .finished(1, .notNow(retryAfter: wait), then: .pause(wait)),
                .pauseEnded(then: send(2, drag(-20, 3))),
            ]
        ),
        (
            "a refused drag is dropped when a newer one was pushed during the pause",
            [
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .finished(1, .notNow(retryAfter: wait), then: .pause(wait)),
                .push(.drag, y: -20, seq: 3, then: .none),
                .pauseEnded(then: send(2, drag(-20, 3))),
            ]
        ),
        (
            "positions pushed after a release wait for it; a refused release comes back ahead of them",
            [
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .push(.release, y: -90, seq: 2, then: send(2, release(-90, 2))),
                .push(.drag, y: -40, seq: 3, then: .none),
                .finished(1, .taken, then: .none),
                .finished(2, .notNow(retryAfter: wait), then: .pause(wait)),
                .pauseEnded(then: send(3, release(-90, 4), drag(-40, 5))),
            ]
        ),
        (
            "a refused drag is dropped for a newer drag, a refused release never",
            [
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .push(.release, y: -90, seq: 2, then: send(2, release(-90, 2))),
                .push(.drag, y: -50, seq: 3, then: .none),
                .finished(1, .notNow(retryAfter: wait), then: .pause(wait)),
                .finished(2, .notNow(retryAfter: wait), then: .none),
                .pauseEnded(then: send(3, release(-90, 5), drag(-50, 6))),
            ]
        ),
        (
            "nothing goes out during a pause, and answers or pause ends out of turn do nothing",
            [
                .pauseEnded(then: .none),
                .finished(7, .taken, then: .none),
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .pauseEnded(then: .none),
                .finished(1, .notNow(retryAfter: wait), then: .pause(wait)),
                .push(.drag, y: -20, seq: 3, then: .none),
                .push(.release, y: -20, seq: 4, then: .none),
                .finished(1, .taken, then: .none),
                .pauseEnded(then: send(2, release(-20, 4))),
                .pauseEnded(then: .none),
            ]
        ),
        (
            "a replaced session forgets the queue and the requests still out, never the numbering",
            [
                .push(.drag, y: -10, seq: 1, then: send(1, drag(-10, 1))),
                .push(.release, y: -90, seq: 2, then: send(2, release(-90, 2))),
                .push(.drag, y: -20, seq: 3, then: .none),
                .replaced,
                .empty(true),
                .finished(1, .taken, then: .none),
                .push(.drag, y: -5, seq: 4, then: send(3, drag(-5, 4))),
                .finished(3, .taken, then: .none),
                .empty(true),
            ]
        ),
        (
            "a replacement during a pause: the pause's end sends nothing",
            [
                .push(.release, y: -90, seq: 1, then: send(1, release(-90, 1))),
                .finished(1, .notNow(retryAfter: wait), then: .pause(wait)),
                .replaced,
                .pauseEnded(then: .none),
                .push(.drag, y: -5, seq: 3, then: send(2, drag(-5, 3))),
            ]
        ),
    ]

    @Test(arguments: walks.indices)
    func walk(_ index: Int) {
        let (name, steps) = Self.walks[index]
        var queue = SampleQueue()
        for (number, step) in steps.enumerated() {
            let at = Comment(rawValue: "\(name), step \(number + 1)")
            switch step {
            case .push(let phase, let y, let seq, let expected):
                // The sample's own seq is replaced by the queue's.
                let (given, action) = queue.samplePushed(Sample(seq: 999, y: y, phase: phase))
                #expect(given == seq, at)
                #expect(action == expected, at)
            case .finished(let id, let answer, let expected):
                #expect(queue.requestFinished(id, answer) == expected, at)
            case .pauseEnded(let expected):
                #expect(queue.pauseEnded() == expected, at)
            case .replaced:
                queue.sessionReplaced()
            case .empty(let expected):
                #expect(queue.isEmpty == expected, at)
            }
        }
    }

    /// Heights are sent only when they change, so a sample that takes another's place (a
    /// newer position, a release, the one after a refused position) keeps the heights it did
    /// not give itself.
    @Test func aSampleThatTakesAnothersPlaceKeepsItsHeights() {
        var queue = SampleQueue()
        #expect(queue.samplePushed(Sample(seq: 0, y: -10)).action == Self.send(1, Sample(seq: 1, y: -10)))
        _ = queue.samplePushed(Sample(seq: 0, y: -20, contentHeight: 2000, viewportHeight: 800))
        _ = queue.samplePushed(Sample(seq: 0, y: -30))
        #expect(queue.requestFinished(1, .taken) == Self.send(2, Sample(seq: 3, y: -30, contentHeight: 2000, viewportHeight: 800)))
        _ = queue.samplePushed(Sample(seq: 0, y: -40, contentHeight: 2100))
        #expect(
            queue.samplePushed(Sample(seq: 0, y: -40, phase: .release)).action
                == Self.send(3, Sample(seq: 5, y: -40, phase: .release, contentHeight: 2100)))
        _ = queue.samplePushed(Sample(seq: 0, y: -50))
        #expect(queue.requestFinished(2, .notNow(retryAfter: Self.wait)) == .pause(Self.wait))
        #expect(queue.requestFinished(3, .taken) == .none)
        #expect(queue.pauseEnded() == Self.send(4, Sample(seq: 7, y: -50, contentHeight: 2000, viewportHeight: 800)))
    }

    /// Random walks, each checked against the rules: a request of positions only when none
    /// is out, a request with a release only beside a request of positions; nothing sent during a
    /// pause; `seq` strictly increasing in the order samples leave; a queued position
    /// replaced by a newer one; every release pushed taken once, in the order pushed.
    @Test(arguments: 0..<20)
    func randomWalk(_ seed: UInt64) {
        var random = SplitMix(seed: seed)
        var queue = SampleQueue()
        var out: [Int: [Sample]] = [:]
        var paused = false
        var lastSent = 0
        var releasesPushed: [Double] = []
        var releasesTaken: [Double] = []
        var nextY = 1.0

        func perform(_ action: SampleQueue.Action) {
            switch action {
            case .send(let request):
                let batch = request.samples
                let carriesRelease = { (batch: [Sample]) in batch.contains { $0.phase == .release } }
                #expect(!paused, "seed \(seed): a request during a pause")
                if carriesRelease(batch) {
                    #expect(!out.values.contains(where: carriesRelease), "seed \(seed): a second release request while one is out")
                } else {
                    #expect(out.isEmpty, "seed \(seed): a request of positions while another request is out")
                }
                #expect(!batch.isEmpty)
                #expect(out[request.id] == nil)
                for sample in batch {
                    #expect(sample.seq > lastSent, "seed \(seed): seq \(sample.seq) after \(lastSent)")
                    lastSent = sample.seq
                }
                // A newer position replaced the one queued before it: two positions are never
                // sent back to back, only with a release between them.
                let positions = zip(batch, batch.dropFirst()).filter { $0.phase != .release && $1.phase != .release }
                #expect(positions.isEmpty, "seed \(seed): two positions in a row in \(batch)")
                out[request.id] = batch
            case .pause:
                #expect(!paused)
                paused = true
            case .none:
                break
            }
        }

        func finish(_ id: Int, refused: Bool) {
            let batch = out.removeValue(forKey: id) ?? []
            if refused {
                perform(queue.requestFinished(id, .notNow(retryAfter: .seconds(1))))
            } else {
                releasesTaken += batch.filter { $0.phase == .release }.map { -$0.y }
                perform(queue.requestFinished(id, .taken))
            }
        }

        for _ in 0..<300 {
            switch random.next() % 6 {
            case 0, 1, 2:
                nextY += 1
                let phase: Sample.Phase = random.next() % 4 == 0 ? .release : .drag
                if phase == .release { releasesPushed.append(nextY) }
                perform(queue.samplePushed(Sample(seq: 0, y: -nextY, phase: phase)).action)
            case 3, 4:
                guard let id = out.keys.sorted().randomElement(using: &random) else { continue }
                finish(id, refused: random.next() % 3 == 0)
            default:
                guard paused else { continue }
                paused = false
                perform(queue.pauseEnded())
            }
        }
        // Drain: end the pause, take every request.
        for _ in 0..<1000 {
            if paused {
                paused = false
                perform(queue.pauseEnded())
            } else if let id = out.keys.min() {
                finish(id, refused: false)
            } else {
                break
            }
        }
        #expect(queue.isEmpty)
        // Releases come back in the order pushed even when one is refused and sent again.
        #expect(releasesTaken == releasesPushed, "seed \(seed): every release taken once, in order")
    }
}

/// A small seeded generator, so a failing walk can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
