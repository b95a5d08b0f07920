import ArgumentParser
import Foundation
import Logging
import RefreshServer
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

@main
struct RefreshServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh-server",
        abstract: "Serves a pull-to-refresh list whose gestures are decided in Swift and pushed over server-sent events.",
        discussion: """
            Every flag can also be set by an environment variable, PTR_ then the flag's name upper-cased with _ for - \
            (PTR_MAX_STREAMS for --max-streams; lists comma-separated), or by a key of the JSON file given by --config \
            or PTR_CONFIG, named like the flag ({"max-streams": 100, "feed": ["https://example.com/feed.xml"]}). \
            A flag wins over a variable, a variable over the file, the file over the default.
            """)

    static let defaultLogLevel = Logger.Level.info
    static let defaultLogFormat = LogFormat.text

    @Option(
        help: .setting("config", "JSON file of settings, keyed by flag name: {\"port\": 8080, \"trusted-proxy\": [\"10.0.0.1\"]}.", valueName: "file")
    )
    var config: String?

    @Option(help: .setting("host", "Address to listen on. Beyond loopback, --publish-token or --disable-publishing is required."))
    var host: String?

    @Option(
        name: .customLong("public-host"),
        help: .setting(
            "public-host",
            "A Host name the server answers to besides localhost and its address, e.g. the name a front serves (repeatable); others get 421.",
            valueName: "name"))
    var publicHosts: [String] = []

    @Option(
        name: .customLong("cors-origin"),
        help: .setting(
            "cors-origin", "An origin whose pages may call the API from the browser, e.g. https://app.example (repeatable).", valueName: "origin"))
    var corsOrigins: [String] = []

    @Option(help: .setting("port", "Port to listen on; 0 picks a free one (the URL is printed at start).", valueName: "number"))
    var port: Int?

    @Option(name: .customLong("public"), help: .setting("public", "Folder of the page and other static files.", valueName: "folder"))
    var publicDirectory: String?

    @Option(
        help: .setting(
            "log-level", "Log level: trace, debug, info, notice, warning, error, critical.", default: RefreshServerCommand.defaultLogLevel.rawValue))
    var logLevel: Logger.Level?

    @Option(
        help: .setting(
            "log-format", "Log lines as text for people, or json: one object per line for a collector.",
            default: RefreshServerCommand.defaultLogFormat.rawValue))
    var logFormat: LogFormat?

    @Option(help: .setting("publish-token", "Token required as 'Authorization: Bearer TOKEN' by POST /api/items.", valueName: "token"))
    var publishToken: String?

    @Flag(
        help: .setting(
            "disable-publishing", "Refuse every POST /api/items: a read-only server, which may listen beyond loopback without --publish-token."))
    var disablePublishing: Bool = false

    @Option(help: .setting("max-body-bytes", "Largest request body in bytes (413 beyond).", valueName: "bytes"))
    var maxBodyBytes: Int?

    @Option(help: .setting("max-samples-per-request", "Samples accepted in one request (429 beyond).", valueName: "count"))
    var maxSamplesPerRequest: Int?

    @Option(help: .setting("max-samples-per-second", "Sustained samples per second per session (429 beyond).", valueName: "rate"))
    var maxSamplesPerSecond: Double?

    @Option(help: .setting("max-sessions", "Sessions alive at once (503 beyond).", valueName: "count"))
    var maxSessions: Int?

    @Option(help: .setting("max-sessions-per-client", "Sessions one client address may hold (429 beyond).", valueName: "count"))
    var maxSessionsPerClient: Int?

    @Option(
        help: .setting(
            "max-streams", "Event streams open at once; beyond, a stream is told to retry later (200, a jittered retry:, closed).", valueName: "count"
        ))
    var maxStreams: Int?

    @Option(
        help: .setting(
            "max-streams-per-client", "Event streams one client address may hold open; beyond, told to retry later like --max-streams.",
            valueName: "count"))
    var maxStreamsPerClient: Int?

    @Option(
        name: .customLong("trusted-proxy"),
        help: .setting(
            "trusted-proxy", "Address or CIDR network of a proxy whose X-Forwarded-For names the client (repeatable).", valueName: "address"))
    var trustedProxies: [String] = []

    @Option(
        help: .setting(
            "request-head-timeout", "Seconds a request head (and then its body) may take to arrive from its first byte (408 beyond).",
            valueName: "seconds"))
    var requestHeadTimeout: Double?

    @Option(help: .setting("idle-timeout", "Seconds a kept-alive connection may wait for its next request.", valueName: "seconds"))
    var idleTimeout: Double?

    @Option(
        help: .setting(
            "send-timeout", "Seconds an answer or an event stream may wait for a client that does not read before its connection closes.",
            valueName: "seconds"))
    var sendTimeout: Double?

    @Option(help: .setting("max-head-bytes", "Largest request head in bytes: request line and header fields (431 beyond).", valueName: "bytes"))
    var maxHeadBytes: Int?

    @Option(
        help: .setting(
            "reconnect-delay-ms",
            "Milliseconds browsers wait before reconnecting a stream; each stream is told a jittered value from this to twice it.", valueName: "ms"))
    var reconnectDelayMs: Int?

    @Option(help: .setting("session-idle-timeout", "Seconds a session without requests or open streams lives.", valueName: "seconds"))
    var sessionIdleTimeout: Double?

    @Option(help: .setting("replay-buffer", "Events kept per session for replay after a reconnect.", valueName: "events"))
    var replayBuffer: Int?

    @Option(
        help: .setting(
            "replay-buffer-bytes", "Bytes of events kept per session for replay, whichever of this and --replay-buffer comes first.",
            valueName: "bytes"))
    var replayBufferBytes: Int?

    @Option(
        help: .setting(
            "stream-send-buffer",
            "Kernel send buffer of each event stream, in bytes; a reader that stops reading gets the newest state, not a backlog.", valueName: "bytes"
        ))
    var streamSendBuffer: Int?

    @Option(help: .setting("keepalive", "Seconds between keepalive comments on idle event streams.", valueName: "seconds"))
    var keepalive: Double?

    @Option(help: .setting("refresh-timeout", "Seconds after which a refresh or load-more fails as timed out.", valueName: "seconds"))
    var refreshTimeout: Double?

    @Option(help: .setting("min-refresh-ms", "Milliseconds a refresh keeps its spinner at least, so it never flickers.", valueName: "ms"))
    var minRefreshMs: Int?

    @Option(help: .setting("page-size", "Items per load-more page, and at most per refresh.", valueName: "items"))
    var pageSize: Int?

    @Option(
        help: .setting(
            "database", "Where the feed is stored: an SQLite file (created with its folder), :memory:, or postgres://USER[:PASSWORD]@HOST[:PORT]/DB.",
            valueName: "location"))
    var database: String?

    @Option(
        help: .setting(
            "instance",
            "This instance's name among several sharing a PostgreSQL feed (letters, digits and -, at most 32): it prefixes every session id.",
            valueName: "name"))
    var instance: String?

    @Option(help: .setting("head-poll", "Seconds between reads of a PostgreSQL feed's head even when no notification came.", valueName: "seconds"))
    var headPoll: Double?

    @Option(name: .customLong("feed"), help: .setting("feed", "Upstream RSS, Atom or JSON Feed URL a refresh pulls (repeatable).", valueName: "url"))
    var feeds: [String] = []

    @Option(help: .setting("max-feed-bytes", "Largest upstream feed accepted, in bytes.", valueName: "bytes"))
    var maxFeedBytes: Int?

    @Option(help: .setting("feed-timeout", "Seconds an upstream download may take.", valueName: "seconds"))
    var feedTimeout: Double?

    @Option(
        help: .setting(
            "event-loops", "Threads serving connections. One keeps a sample and the streams it updates on the same thread.", valueName: "threads"))
    var eventLoops: Int?

    @Flag(
        inversion: .prefixedNo,
        help: .setting(
            "steer-by-client",
            "Keep each client's connections on one event loop, chosen by its address (a sample and its stream never cross threads); not for clients behind a shared address."
        ))
    var steerByClient: Bool?

    @Flag(inversion: .prefixedNo, help: .setting("demo", "Seed an empty store with example items."))
    var demo: Bool?

    /// The flags given, by the setting each sets; the others are left to the environment,
    /// the configuration file and the defaults.
    var givenFlags: [String: SettingValue] {
        var flags: [String: SettingValue] = [:]
        flags["config"] = config.map(SettingValue.string)
        flags["host"] = host.map(SettingValue.string)
        flags["public-host"] = publicHosts.isEmpty ? nil : .strings(publicHosts)
        flags["cors-origin"] = corsOrigins.isEmpty ? nil : .strings(corsOrigins)
        flags["disable-publishing"] = disablePublishing ? .bool(true) : nil
        flags["port"] = port.map(SettingValue.int)
        flags["public"] = publicDirectory.map(SettingValue.string)
        flags["log-level"] = logLevel.map { .string($0.rawValue) }
        flags["log-format"] = logFormat.map { .string($0.rawValue) }
        flags["publish-token"] = publishToken.map(SettingValue.string)
        flags["max-body-bytes"] = maxBodyBytes.map(SettingValue.int)
        flags["max-samples-per-request"] = maxSamplesPerRequest.map(SettingValue.int)
        flags["max-samples-per-second"] = maxSamplesPerSecond.map(SettingValue.double)
        flags["max-sessions"] = maxSessions.map(SettingValue.int)
        flags["max-sessions-per-client"] = maxSessionsPerClient.map(SettingValue.int)
        flags["max-streams"] = maxStreams.map(SettingValue.int)
        flags["max-streams-per-client"] = maxStreamsPerClient.map(SettingValue.int)
        flags["trusted-proxy"] = trustedProxies.isEmpty ? nil : .strings(trustedProxies)
        flags["request-head-timeout"] = requestHeadTimeout.map(SettingValue.double)
        flags["idle-timeout"] = idleTimeout.map(SettingValue.double)
        flags["send-timeout"] = sendTimeout.map(SettingValue.double)
        flags["max-head-bytes"] = maxHeadBytes.map(SettingValue.int)
        flags["reconnect-delay-ms"] = reconnectDelayMs.map(SettingValue.int)
        flags["session-idle-timeout"] = sessionIdleTimeout.map(SettingValue.double)
        flags["replay-buffer"] = replayBuffer.map(SettingValue.int)
        flags["replay-buffer-bytes"] = replayBufferBytes.map(SettingValue.int)
        flags["stream-send-buffer"] = streamSendBuffer.map(SettingValue.int)
        flags["keepalive"] = keepalive.map(SettingValue.double)
        flags["refresh-timeout"] = refreshTimeout.map(SettingValue.double)
        flags["min-refresh-ms"] = minRefreshMs.map(SettingValue.int)
        flags["page-size"] = pageSize.map(SettingValue.int)
        flags["database"] = database.map(SettingValue.string)
        flags["instance"] = instance.map(SettingValue.string)
        flags["head-poll"] = headPoll.map(SettingValue.double)
        flags["feed"] = feeds.isEmpty ? nil : .strings(feeds)
        flags["max-feed-bytes"] = maxFeedBytes.map(SettingValue.int)
        flags["feed-timeout"] = feedTimeout.map(SettingValue.double)
        flags["event-loops"] = eventLoops.map(SettingValue.int)
        flags["steer-by-client"] = steerByClient.map(SettingValue.bool)
        flags["demo"] = demo.map(SettingValue.bool)
        return flags
    }

    /// ArgumentParser's own, except that a flag whose value does not parse is one line on
    /// standard error, as a bad value from the environment or the file is, not the usage;
    /// and a setting that cannot work exits with EX_CONFIG (78).
    static func main() async {
        let command: Self
        do {
            command = try parse()
        } catch {
            guard exitCode(for: error) != .success else { exit(withError: error) }
            FileHandle.standardError.write(Data("Error: \(message(for: error))\n".utf8))
            exit(withError: ExitCode(exitCode(for: error).rawValue))
        }
        do {
            try await command.run()
        } catch let error as ConfigurationError {
            // EX_CONFIG: a service manager can tell a configuration it need not retry
            // (RestartPreventExitStatus=) from a failure worth restarting for.
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            exit(withError: ExitCode(78))
        } catch {
            exit(withError: error)
        }
    }

    func run() async throws {
        let sources = try await ConfigurationSources(flags: givenFlags, commandSettings: ["log-level", "log-format"])
        let configuration = try await ServerConfiguration(sources)
        let level = try await sources.choice("log-level", as: Logger.Level.self) ?? Self.defaultLogLevel
        let format = try await sources.choice("log-format", as: LogFormat.self) ?? Self.defaultLogFormat

        LoggingSystem.bootstrap { label in
            switch format {
            case .text: LineSafeLogHandler(StreamLogHandler.standardError(label: label))
            case .json: JSONLogHandler(label: label)
            }
        }
        var logger = Logger(label: "refresh-server")
        logger.logLevel = level
        if let warning = sources.unknownVariablesWarning { logger.warning("\(warning)") }

        let host = configuration.host
        let app = try RefreshApplication.build(configuration: configuration, logger: logger) { port in
            let url = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
            let line = "refresh-server listening on \(url)"
            // On standard output in either format, whatever the log level: scripts and
            // service managers wait for it to learn the port.
            switch format {
            case .text:
                print(line)
                fflush(nil)
            case .json:
                JSONLogHandler.writeRecord(
                    level: .notice, label: "refresh-server", message: line, source: "refresh_server", fields: ["url": .string(url)],
                    to: STDOUT_FILENO)
            }
        }
        try await ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)).run()
    }
}

extension ArgumentHelp {
    /// A setting's help: what it does, its default (read from `ServerConfiguration()`, so it
    /// is written once) and its environment variable.
    static func setting(_ key: String, _ abstract: String, valueName: String? = nil, default shown: String? = nil) -> ArgumentHelp {
        let fallback = shown ?? ServerConfiguration.defaultDescription(of: key)
        var variable = ServerConfiguration.environmentVariable(of: key)
        if key == "database" { variable += " or DATABASE_URL" }
        return ArgumentHelp("\(abstract) (\(fallback.map { "default: \($0); " } ?? "")env: \(variable))", valueName: valueName)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension LogFormat: ExpressibleByArgument {}
