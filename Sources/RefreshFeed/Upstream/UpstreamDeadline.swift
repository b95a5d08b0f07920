/// The deadline of one upstream download, over all of it: connecting, the response head and
/// every byte of the body. The HTTP client's own deadline ends with the head, and its read
/// timeout restarts with every byte, so an upstream that drips its body a byte a second
/// would otherwise hold a refresh until the refresh's own, much longer, deadline.
enum UpstreamDeadline {
    /// `work`'s result, or `failure` once `timeout` has passed; `work` is then cancelled,
    /// which closes the download's connection. `failure` is read when the time is up, so it
    /// can say how far the download got. When the time is up, `grace()` may give `work` a
    /// little longer: before the head, the client's own deadline ends it with a better reason
    /// (refused, not found), and a busy machine can take a moment to say so.
    static func run<T: Sendable>(
        within timeout: Duration, grace: @autoclosure @escaping @Sendable () -> Duration = .zero,
        else failure: @autoclosure () -> UpstreamError, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: timeout)
                let more = grace()
                if more > .zero { try await Task.sleep(for: more) }
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw failure() }
            return value
        }
    }
}
