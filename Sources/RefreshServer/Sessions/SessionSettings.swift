/// What the sessions are given of the server's configuration: how many may live, how long
/// an unused one lasts, each one's replay buffer and rate, its streams' timing, and its
/// actions' settings.
struct SessionSettings: Sendable {
    /// Put in every session id, so that a front can send a session's requests to its instance.
    var instanceName: String?
    var maxSessions: Int
    var maxSessionsPerClient: Int
    var sessionIdleTimeout: Duration
    var replayBufferLength: Int
    var replayBufferBytes: Int
    var maxSamplesPerSecond: Double
    /// Items per live read.
    var pageSize: Int
    /// How long a stream may stay quiet before it is sent a keepalive.
    var keepaliveInterval: Duration
    /// The `retry:` a stream tells the browser, before jitter.
    var reconnectDelayMilliseconds: Int
    var actions: ActionRunner.Settings
}
