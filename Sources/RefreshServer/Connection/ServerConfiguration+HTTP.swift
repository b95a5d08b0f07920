import RefreshHTTP

extension ServerConfiguration {
    /// The part of the settings the connection layer reads.
    var http: HTTPConfiguration {
        var http = HTTPConfiguration()
        http.host = host
        http.publicHosts = publicHosts
        http.corsOrigins = corsOrigins
        http.maxBodyBytes = maxBodyBytes
        http.maxHeadBytes = maxHeadBytes
        http.requestHeadTimeout = requestHeadTimeout
        http.idleTimeout = idleTimeout
        http.sendTimeout = sendTimeout
        http.lingerTimeout = lingerTimeout
        http.shutdownDrainTimeout = shutdownDrainTimeout
        http.streamSendBufferBytes = streamSendBufferBytes
        return http
    }
}

extension RequestPolicy {
    init(_ configuration: ServerConfiguration) {
        self.init(configuration.http)
    }
}
