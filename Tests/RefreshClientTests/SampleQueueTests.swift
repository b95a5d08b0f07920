import RefreshEngine
import Testing

@testable import RefreshClient

/// The queue's rules: the shared table of cases (the page walks it too), the actions an owner
/// performs, and random walks checked against the rules.
@Suite struct SampleQueueTests {
    static let table = try? QueueTable.loaded.get()

    @Test func theSharedTableIsRead() throws {
        let table = try QueueTable.loaded.get()
        #expect(table.cases.count >= 20)
        #expect(table.watch.count >= 5)
    }

    /// Every case of the shared table, walked as `RemoteSession` performs the queue: after
    /// each step, the requests that left during it, the `seq`s given, what is still out.
    @Test(arguments: table?.cases ?? [])
    func walk(_ walk: QueueTable.Case) throws {
        let table = try QueueTable.loaded.get()
        let config = (walk.config ?? table.config).refreshConfig
        var owner = QueueOwner(SampleQueue(config: config))
        for (number, step) in walk.steps.enumerated() {
            let at = Comment(rawValue: "step \(number + 1): \(step)")
            let before = owner.sent.count
            switch step.input {
            case .push(let samples):
                let seqs = owner.push(samples.map(\.sample))
                if let expected = step.seqs { #expect(seqs == expected, at) }
            case .time(let time):
                owner.pass(time)
            case .answer(let request, let answer):
                try #require(request <= owner.sent.count, at)
                owner.answer(request, answer)
            case .reset(let next):
                owner.reset((next ?? walk.config ?? table.config).refreshConfig)
            }
            #expect(owner.sent[before...].map { QueueTable.Request($0.request) } == step.sent, at)
            if let out = step.out { #expect(owner.out == out, at) }
            if let empty = step.empty { #expect(owner.queue.isEmpty == empty, at) }
        }
    }

    @Test(arguments: table?.watch ?? [])
    func thresholdWatch(_ walk: QueueTable.Watch) {
        var watch = ThresholdWatch(walk.config.refreshConfig)
        #expect(walk.samples.map { watch.crosses($0.sample) } == walk.crosses)
    }

    static func drag(_ y: Double, _ seq: Int = 0) -> Sample { Sample(seq: seq, y: y, phase: .drag) }
    static func release(_ y: Double, _ seq: Int = 0) -> Sample { Sample(seq: seq, y: y, phase: .release) }
    static func send(_ id: Int, _ slot: SampleQueue.Slot, _ samples: Sample...) -> SampleQueue.Action {
        .send(.init(id: id, slot: slot, samples: samples))
    }

    static let frame = SampleQueue.frame
    static let wait = Duration.seconds(1)

    /// What the owner is asked to do, action by action: samples pushed wait for the end of
    /// the turn, a position too soon for its turn asks for a timer, a refusal for a pause
    /// (none when a pause already lasts as long), and a timer or pause that fires early, or
    /// an answer for no request out, does nothing.
    @Test func theActionsTheOwnerPerforms() {
        var queue = SampleQueue()
        #expect(queue.turnEnded(now: .zero) == .none)
        #expect(queue.pushed(Self.drag(-10), now: .zero) == Pushed(1, .sendSoon))
        #expect(queue.pushed(Self.drag(-15), now: .zero) == Pushed(2, .none))
        #expect(queue.turnEnded(now: .zero) == Self.send(1, .paced, Self.drag(-15, 2)))
        #expect(queue.turnEnded(now: .zero) == .none)
        #expect(queue.pushed(Self.drag(-20), now: .milliseconds(10)) == Pushed(3, .wake(after: Self.frame - .milliseconds(10))))
        #expect(queue.pushed(Self.drag(-30), now: .milliseconds(12)) == Pushed(4, .none))
        #expect(queue.timerFired(now: Self.frame - .nanoseconds(1)) == .none)
        #expect(queue.timerFired(now: Self.frame) == Self.send(2, .paced, Self.drag(-30, 4)))
        #expect(queue.timerFired(now: Self.frame) == .none)
        // The newest position is put back; the older one is dropped, and the same wait asks
        // for no second pause.
        #expect(queue.requestFinished(2, .notNow(retryAfter: Self.wait), now: Self.frame) == .pause(Self.wait))
        #expect(queue.requestFinished(1, .notNow(retryAfter: Self.wait), now: Self.frame) == .none)
        #expect(queue.requestFinished(1, .taken, now: Self.frame) == .none)
        #expect(queue.requestFinished(7, .taken, now: Self.frame) == .none)
        #expect(queue.pushed(Self.release(-40), now: Self.frame) == Pushed(7, .none))
        #expect(queue.pauseEnded(now: Self.frame + Self.wait - .nanoseconds(1)) == .none)
        #expect(queue.pushed(Self.drag(-50), now: Self.frame) == Pushed(8, .none))
        #expect(queue.pauseEnded(now: Self.frame + Self.wait) == Self.send(3, .release, Self.release(-40, 7), Self.drag(-50, 8)))
        #expect(queue.pauseEnded(now: Self.frame + Self.wait) == .none)
        #expect(queue.requestFinished(3, .notNow(retryAfter: Self.wait), now: .seconds(2)) == .pause(Self.wait))
        #expect(queue.requestFinished(3, .notNow(retryAfter: .seconds(5)), now: .seconds(2)) == .none)
        #expect(queue.isEmpty == false)
        queue.sessionReplaced(config: nil)
        #expect(queue.isEmpty)
        #expect(queue.pauseEnded(now: .seconds(3)) == .none)
        #expect(queue.pushed(Self.drag(-5), now: .seconds(3)) == Pushed(11, .sendSoon))
    }

    /// A refused request is answered once: a second answer for it does nothing, and the pause
    /// a later refusal asks for lasts as long as the longer of the two.
    @Test func aLaterRefusalLengthensThePauseOnly() {
        var queue = SampleQueue()
        _ = queue.samplePushed(Self.drag(-10), now: .zero)
        #expect(queue.turnEnded(now: .zero) == Self.send(1, .paced, Self.drag(-10, 1)))
        _ = queue.samplePushed(Self.drag(-20), now: .milliseconds(20))
        #expect(queue.turnEnded(now: .milliseconds(20)) == Self.send(2, .paced, Self.drag(-20, 2)))
        #expect(queue.requestFinished(1, .notNow(retryAfter: .seconds(1)), now: .milliseconds(20)) == .pause(.seconds(1)))
        #expect(queue.requestFinished(1, .notNow(retryAfter: .seconds(9)), now: .milliseconds(20)) == .none)
        #expect(queue.requestFinished(2, .notNow(retryAfter: .seconds(2)), now: .milliseconds(500)) == .pause(.seconds(2)))
        #expect(queue.pauseEnded(now: .milliseconds(1020)) == .none)
        #expect(queue.pauseEnded(now: .milliseconds(2500)) == Self.send(3, .paced, Self.drag(-20, 3)))
    }

    /// Random walks, each checked against the rules: at most `maxInFlight` paced requests out,
    /// one crossing and one release; no position sent while a release is out; nothing sent
    /// during a pause; without thresholds (no crossings), a paced request at least a frame
    /// after the one before it; `seq` strictly increasing in the order samples leave; a
    /// queued position replaced by a newer one; every release pushed taken once, in order.
    @Test(arguments: 0..<40)
    func randomWalk(_ seed: UInt64) {
        var random = SplitMix(seed: seed)
        // Odd seeds judge crossings by the default thresholds; even ones have none, so every
        // paced request waits for its turn.
        let thresholds = seed % 2 == 1
        var owner = QueueOwner(SampleQueue(config: thresholds ? Preset.standard.config : nil))
        var out: [Int: SampleQueue.Slot] = [:]
        var checked = 0
        var lastSeq = 0
        var lastSent: Duration?
        var releasesPushed: [Double] = []
        var releasesTaken: [Double] = []
        var nextY = 0.0

        func check() {
            for sent in owner.sent[checked...] {
                checked += 1
                let request = sent.request
                let slots = Array(out.values)
                #expect(!sent.duringPause, "seed \(seed): a request during a pause")
                #expect(!slots.contains(.release) || request.slot == .release, "seed \(seed): a position overtaking a release")
                switch request.slot {
                case .paced:
                    #expect(slots.count(where: { $0 == .paced }) < SampleQueue.maxInFlight, "seed \(seed): a fourth paced request")
                    if !thresholds, let lastSent { #expect(sent.at - lastSent >= SampleQueue.frame, "seed \(seed): a paced request before its turn") }
                case .crossing:
                    #expect(thresholds && !slots.contains(.crossing), "seed \(seed): a second crossing request")
                case .release:
                    #expect(!slots.contains(.release), "seed \(seed): a second release request")
                    #expect(request.samples.first?.phase == .release)
                }
                if request.slot != .release { #expect(request.samples.count == 1 && request.samples[0].phase != .release) }
                for sample in request.samples {
                    #expect(sample.seq > lastSeq, "seed \(seed): seq \(sample.seq) after \(lastSeq)")
                    lastSeq = sample.seq
                }
                // A newer position replaced the one queued before it: two positions are never
                // sent back to back, only with a release between them.
                let positions = zip(request.samples, request.samples.dropFirst()).filter { $0.phase != .release && $1.phase != .release }
                #expect(positions.isEmpty, "seed \(seed): two positions in a row in \(request.samples)")
                out[checked] = request.slot
                lastSent = sent.at
            }
        }

        func answer(_ number: Int, refused: Bool) {
            out.removeValue(forKey: number)
            if refused {
                owner.answer(number, .notNow(retryAfter: .milliseconds(Int(random.next() % 300))))
            } else {
                releasesTaken += owner.sent[number - 1].request.samples.filter { $0.phase == .release }.map { -$0.y }
                owner.answer(number, .taken)
            }
            check()
        }

        for _ in 0..<400 {
            switch random.next() % 8 {
            case 0, 1, 2:
                nextY += 1
                let phase: Sample.Phase = random.next() % 5 == 0 ? .release : .drag
                // Offsets that wander across the top threshold (80) and back.
                let y = -Double(Int(nextY) % 120)
                if phase == .release { releasesPushed.append(nextY) }
                _ = owner.push([Sample(seq: 0, y: phase == .release ? -nextY : y, phase: phase)])
                check()
            case 3, 4:
                guard let number = out.keys.sorted().randomElement(using: &random) else { continue }
                answer(number, refused: random.next() % 3 == 0)
            default:
                owner.pass(.milliseconds(Int(random.next() % 40)))
                check()
            }
        }
        // Drain: let time pass, take every request.
        for _ in 0..<1000 {
            if let number = out.keys.min() {
                answer(number, refused: false)
            } else if !owner.queue.isEmpty {
                owner.pass(.seconds(1))
                check()
            } else {
                break
            }
        }
        #expect(owner.queue.isEmpty)
        // Releases come back in the order pushed even when one is refused and sent again.
        #expect(releasesTaken == releasesPushed, "seed \(seed): every release taken once, in order")
    }
}

/// ``SampleQueue/samplePushed(_:now:)``'s answer as one value, to compare whole.
struct Pushed: Equatable {
    var seq: Int
    var action: SampleQueue.Action

    init(_ seq: Int, _ action: SampleQueue.Action) {
        self.seq = seq
        self.action = action
    }
}

extension SampleQueue {
    mutating func pushed(_ sample: Sample, now: Duration) -> Pushed {
        let (seq, action) = samplePushed(sample, now: now)
        return Pushed(seq, action)
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
