/// What a connection needs to know of the server's settings: the names it answers to, the
/// origins it gives CORS, its limits and its deadlines. The application builds it from its
/// own configuration; the connection reads nothing else.
package struct HTTPConfiguration: Sendable, Equatable {
    /// The listening address: on a wildcard, any IP literal is one of the server's names.
    package var host = "127.0.0.1"
    /// Further names the server answers to.
    package var publicHosts: [String] = []
    /// Origins whose pages may change state and get CORS answers.
    package var corsOrigins: [String] = []
    package var maxBodyBytes = 64 * 1024
    package var maxHeadBytes = 16 * 1024
    /// From a request's first byte to its last.
    package var requestHeadTimeout: Duration = .seconds(10)
    /// A kept-alive connection with no request.
    package var idleTimeout: Duration = .seconds(60)
    /// An answer or a stream the client does not read.
    package var sendTimeout: Duration = .seconds(120)
    /// After the output closes, for the client to close its side.
    package var lingerTimeout: Duration = .milliseconds(500)
    /// The last bytes of a connection while the server stops.
    package var shutdownDrainTimeout: Duration = .seconds(1)
    /// The socket's send buffer once it carries an event stream.
    package var streamSendBufferBytes = 64 * 1024

    package init() {}

    package var limits: ConnectionLimits {
        ConnectionLimits(maxBodyBytes: maxBodyBytes, maxHeadBytes: maxHeadBytes)
    }
}
