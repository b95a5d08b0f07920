import RefreshEngine

/// The rules of the page's sample queue, as a state machine its owner performs: one request
/// out at a time; a newer drag or scroll sample replaces a queued one; a release replaces
/// every queued position (it carries its own offset) and goes out at once, in a slot of its
/// own beside a request of positions still out (the server applies samples by `seq`, so it
/// overtakes them), and is never dropped, not even when the server turns it away for a while; a
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

    /// A sample and when the app pushed it: `seq` changes when a sample is put back, the
    /// order the app pushed samples in does not.
    private struct Entry {
        var sample: Sample
        let pushed: Int

        /// Heights are sent only when they change: a sample that takes another's place keeps
        /// the heights it did not give itself, or the server would never learn them.
        mutating func inherit(from replaced: Entry) {
            sample.contentHeight = sample.contentHeight ?? replaced.sample.contentHeight
            sample.viewportHeight = sample.viewportHeight ?? replaced.sample.viewportHeight
        }
    }

    private var queued: [Entry] = []
    /// Requests out, by id: one, or a request of positions and one carrying a release.
    private var out: [Int: [Entry]] = [:]
    private var paused = false
    private var lastSeq = 0
    private var lastPushed = 0
    private var lastRequest = 0

    /// Nothing queued and nothing out: every sample pushed was taken (or dropped with its
    /// session).
    var isEmpty: Bool { queued.isEmpty && out.isEmpty }

    /// Queues `sample` (its `seq` replaced by the queue's next) and answers that `seq`.
    mutating func samplePushed(_ sample: Sample) -> (seq: Int, action: Action) {
        var sample = sample
        lastSeq += 1
        sample.seq = lastSeq
        lastPushed += 1
        var entry = Entry(sample: sample, pushed: lastPushed)
        if sample.phase == .release {
            for replaced in queued where replaced.sample.phase != .release { entry.inherit(from: replaced) }
            queued.removeAll { $0.sample.phase != .release }
            queued.append(entry)
        } else if let last = queued.last, last.sample.phase != .release {
            entry.inherit(from: last)
            queued[queued.count - 1] = entry
        } else {
            queued.append(entry)
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
        // Positions wait for everything out (a release above all: one pushed after it must not
        // reach the server before it); a release waits only for another release.
        let releaseOut = out.values.contains { batch in batch.contains { $0.sample.phase == .release } }
        let hasRelease = queued.contains { $0.sample.phase == .release }
        let free = hasRelease ? !releaseOut : out.isEmpty
        guard free else { return .none }
        lastRequest += 1
        out[lastRequest] = queued
        defer { queued = [] }
        return .send(Request(id: lastRequest, samples: queued.map(\.sample)))
    }

    /// In line again: a release always; a drag or scroll sample only while it is still the
    /// newest sample the app pushed (one pushed since, queued or sent, a release above all,
    /// supersedes it: a position re-sent after a release would put the finger back down).
    /// The line keeps the order the app pushed in, and every sample in it takes a new `seq`
    /// in that order: samples sent meanwhile may be newer than the ones put back.
    private mutating func putBack(_ batch: [Entry]) {
        let newest = lastPushed
        let keeps = { (entry: Entry) in entry.sample.phase == .release || entry.pushed == newest }
        var line = (batch.filter(keeps) + queued).sorted { $0.pushed < $1.pushed }
        for dropped in batch where !keeps(dropped) {
            if let next = line.firstIndex(where: { $0.pushed > dropped.pushed }) { line[next].inherit(from: dropped) }
        }
        queued = line.map { entry in
            var entry = entry
            lastSeq += 1
            entry.sample.seq = lastSeq
            return entry
        }
    }
}
