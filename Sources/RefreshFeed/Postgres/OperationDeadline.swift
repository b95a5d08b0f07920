import Logging
import Synchronization

extension PostgresFeed {
    /// How long one operation may wait for PostgreSQL by default: while it is unreachable,
    /// requests are answered `503` within this, instead of waiting for the pool's own verdict.
    public static let defaultOperationDeadline: Duration = .seconds(5)

    /// Runs `operation` within ``operationDeadline``; every failure becomes a
    /// ``FeedStoreUnavailable`` naming what was being done.
    ///
    /// A query already sent cannot be taken back, so at its deadline the answer does not
    /// wait for the operation: it is cancelled and left to end by itself. A write is never
    /// answered `503` once it has started to commit (``Attempt/commit()``), and one abandoned
    /// before that stores nothing: a `503` is never stored behind the client's back.
    func answered<T: Sendable>(_ doing: String, _ operation: @escaping @Sendable (Attempt) async throws -> T) async throws -> T {
        let attempt = Attempt()
        let answer = FirstAnswer<T>()
        let work = Task {
            do { answer.give(.success(try await operation(attempt))) } catch { answer.give(.failure(error)) }
        }
        let timer = Task {
            try await Task.sleep(for: operationDeadline)
            // Too late to say no to a write that is committing: its outcome is the answer.
            guard attempt.abandon() else { return }
            // Answered before the work is cancelled: cancelled, it ends with a
            // `CancellationError` of its own, which must not become the answer (a 500).
            answer.give(
                .failure(
                    FeedStoreUnavailable("PostgreSQL did not answer within \(operationDeadline.secondsText) while \(doing)")))
            work.cancel()
        }
        defer { timer.cancel() }
        let outcome = await withTaskCancellationHandler {
            await answer.result
        } onCancel: {
            answer.give(.failure(CancellationError()))
        }
        switch outcome {
        case .success(let value):
            return value
        case .failure(let error as CancellationError):
            throw error
        case .failure(let error as FeedItemNotFound):
            throw error
        case .failure(let error as FeedVersionMismatch):
            throw error
        case .failure(let error as FeedStoreUnavailable):
            logger.warning("PostgreSQL is not answering", metadata: ["while": "\(doing)"])
            throw error
        case .failure(let error):
            logger.warning("PostgreSQL failed", metadata: ["while": "\(doing)", "error": "\(String(reflecting: error))"])
            throw FeedStoreUnavailable("PostgreSQL failed while \(doing)")
        }
    }

    /// The first of several answers to one question, for a caller that must not wait for the
    /// others: the operation, a deadline, the caller's own cancellation.
    final class FirstAnswer<T: Sendable>: Sendable {
        private enum State {
            case waiting(CheckedContinuation<Result<T, any Error>, Never>?)
            case answered(Result<T, any Error>)
        }

        private let state = Mutex(State.waiting(nil))

        func give(_ result: Result<T, any Error>) {
            let waiter = state.withLock { state -> CheckedContinuation<Result<T, any Error>, Never>? in
                guard case .waiting(let waiter) = state else { return nil }
                state = .answered(result)
                return waiter
            }
            waiter?.resume(returning: result)
        }

        var result: Result<T, any Error> {
            get async {
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state -> Result<T, any Error>? in
                        switch state {
                        case .answered(let result): return result
                        case .waiting:
                            state = .waiting(continuation)
                            return nil
                        }
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            }
        }

        var value: T {
            get async throws { try await result.get() }
        }
    }

    /// One operation under a deadline: once abandoned, it must not write.
    final class Attempt: Sendable {
        private static let running = 0
        private static let committing = 1
        private static let abandoned = 2
        private let state = Atomic<Int>(Attempt.running)

        /// Gives the operation up; `false` when it is already committing.
        func abandon() -> Bool {
            state.compareExchange(expected: Self.running, desired: Self.abandoned, ordering: .acquiringAndReleasing).exchanged
        }

        /// The write's last step before its commit: from here its outcome is the answer,
        /// however long the commit takes. Throws when the caller was already answered.
        func commit() throws {
            guard state.compareExchange(expected: Self.running, desired: Self.committing, ordering: .acquiringAndReleasing).exchanged else {
                throw CancellationError()
            }
        }

        /// Throws once the caller has been answered without this operation.
        func mayGoOn() throws {
            if state.load(ordering: .acquiring) == Self.abandoned { throw CancellationError() }
        }
    }
}
