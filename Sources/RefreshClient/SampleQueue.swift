import RefreshEngine

/// The rules of the page's sample queue, as a state machine its owner performs: one request
/// of positions out at a time; a newer drag or scroll sample replaces a queued one; a release
/// replaces every queued position (it carries its own offset) and goes out at once, in a slot
/// of its own beside a request still out (the server applies samples by `seq`, so it may
/// overtake), and is never dropped, not even when the server turns it away for a while; a
/// refused request stops the queue for as long as the server asked.
///
/// It numbers the samples itself: `seq` strictly increases in the order samples leave, for
/// the session's whole life (its replacements included), so a sample put back after a
/// refusal is still newer than anything the server applied, and an app that keeps a
/// release's `seq` to ignore older states never waits for a restarted count.
///
/// It reads no clock and does no I/O: every input is an event, every answer the action to
/// perform, so its rules are tested with plain values.
struct SampleQueue {
    /// One request of samples, in `seq` order.
    struct Request: Equatable {
        var id: Int
        var samples: [Sample]
    }

    enum Action: Equatable {
        /// Post these samples in one request; report its answer with ``requestFinished(_:_:)``.
        case send(Request)
        /// Wait this long, then report ``pauseEnded()``.
        case pause(Duration)
        case none
    }

    /// How a request of samples ended.
    enum Answer: Equatable {
        /// Applied, or refused for good (a bad sample is not better the second time).
        case taken
        /// Not now: a `429`, a `503`, no connection. Send them again after the wait, unless
        /// newer ones replaced them.
        case notNow(retryAfter: Duration)
    }

    private var queued: [Sample] = []
    /// Requests out, by id; at most one of positions and one carrying a release.
    private var out: [Int: [Sample]] = [:]
    private var paused = false
    private var lastSeq = 0
    private var lastRequest = 0

    /// Nothing queued and nothing out: every sample pushed was taken (or dropped with its
    /// session).
    var isEmpty: Bool { queued.isEmpty && out.isEmpty }

    /// Queues `sample` (its `seq` replaced by the queue's next) and answers that `seq`.
    mutating func samplePushed(_ sample: Sample) -> (seq: Int, action: Action) {
        var sample = sample
        lastSeq += 1
        sample.seq = lastSeq
        if sample.phase == .release {
            queued.removeAll { $0.phase != .release }
            queued.append(sample)
        } else if let last = queued.last, last.phase != .release {
            queued[queued.count - 1] = sample
        } else {
            queued.append(sample)
        }
        return (lastSeq, sendIfFree())
    }

    mutating func requestFinished(_ id: Int, _ answer: Answer) -> Action {
        guard let batch = out.removeValue(forKey: id) else { return .none }
        switch answer {
        case .taken:
            return sendIfFree()
        case .notNow(let wait):
            putBack(batch)
            // One pause at a time: a second refusal meanwhile waits with the first.
            guard !paused else { return .none }
            paused = true
            return .pause(wait)
        }
    }

    mutating func pauseEnded() -> Action {
        guard paused else { return .none }
        paused = false
        return sendIfFree()
    }

    /// The session was replaced: its samples mean nothing to the new one, and the answers of
    /// its requests still out are not waited for.
    mutating func sessionReplaced() {
        queued = []
        out = [:]
        paused = false
    }

    /// The queued samples go out when their slot is free: a release's when one is queued and
    /// no release is out, else the positions' one.
    private mutating func sendIfFree() -> Action {
        guard !paused, !queued.isEmpty else { return .none }
        let releaseOut = out.values.contains { batch in batch.contains { $0.phase == .release } }
        let hasRelease = queued.contains { $0.phase == .release }
        let free = hasRelease ? !releaseOut : out.isEmpty
        guard free else { return .none }
        lastRequest += 1
        let request = Request(id: lastRequest, samples: queued)
        queued = []
        out[request.id] = request.samples
        return .send(request)
    }

    /// First in line again: a release always; a drag or scroll sample only while it is still
    /// the newest sample pushed (one pushed since, queued or sent, a release above all,
    /// supersedes it: a position re-sent after a release would put the finger back down).
    /// Every sample takes a new `seq`, in line order: samples sent meanwhile may be newer
    /// than the ones put back.
    private mutating func putBack(_ batch: [Sample]) {
        let newest = batch.last?.seq == lastSeq
        let kept = batch.enumerated().filter { index, sample in
            sample.phase == .release || (newest && index == batch.count - 1)
        }.map(\.element)
        queued = (kept + queued).map { sample in
            var sample = sample
            lastSeq += 1
            sample.seq = lastSeq
            return sample
        }
    }
}
