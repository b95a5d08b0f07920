import RefreshEngine

@testable import RefreshClient

/// Performs a ``SampleQueue``'s actions as `RemoteSession` does, on a clock the test moves:
/// a turn ends after the samples pushed in it, the pacing timer and the pause fire in the
/// order they are due (each at its time), and every request sent is recorded, with the
/// number it has in the walk (1 for the first) and whether a pause was on when it left.
struct QueueOwner {
    struct Sent {
        var request: SampleQueue.Request
        var at: Duration
        var duringPause: Bool
    }

    var queue: SampleQueue
    private(set) var now = Duration.zero
    private(set) var sent: [Sent] = []
    private(set) var answered: Set<Int> = []
    /// When the pacing timer and the pause the queue asked for are due.
    private(set) var wake: Duration?
    private(set) var pauseEnds: Duration?
    private var turnEnds = false

    init(_ queue: SampleQueue) {
        self.queue = queue
    }

    /// Requests sent and not answered.
    var out: Int { sent.count - answered.count }

    /// Pushes `samples` in one turn; answers their `seq`s.
    mutating func push(_ samples: [Sample]) -> [Int] {
        var seqs: [Int] = []
        for sample in samples {
            let (seq, action) = queue.samplePushed(sample, now: now)
            seqs.append(seq)
            perform(action)
        }
        endTurn()
        return seqs
    }

    /// Answers the `number`th request sent.
    mutating func answer(_ number: Int, _ answer: SampleQueue.Answer) {
        answered.insert(number)
        perform(queue.requestFinished(sent[number - 1].request.id, answer, now: now))
        endTurn()
    }

    mutating func pass(_ time: Duration) {
        let target = now + time
        while let due = [wake, pauseEnds].compactMap({ $0 }).filter({ $0 <= target }).min() {
            now = due
            if pauseEnds == due {
                pauseEnds = nil
                perform(queue.pauseEnded(now: now))
            } else {
                wake = nil
                perform(queue.timerFired(now: now))
            }
            endTurn()
        }
        now = target
    }

    /// A new session: the owner stops its timers, as `RemoteSession` does.
    mutating func reset(_ config: RefreshConfig?) {
        queue.sessionReplaced(config: config)
        wake = nil
        pauseEnds = nil
        turnEnds = false
    }

    private mutating func endTurn() {
        guard turnEnds else { return }
        turnEnds = false
        perform(queue.turnEnded(now: now))
    }

    private mutating func perform(_ action: SampleQueue.Action) {
        switch action {
        case .send(let request): sent.append(Sent(request: request, at: now, duringPause: pauseEnds != nil))
        case .sendSoon: turnEnds = true
        case .wake(let after): wake = now + after
        case .pause(let wait): pauseEnds = now + wait
        case .none: break
        }
    }
}
