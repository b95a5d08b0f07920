import Synchronization

/// How many event streams are open, in all and per client address, and whether one more
/// may open. A stream that may not is answered in a way that keeps the browser's
/// `EventSource` alive (see ``OverloadAnswer``), so a full server sheds streams without
/// closing anyone's page for good.
final class StreamGate: Sendable {
    private struct Counts {
        var total = 0
        var perClient: [String: Int] = [:]
    }

    private let counts = Mutex(Counts())
    let maxStreams: Int
    let maxPerClient: Int

    init(maxStreams: Int, maxPerClient: Int) {
        self.maxStreams = maxStreams
        self.maxPerClient = maxPerClient
    }

    /// Takes a place for `client`, or answers `nil` when it would be one too many.
    func admit(_ client: String) -> Ticket? {
        let admitted = counts.withLock { counts in
            let mine = counts.perClient[client, default: 0]
            guard counts.total < maxStreams, mine < maxPerClient else { return false }
            counts.total += 1
            counts.perClient[client] = mine + 1
            return true
        }
        return admitted ? Ticket(gate: self, client: client) : nil
    }

    /// Whether `client` could open one more stream now, without taking a place.
    func hasRoom(for client: String) -> Bool {
        counts.withLock { $0.total < maxStreams && $0.perClient[client, default: 0] < maxPerClient }
    }

    var openStreams: Int { counts.withLock { $0.total } }

    fileprivate func release(_ client: String) {
        counts.withLock { counts in
            counts.total -= 1
            let left = counts.perClient[client, default: 1] - 1
            counts.perClient[client] = left > 0 ? left : nil
        }
    }

    /// One open stream's place: given back exactly once, when the stream lets go of it.
    final class Ticket: Sendable {
        private let gate: StreamGate
        private let client: String

        fileprivate init(gate: StreamGate, client: String) {
            self.gate = gate
            self.client = client
        }

        deinit {
            gate.release(client)
        }
    }
}
