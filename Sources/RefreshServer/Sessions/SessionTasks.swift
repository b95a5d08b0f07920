import RefreshEngine
import Synchronization

/// The tasks a session started (its actions, its reads of the store), each under a key, so
/// that the session can stop one action's, or every one when it ends. A task takes itself
/// out when it returns; once closed, a task is stopped as it starts.
final class SessionTasks: Sendable {
    enum Key: Hashable, Sendable {
        case action(ActionID)
        /// The read of what changed in the window (one at a time).
        case changes
        /// Live mode's read of new items (one at a time).
        case live
    }

    private struct State {
        var running: [Key: (serial: UInt64, task: Task<Void, Never>)] = [:]
        var serial: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())

    /// Runs `operation` under `key`, unless the tasks were closed. The task is created in
    /// this small lock of its own, so its end, which takes the lock to leave, always finds it
    /// there; one still under the same key (past its last step) is stopped.
    func start(_ key: Key, _ operation: @escaping @Sendable () async -> Void) {
        let replaced = state.withLock { state -> Task<Void, Never>? in
            guard !state.closed else { return nil }
            state.serial += 1
            let serial = state.serial
            let task = Task {
                await operation()
                self.ended(key, serial: serial)
            }
            return state.running.updateValue((serial, task), forKey: key)?.task
        }
        replaced?.cancel()
    }

    func cancel(_ key: Key) {
        state.withLock { $0.running.removeValue(forKey: key) }?.task.cancel()
    }

    /// Stops every task, and every one started from now on.
    func close() {
        let tasks = state.withLock { state in
            state.closed = true
            defer { state.running.removeAll() }
            return state.running.values.map(\.task)
        }
        for task in tasks { task.cancel() }
    }

    var count: Int { state.withLock { $0.running.count } }

    private func ended(_ key: Key, serial: UInt64) {
        state.withLock { state in
            if state.running[key]?.serial == serial { state.running.removeValue(forKey: key) }
        }
    }
}

extension Optional {
    /// The value, made and kept first if there is none.
    mutating func made(_ make: () -> Wrapped) -> Wrapped {
        if let value = self { return value }
        let value = make()
        self = value
        return value
    }
}
