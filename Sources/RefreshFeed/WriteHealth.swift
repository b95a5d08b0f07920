import Synchronization

/// Whether a store's writes can be made, as its last one found: a write that failed for want
/// of room or of the file (a full disk, an I/O error) is remembered until one succeeds, so
/// readiness says what publishing would meet. Shared by every view of one store.
final class WriteHealth: Sendable {
    private let failure = Mutex<String?>(nil)

    /// The reason the last write failed, while no write has succeeded since.
    var lastFailure: String? { failure.withLock { $0 } }

    func failed(_ reason: String) {
        failure.withLock { $0 = reason }
    }

    func succeeded() {
        failure.withLock { $0 = nil }
    }
}
