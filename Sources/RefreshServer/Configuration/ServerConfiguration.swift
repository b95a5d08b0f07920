import Logging
import RefreshHTTP

/// Everything an operator can tune, with the defaults `refresh-server` starts with.
/// Each field an operator sets is one of ``settings``: a flag, an environment variable and a
/// key of the configuration file, all read by ``ConfigurationSources``.
public struct ServerConfiguration: Sendable {
    /// Address to listen on. Loopback by default: nothing is exposed until asked.
    public var host = "127.0.0.1"
    /// 0 picks any free port (printed at start).
    public var port = 8080
    /// The folder served at `/`.
    public var publicDirectory = "Public"
    /// Required as `Authorization: Bearer …` by `POST /api/items`. Without it, publishing is
    /// open to local programs when listening on loopback only; beyond loopback the server
    /// does not start without it unless ``publishingDisabled`` says so.
    public var publishToken: String?
    /// Refuse every publish (`403 publishing_disabled`): a read-only server. Beyond loopback,
    /// a server without ``publishToken`` must say this, so that an open publishing endpoint
    /// is never what an operator gets by leaving a setting out.
    public var publishingDisabled = false
    /// Names the server answers to besides `localhost` and its listening address: the names
    /// a front or the users' browsers reach it by. A request for any other `Host` is
    /// refused (`421`), so a page under a rebound DNS name cannot reach it.
    public var publicHosts: [String] = []
    /// Origins (`https://app.example`) whose pages may call the API from the browser:
    /// preflights are answered and answers carry `Access-Control-Allow-Origin`. None by
    /// default: only the server's own page, and programs that send no `Origin`.
    public var corsOrigins: [String] = []

    /// Files of the keys tokens are verified with: an HMAC secret (HS256), a PEM public key
    /// (RS256, ES256, EdDSA) or a JWKS document. With none, tokens are not read: every feed
    /// may be read, and publishing follows ``publishToken``. With one, reading a feed that is
    /// not public, and publishing, need a token's right (or ``publishToken`` to publish).
    public var authKeys: [String] = []
    /// When set, a token's `iss` must be it.
    public var authIssuer: String?
    /// When set, a token's `aud` must name it; when not, a token that names an audience is
    /// refused, since it is meant for someone else.
    public var authAudience: String?
    /// Patterns of the feeds anyone may read without a token (a name, or a prefix and `*`);
    /// an empty pattern stands for none. Only read with ``authKeys``.
    public var publicFeeds: [String] = ["main"]

    /// ``publicFeeds``, parsed (``validate()`` refuses one that does not parse).
    var publicFeedPatterns: [FeedPattern] {
        publicFeeds.compactMap { try? FeedPattern($0) }
    }

    /// Patterns (a name, or a prefix and `*`) that pull insights are counted under: a pull
    /// counts under the first that names its feed, else under `*`. Feed names are unbounded,
    /// so the figures are kept by these and never by name.
    public var insightsFeeds: [String] = []

    /// ``insightsFeeds``, parsed (``validate()`` refuses one that does not parse).
    var insightsFeedPatterns: [FeedPattern] {
        insightsFeeds.compactMap { try? FeedPattern($0) }
    }

    /// Have the kernel keep each client's connections on one event loop, chosen by its
    /// address, however many connections share it. Off by default: the server already keeps
    /// a client's connections together while its loop is at most a few connections busier
    /// than the least busy one (so a sample and the stream it updates do not cross threads),
    /// and clients sharing an address (a carrier's NAT, an office, a proxy) still spread.
    public var steerByClient = false
    /// Threads serving connections; `nil` is one per CPU core. Samples and event streams are
    /// answered on these threads, so with one, a sample and the streams it updates never
    /// wait for another thread to wake.
    public var eventLoops: Int?

    /// Largest request body accepted (413 beyond).
    public var maxBodyBytes = 64 * 1024
    /// Samples accepted in one request (429 beyond).
    public var maxSamplesPerRequest = 64
    /// Sustained samples per second per session (429 with Retry-After beyond); a page
    /// posts at most one per frame, so 300 leaves room for 120 Hz screens and bursts.
    public var maxSamplesPerSecond = 300.0

    /// The samples one request may carry: `maxSamplesPerRequest`, but never more than a
    /// session's rate bucket holds (one second's worth), since a larger request could never
    /// pass the rate limit. Derived rather than refused at start, so lowering only the rate
    /// needs no second setting.
    var samplesPerRequestLimit: Int {
        min(maxSamplesPerRequest, Int(maxSamplesPerSecond))
    }
    /// Sessions alive at once (503 with Retry-After beyond).
    public var maxSessions = 20_000
    /// Sessions one client address may hold (429 with Retry-After beyond), so one client
    /// cannot take what all share.
    public var maxSessionsPerClient = 256
    /// Event streams open at once; one more is told to come back later (`200` with a
    /// jittered `retry:`, then closed: a browser's EventSource retries by itself).
    public var maxStreams = 50_000
    /// Event streams one client address may hold open, answered like ``maxStreams``.
    public var maxStreamsPerClient = 256
    /// Addresses (or CIDR networks) of proxies whose `X-Forwarded-For` names the client;
    /// from anyone else the header is ignored.
    public var trustedProxies: [String] = []

