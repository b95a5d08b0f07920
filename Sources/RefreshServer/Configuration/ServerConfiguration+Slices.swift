extension ServerConfiguration {
    /// The part of the configuration the sessions work with.
    var sessionSettings: SessionSettings {
        SessionSettings(
            instanceName: instanceName, maxSessions: maxSessions, maxSessionsPerClient: maxSessionsPerClient,
            sessionIdleTimeout: sessionIdleTimeout, replayBufferLength: replayBufferLength, replayBufferBytes: replayBufferBytes,
            maxSamplesPerSecond: maxSamplesPerSecond, pageSize: pageSize, keepaliveInterval: keepaliveInterval,
            reconnectDelayMilliseconds: reconnectDelayMilliseconds,
            actions: ActionRunner.Settings(pageSize: pageSize, timeout: actionTimeout, minimumDuration: minimumActionDuration))
    }
}
