import Synchronization

/// Single flight for feed updates: every refresh that starts while an update runs joins it
/// instead of starting another, and each joiner sees the update's progress from the moment
/// it joined. The update is cancelled only when no one waits for it any more.
public final class SharedUpdate: Sendable {
    private let source: any FeedSource

    private final class Flight: Sendable {
        let task: Task<FeedUpdate, any Error>
        init(task: Task<FeedUpdate, any Error>) { self.task = task }
    }

    private struct State {
        var flight: Flight?
        var listeners: [Int: ProgressSink] = [:]
        var latest: FeedProgress?
        var nextListener = 0
    }

    private let state = Mutex(State())
    /// Counts and times each update, once however many refreshes share it.
    private let metrics: any FeedObserver

    public init(source: any FeedSource, metrics: any FeedObserver) {
        self.source = source
        self.metrics = metrics
    }

    public func run(progress: @escaping ProgressSink) async throws -> FeedUpdate {
        let (flight, listener, latest) = state.withLock { state -> (Flight, Int, FeedProgress?) in
            let listener = state.nextListener
            state.nextListener += 1
            state.listeners[listener] = progress
            if let flight = state.flight { return (flight, listener, state.latest) }
            let flight = Flight(
                task: Task { [source, metrics] in
                    defer { self.landed() }
                    let started = ContinuousClock.now
                    do {
                        let update = try await source.update { progress in self.broadcast(progress) }
                        metrics.feedUpdateFinished(.completed, in: .now - started)
                        return update
                    } catch {
                        metrics.feedUpdateFinished(error is CancellationError || Task.isCancelled ? .cancelled : .failed, in: .now - started)
                        throw error
                    }
                })
            state.flight = flight
            state.latest = nil
            return (flight, listener, nil)
        }
        if let latest { progress(latest) }
        return try await withTaskCancellationHandler {
            defer { _ = state.withLock { $0.listeners.removeValue(forKey: listener) } }
            return try await flight.task.value
        } onCancel: {
            let abandoned = state.withLock { state -> Bool in
                state.listeners.removeValue(forKey: listener)
                return state.listeners.isEmpty && state.flight === flight
            }
            if abandoned { flight.task.cancel() }
        }
    }

    private func broadcast(_ progress: FeedProgress) {
        let listeners = state.withLock { state -> [ProgressSink] in
            state.latest = progress
            return Array(state.listeners.values)
        }
        for listener in listeners { listener(progress) }
    }

    private func landed() {
        state.withLock { state in
            state.flight = nil
            state.latest = nil
        }
    }
}