    /// A request head (and then its body) must arrive within this long of its first byte.
    /// A stalled head is closed without an answer (nothing was asked yet, as nginx does); a
    /// stalled body is answered 408; either way the connection closes.
    public var requestHeadTimeout: Duration = .seconds(10)
    /// A kept-alive connection without a request for this long is closed.
    public var idleTimeout: Duration = .seconds(60)
    /// An answer, or an event stream, that the client does not read for this long is dropped
    /// and its connection closed (a stream's events wait in the session's log meanwhile, so
    /// a reader that comes back with `Last-Event-ID` misses nothing the log still holds).
    public var sendTimeout: Duration = .seconds(120)
    /// Largest request head (request line and header fields; 431 beyond).
    public var maxHeadBytes = 16 * 1024
    /// After its last answer a connection closes its output, then drops what the client
    /// still sends for at most this long, so the client reads the answer, not a reset.
    public var lingerTimeout: Duration = .milliseconds(500)
    /// When the server stops, a connection's last bytes (a stream's final chunk, the answer
    /// in progress) wait at most this long for a client that does not read; then the
    /// connection is dropped. With the linger after it, the exit stays within 2 s.
    public var shutdownDrainTimeout: Duration = .seconds(1)
    /// A session with no request and no open stream for this long ends.
    public var sessionIdleTimeout: Duration = .seconds(600)
    /// Events kept per session for replay after a reconnect (`reset` beyond).
    public var replayBufferLength = 256
    /// Bytes of events kept per session for replay, whichever of this and
    /// ``replayBufferLength`` is reached first: events of many large items would otherwise
    /// hold megabytes per session. The newest event is kept whatever its size.
    public var replayBufferBytes = 1 << 20
    /// How long a removed item's tombstone is kept: a page that comes back within this long
    /// is told of the removal (and of every edit) instead of reloading its list.
    public var changeRetention: Duration = .seconds(7 * 24 * 3600)
    /// Comment sent on idle streams so proxies and browsers keep them open.
    public var keepaliveInterval: Duration = .seconds(15)
    /// Kernel send buffer of an event stream's socket. Small on purpose: a reader that stops
    /// reading holds little memory, and when it resumes it gets the newest state rather than
    /// a backlog of stale ones (its events wait in the session's log, where states coalesce).
    public var streamSendBufferBytes = 64 * 1024
    /// The `retry:` delay browsers wait before reconnecting; each stream is told a value
    /// between this and twice it, so pages that lose the server together come back spread
    /// out. A stream refused for overload is told between twice and six times it.
    public var reconnectDelayMilliseconds = 1000
    /// A refresh or load-more still running after this long ends as failed.
    public var actionTimeout: Duration = .seconds(30)
    /// A finished refresh keeps its spinner at least this long, so it reads as an answer
    /// rather than a flicker.
    public var minimumActionDuration: Duration = .milliseconds(400)
    /// Items per load-more page, and at most per refresh.
    public var pageSize = 20
    /// Where the feed is stored: an SQLite file (its folder is created), `:memory:`, or a
    /// PostgreSQL URL, `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, shared by every instance.
    public var database = "data/refresh.sqlite"
    /// This instance's name among several sharing one PostgreSQL feed: it prefixes every
    /// session id (`NAME.…`), so a front can send a session's requests to the instance that
    /// holds it. Letters, digits and `-`, at most 32; `nil` for a single instance.
    public var instanceName: String?
    /// With PostgreSQL, how often the head is read even when no notification came: the
    /// safety net under `LISTEN`/`NOTIFY`.
    public var headPollInterval: Duration = .seconds(5)
    /// Upstream feeds (RSS, Atom, JSON Feed) a refresh of the feed `main` pulls into it.
    public var feeds: [String] = []
    /// Upstream feeds of named feeds, each `NAME=URL`: a refresh of the feed `NAME` pulls
    /// `URL` into it (and no other feed's).
    public var upstreams: [String] = []
    /// Largest upstream feed accepted, in bytes.
    public var maxFeedBytes = 10 * 1024 * 1024
    /// Longest an upstream download may take.
    public var feedTimeout: Duration = .seconds(20)
    /// Seed an empty store with example items; `nil` means "when no upstream feed is given".
    public var demo: Bool?

    /// The least severe log record written.
    public var logLevel: Logger.Level = .info
    /// Text for people, or one JSON object per line for a collector.
    public var logFormat: LogFormat = .text

    public init() {}

    /// Listening on loopback only: local programs may publish without a token.
    public var listensOnLoopbackOnly: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Throws a ``ConfigurationError`` naming the first setting that cannot work, so that a
    /// program embedding the server hears of it before anything starts, as `refresh-server`
    /// does. The rules are those of ``settings``.
    public func validate() throws(ConfigurationError) {
        for setting in Self.settings {
            if let error = setting.check(self) { throw error }
        }
    }

    /// The trusted proxies, parsed; a clear error naming the one that is not an address.
    func validatedTrustedProxies() throws(ConfigurationError) -> TrustedProxies {
        var networks: [TrustedProxies.Network] = []
        for text in trustedProxies {
            guard let network = TrustedProxies.Network(text) else { throw Self.notAProxy(text) }
            networks.append(network)
        }
        return TrustedProxies(networks)
    }

    static func notAProxy(_ text: String) -> ConfigurationError {
        ConfigurationError(setting: "trusted-proxy", value: nil, problem: "\(text) is not an IP address or a CIDR network (such as 10.0.0.0/8)")
    }
}
