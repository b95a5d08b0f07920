import RefreshEngine

/// The sample queue: when each sample goes out, and in which request. This comment is the
/// statement of the rule; the page's `SampleQueue` (`Public/pull-to-refresh/session.js`)
/// follows the same numbered rules, and one table of cases
/// (`Tests/fixtures/sample-queue-cases.json`) is walked by both.
///
/// 1. **Slots.** Up to `maxInFlight` (3) paced requests out at once, one crossing request
///    and one release request: five at most, which with the event stream are the six
///    connections HTTP/1.1 gives a page, so none waits for a connection.
/// 2. **Pacing.** A paced request goes out one spacing after the last request of any slot,
///    or at once when that is past: the spacing is a frame (1/60 s) or the round trip
///    divided by `maxInFlight`, whichever is longer, so the newest position never waits
///    longer than that. The round trip is smoothed: each request taken moves it a quarter of
///    the way to how long that request took.
/// 3. **Replacement.** A newer drag or scroll sample replaces a queued one. The newcomer
///    keeps the heights it does not give itself (heights are sent only when they change).
/// 4. **Release.** A release replaces every queued position (keeping their heights) and
///    goes out at once, whatever its turn, in the release slot, with what is pushed after it
///    in the same turn (where the list rests). A second release waits for the first's
///    answer, and positions pushed while a release is out wait for it too: the server
///    ignores a sample older than one it applied, so nothing may overtake a release.
/// 5. **Crossing.** A position on the other side of a threshold than the sample before it,
///    as the server judges from the session's config (``ThresholdWatch``), goes out at once,
///    whatever its turn: in the crossing slot, or while that is out, in a free paced slot.
/// 6. **Refusal.** A request the server cannot take now (`429`, `503`, no connection) puts
///    back its releases, and its position while that is still the newest sample pushed (else
///    the next in line keeps its heights); a refused crossing is still a crossing. Nothing
///    goes out until the wait the server asked for is over; a later refusal may lengthen
///    the wait, never shorten it. A request taken, or refused for good, is done.
/// 7. **Numbering.** The queue gives every sample its `seq`, strictly increasing in the
///    order samples leave, for the queue's whole life; samples put back take new ones, in
///    the order they were pushed. So a sample sent again is newer than anything the server
///    applied, and an app that keeps a release's `seq` never waits for a restarted count.
/// 8. **Reset.** A new session drops what is queued, the timers and the pause, and forgets
///    the requests out: their answers are ignored and their slots free. The numbering goes on.
///
/// It reads no clock and does no I/O: every input is an event that carries `now` (the
/// owner's time since it began), every answer the action to perform, so its rules are
/// tested with plain values.
struct SampleQueue {
    /// The slots of rule 1.
    enum Slot: String, Equatable, Sendable {
        case paced
        case crossing
        case release
    }

    /// One request of samples, in `seq` order.
    struct Request: Equatable {
        var id: Int
        var slot: Slot
        var samples: [Sample]
    }

    enum Action: Equatable {
        /// Post these samples in one request; report its answer with
        /// ``requestFinished(_:_:now:)``.
        case send(Request)
        /// Report ``turnEnded(now:)`` once the samples being pushed now are in: samples pushed
        /// in one turn leave in one request.
        case sendSoon
        /// Report ``timerFired(now:)`` after this long, when the next paced request's turn
        /// comes. It replaces a timer asked for before.
        case wake(after: Duration)
        /// Send nothing; report ``pauseEnded(now:)`` after this long. It replaces a pause
        /// asked for before.
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

    /// Paced requests out at once at most, by default (rule 1).
    static let maxInFlight = 3
    /// One frame at 60 Hz: samples go out no more often than the screen changes.
    static let frame = Duration.seconds(1) / 60

    /// A sample and when the app pushed it: `seq` changes when a sample is put back, the
    /// order the app pushed samples in does not.
    private struct Entry {
        var sample: Sample
        let pushed: Int

        /// Heights and the input are sent only when they change: a sample that takes another's
        /// place keeps those it did not give itself, or the server would never learn them.
        mutating func inherit(from replaced: Entry) {
            sample.contentHeight = sample.contentHeight ?? replaced.sample.contentHeight
            sample.viewportHeight = sample.viewportHeight ?? replaced.sample.viewportHeight
            sample.input = sample.input ?? replaced.sample.input
        }
    }

    /// A request out: its slot, its samples, when it left, and whether it carried a crossing
    /// (one refused is still one).
    private struct Sent {
        let slot: Slot
        let entries: [Entry]
        let at: Duration
        let crossing: Bool
    }

    /// What the queue waits for before sending.
    private enum Flow {
        /// Sending as slots and turns allow; `next` is the input the owner was asked for.
        case running(next: Next)
        /// Nothing goes out before `until` (rule 6).
        case paused(until: Duration)
    }

    private enum Next {
        case nothing
        case turnEnd
        case wake(at: Duration)
    }

    let maxInFlight: Int
    private var watch: ThresholdWatch
    private var queued: [Entry] = []
    /// The queued line holds a crossing: its next request goes without waiting for its turn.
    private var hasCrossing = false
    private var out: [Int: Sent] = [:]
    private var flow = Flow.running(next: .nothing)
    /// When the last request left; none yet, and the first one's turn has come.
    private var lastSent: Duration?
    /// The round trip of a request, smoothed (rule 2).
    private var roundTrip = Duration.zero
    private var lastSeq = 0
    private var lastPushed = 0
    private var lastRequest = 0

