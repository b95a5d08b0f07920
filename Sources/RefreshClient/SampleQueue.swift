import RefreshEngine

/// The rules of the page's sample queue, as a state machine its owner performs: one request
/// out at a time; a newer drag or scroll sample replaces a queued one; a release replaces
/// every queued position (it carries its own offset), goes out with the next request, and is
/// never dropped, not even when the server turns it away for a while; a refused request stops
/// the queue for as long as the server asked.
///
/// It numbers the samples itself: `seq` strictly increases in the order samples leave, so a
/// sample put back after a refusal is still newer than anything the server applied.
///
/// It reads no clock and does no I/O: every input is an event, every answer the action to
/// perform, so its rules are tested with plain values.
struct SampleQueue {
    enum Action: Equatable {
        /// Post these samples, in this order, in one request; report the answer with
        /// ``requestFinished(_:)``.
        case send([Sample])
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

    private enum State: Equatable {
        case idle
        /// A request is out; `queued` waits for its answer.
        case sending(batch: [Sample])
        /// The server asked for a wait.
        case paused
    }

    private var state = State.idle
    private var queued: [Sample] = []
    private var lastSeq = 0

    /// Samples waiting, for tests and for `flush`.
    var isEmpty: Bool { queued.isEmpty && state == .idle }

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
        return (lastSeq, sendIfIdle())
    }

    mutating func requestFinished(_ answer: Answer) -> Action {
        guard case .sending(let batch) = state else { return .none }
        switch answer {
        case .taken:
            state = .idle
            return sendIfIdle()
        case .notNow(let wait):
            putBack(batch)
            state = .paused
            return .pause(wait)
        }
    }

    mutating func pauseEnded() -> Action {
        guard state == .paused else { return .none }
        state = .idle
        return sendIfIdle()
    }

    /// The session was replaced: its samples mean nothing to the new one.
    mutating func sessionReplaced() {
        queued = []
        lastSeq = 0
        // A request still out for the old session reports back into a queue that forgot it.
        state = .idle
    }

    private mutating func sendIfIdle() -> Action {
        guard state == .idle, !queued.isEmpty else { return .none }
        let batch = queued
        queued = []
        state = .sending(batch: batch)
        return .send(batch)
    }

    /// First in line again: a release always; a drag or scroll sample only while it is still
    /// the newest position (nothing queued after it). Every sample takes a new `seq`, in line
    /// order: samples sent meanwhile may be newer than the ones put back.
    private mutating func putBack(_ batch: [Sample]) {
        let newerPosition = queued.contains { $0.phase != .release }
        let kept = batch.enumerated().filter { index, sample in
            sample.phase == .release || (!newerPosition && index == batch.count - 1)
        }.map(\.element)
        queued = (kept + queued).map { sample in
            var sample = sample
            lastSeq += 1
            sample.seq = lastSeq
            return sample
        }
    }
}