    /// `config` is the session's, from the server's answer that created it: the thresholds
    /// a crossing is judged by.
    init(config: RefreshConfig? = nil, maxInFlight: Int = Self.maxInFlight) {
        watch = ThresholdWatch(config)
        self.maxInFlight = maxInFlight
    }

    /// Nothing queued and nothing out: every sample pushed was taken (or dropped with its
    /// session).
    var isEmpty: Bool { queued.isEmpty && out.isEmpty }

    /// Queues `sample` (its `seq` replaced by the queue's next) and answers that `seq`.
    mutating func samplePushed(_ sample: Sample, now: Duration) -> (seq: Int, action: Action) {
        var sample = sample
        lastSeq += 1
        sample.seq = lastSeq
        lastPushed += 1
        let crosses = watch.crosses(sample)
        var entry = Entry(sample: sample, pushed: lastPushed)
        if sample.phase == .release {
            for replaced in queued where replaced.sample.phase != .release { entry.inherit(from: replaced) }
            queued.removeAll { $0.sample.phase != .release }
            queued.append(entry)
        } else {
            if let last = queued.last, last.sample.phase != .release {
                entry.inherit(from: last)
                queued[queued.count - 1] = entry
            } else {
                queued.append(entry)
            }
            if crosses { hasCrossing = true }
        }
        return (lastSeq, schedule(now: now, pushing: true))
    }

    /// The turn that pushed samples ended: what is due goes, in one request. (Its turn is
    /// judged again: a request may have left since the push, in another turn of the owner.)
    mutating func turnEnded(now: Duration) -> Action {
        guard case .running(.turnEnd) = flow else { return .none }
        flow = .running(next: .nothing)
        return schedule(now: now, pushing: false)
    }

    /// The paced turn asked for with ``Action/wake(after:)`` came.
    mutating func timerFired(now: Duration) -> Action {
        guard case .running(.wake(let at)) = flow, now >= at else { return .none }
        flow = .running(next: .nothing)
        return schedule(now: now, pushing: false)
    }

    mutating func requestFinished(_ id: Int, _ answer: Answer, now: Duration) -> Action {
        guard let sent = out.removeValue(forKey: id) else { return .none }
        switch answer {
        case .taken:
            roundTrip += (now - sent.at - roundTrip) / 4
            return schedule(now: now, pushing: false)
        case .notNow(let wait):
            putBack(sent.entries)
            if sent.crossing && !queued.isEmpty { hasCrossing = true }
            let end = now + wait
            if case .paused(let until) = flow, end <= until { return .none }
            flow = .paused(until: end)
            return .pause(wait)
        }
    }

    mutating func pauseEnded(now: Duration) -> Action {
        guard case .paused(let until) = flow, now >= until else { return .none }
        flow = .running(next: .nothing)
        return schedule(now: now, pushing: false)
    }

    /// The session was replaced (rule 8): its samples mean nothing to the new one, and the
    /// answers of its requests still out are not waited for. `config` is the new session's.
    mutating func sessionReplaced(config: RefreshConfig?) {
        watch = ThresholdWatch(config)
        queued = []
        hasCrossing = false
        out = [:]
        flow = .running(next: .nothing)
    }

    /// The slot the queued line may take now, if any: a release's, the crossing's, or a
    /// paced one (whose turn may still have to come).
    private func freeSlot() -> Slot? {
        guard !queued.isEmpty else { return nil }
        let slots = out.values.map(\.slot)
        let releaseOut = slots.contains(.release)
        if queued.contains(where: { $0.sample.phase == .release }) { return releaseOut ? nil : .release }
        if releaseOut { return nil }
        if hasCrossing && !slots.contains(.crossing) { return .crossing }
        return slots.count(where: { $0 == .paced }) < maxInFlight ? .paced : nil
    }

    /// The next request: now when a slot is free and, for a paced one, its turn has come
    /// (at the end of the turn, when samples are being pushed); else a timer for the turn, or
    /// nothing until an answer frees a slot.
    private mutating func schedule(now: Duration, pushing: Bool) -> Action {
        guard case .running(let next) = flow, let slot = freeSlot() else { return .none }
        var due = true
        if slot == .paced && !hasCrossing, let lastSent {
            if case .wake = next { return .none }
            let turn = lastSent + max(Self.frame, roundTrip / maxInFlight)
            due = turn <= now
            if !due {
                if case .turnEnd = next { return .none }
                flow = .running(next: .wake(at: turn))
                return .wake(after: turn - now)
            }
        }
        guard pushing else { return send(in: slot, now: now) }
        if case .turnEnd = next { return .none }
        flow = .running(next: .turnEnd)
        return .sendSoon
    }

    private mutating func send(in slot: Slot, now: Duration) -> Action {
        lastRequest += 1
        out[lastRequest] = Sent(slot: slot, entries: queued, at: now, crossing: hasCrossing)
        lastSent = now
        hasCrossing = false
        defer { queued = [] }
        return .send(Request(id: lastRequest, slot: slot, samples: queued.map(\.sample)))
    }

    /// In line again: a release always; a drag or scroll sample only while it is still the
    /// newest sample the app pushed (one pushed since, queued or sent, a release above all,
    /// supersedes it: a position sent again after a newer one would move the list back).
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
