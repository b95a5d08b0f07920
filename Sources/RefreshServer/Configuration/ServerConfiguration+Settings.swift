import Foundation
import RefreshFeed
import RefreshHTTP

/// A setting's value as a source holds it, before it becomes a field of
/// ``ServerConfiguration``: durations arrive as seconds or milliseconds, lists as lists.
public enum SettingValue: Sendable, Equatable {
    case int(Int)
    case double(Double)
    case string(String)
    case strings([String])
    case bool(Bool)
}

extension ServerConfiguration {
    /// One thing an operator can set. Its key is its flag's long name without the dashes
    /// (`max-streams` for `--max-streams`); the same key names it in the configuration file,
    /// and upper-cased, `-` as `_`, after `PTR_`, in the environment (`PTR_MAX_STREAMS`).
    struct Setting: Sendable {
        enum Kind: Sendable, Equatable {
            case int, double, string, strings, bool
            /// A string, one of these words.
            case choice([String])

            /// What a value that cannot be read as this kind is not.
            var expected: String {
                switch self {
                case .int: "a whole number"
                case .double: "a number"
                case .string: "a string"
                case .strings: "a list of strings"
                case .bool: "true or false"
                case .choice(let words): "one of \(words.joined(separator: ", "))"
                }
            }
        }

        let key: String
        let kind: Kind
        /// What it does, written once, in the manual's words (Markdown: code in backticks,
        /// links): the flag table of `docs/configuration.md` is made from it
        /// (``CommandLineSettings/flagTable()``), and `--help` shows it as plain text with its
        /// default and variable.
        let help: String
        /// What `--help` calls its value: `--port <number>`; empty for a flag taking none.
        let valueName: String
        /// A flag that can also be turned off: `--demo` and `--no-demo`.
        let isNegatable: Bool
        /// Never repeated in an error: it may be a password.
        let isSecret: Bool
        /// A variable that also sets it, below `PTR_…`: `DATABASE_URL` for `database`.
        let alias: String?
        /// Stores a value of ``kind`` in its field.
        let assign: @Sendable (inout ServerConfiguration, SettingValue) -> Void
        /// What is wrong with the field's value, if anything.
        let check: @Sendable (ServerConfiguration) -> ConfigurationError?
        /// The field's value as `--help` shows a default; empty when there is none to show.
        let describe: @Sendable (ServerConfiguration) -> String

        init(
            key: String, kind: Kind, help: String, valueName: String = "", isNegatable: Bool = false, isSecret: Bool = false,
            alias: String? = nil,
            assign: @escaping @Sendable (inout ServerConfiguration, SettingValue) -> Void,
            check: @escaping @Sendable (ServerConfiguration) -> ConfigurationError?,
            describe: @escaping @Sendable (ServerConfiguration) -> String
        ) {
            self.key = key
            self.kind = kind
            self.help = help
            self.valueName = valueName
            self.isNegatable = isNegatable
            self.isSecret = isSecret
            self.alias = alias
            self.assign = assign
            self.check = check
            self.describe = describe
        }

        /// Its flag: `--max-streams`.
        var flag: String { "--" + key }

        /// Its environment variable: `PTR_MAX_STREAMS`.
        var variable: String { ServerConfiguration.environmentVariable(of: key) }
    }

    /// Every setting, with what it accepts. An upper bound is there because something breaks
    /// beyond it: a port is 16 bits, a socket buffer size a C `int`, a retry delay is
    /// multiplied by six, a duration becomes nanoseconds in an `Int64`, a body or an upstream
    /// feed is held in one buffer (at most 4 GiB), a page is read with one more row than it
    /// holds; an hour, a gibibyte and a year are round values well inside. A lower bound
    /// above the obvious is there because the server misbehaves below it: a rate under one
    /// sample a second never lets a sample through (the bucket holds one second's worth), a
    /// keepalive tick under a second makes an idle server spin, a head poll is a query.
    static let settings: [Setting] = [
        .string(
            "host", \.host,
            help:
                "Address to listen on; beyond loopback the server starts only with `--publish-token`, `--auth-key` or `--disable-publishing` (see [the security guide](security.md#security))."
        ),
        .int("port", \.port, 0...65535, help: "Port to listen on; `0` picks a free one (the URL is printed on one line at start).", value: "number"),
        .string(
            "public", \.publicDirectory,
            help: "Folder of the page and other static files; one given that is not there stops the start, the default missing is one warning line.",
            value: "folder"
        ) { folder in
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) else {
                // The default may be missing (a server of the API alone): the start warns instead.
                return folder == ServerConfiguration().publicDirectory ? nil : "no such folder"
            }
            return isFolder.boolValue ? nil : "is not a folder"
        },
        .choice(
            "log-level", \.logLevel,
            help:
                "How much is logged: `trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`; each refused request is one `notice` line."
        ),
        .choice(
            "log-format", \.logFormat,
            help:
                "Lines of `text` for people, or `json`: one object per line on standard error (`time`, `level`, `label`, `message`, `source`, then metadata as fields of their own: a refused request's `request` id, its `X-Request-ID` when it came with a plain one, and its `session`); the line saying where the server listens is then a record too, on standard output, the URL in its `url` field."
        ),
        .optionalString(
            "publish-token", \.publishToken,
            help:
                "Required as `Authorization: Bearer …` by `POST /api/items` (and the items of every feed); without it (and without `--auth-key`), publishing is open to local programs on a loopback-only server.",
            value: "token",
            isSecret: true, absent: "none"
        ) { $0.isEmpty ? "must not be empty" : nil },
        .publishingDisabled,
        .list(
            "auth-key", \.authKeys,
            help:
                "A file of keys tokens are verified with: an HMAC secret (HS256), a PEM public key (RS256, ES256, EdDSA) or a JWKS document; repeat for several; with one, feeds that are not public need a token's right (see [Access](security.md#access)).",
            value: "file"
        ) { file in
            do throws(AccessKey.Unusable) {
                _ = try AccessKey.read(file: file)
                return nil
            } catch {
                return "\(file) \(error)"
            }
        },
        .optionalString(
            "auth-issuer", \.authIssuer, help: "The `iss` a token must carry.", value: "issuer", absent: "any"
        ) { $0.isEmpty ? "must not be empty" : nil },
        .optionalString(
            "auth-audience", \.authAudience, help: "The `aud` a token must name; without it, a token that names an audience is refused.",
            value: "audience", absent: "none"
        ) { $0.isEmpty ? "must not be empty" : nil },
        .list(
            "public-feed", \.publicFeeds,
            help: "A feed anyone may read without a token when `--auth-key` is set: a name, or a prefix and `*`; repeat for several; `''` for none.",
            value: "pattern"
        ) { pattern in
            do throws(FeedPattern.Invalid) {
                if !pattern.isEmpty { _ = try FeedPattern(pattern) }
                return nil
            } catch {
                return error.description
            }
        },
        .list(
            "insights-feed", \.insightsFeeds,
            help:
                "A feed pattern (a name, or a prefix and `*`) that pull insights are counted under; a pull counts under the first that names its feed, else under `*`; repeat for several.",
            value: "pattern"
        ) { pattern in
            do throws(FeedPattern.Invalid) {
                _ = try FeedPattern(pattern)
                return nil
            } catch {
                return error.description
            }
        },
        .list(
            "public-host", \.publicHosts,
            help:
                "A `Host` name the server answers besides `localhost` and its address, e.g. the name a front serves; repeat for several; others get `421`.",
            value: "name"
        ) { name in
            RequestPolicy.isHostName(name) ? nil : "\(name) is not a host name or an IP address (no scheme, port or path)"
        },
        .list(
            "cors-origin", \.corsOrigins,
            help:
                "An origin (`https://app.example`) whose pages may call the API from the browser, with credentials: preflights answered, `Access-Control-Allow-Origin` and `-Allow-Credentials` on answers; repeat for several.",
            value: "origin"
        ) { origin in
            RequestPolicy.isOrigin(origin) ? nil : "\(origin) is not an origin such as https://app.example or http://localhost:3000 (no path)"
        },
        .optionalInt(
            "event-loops", \.eventLoops, 1...256,
            help: "Threads serving connections; `1` keeps a sample and the streams it updates on one thread.", value: "threads",
            absent: "one per CPU core"),
        .bool(
            "steer-by-client", \.steerByClient,
            help:
                "The kernel hands each client's connections to one event loop, chosen by its address, however many share it. By default the server already keeps a client's connections on one loop (a sample and its stream do not cross threads), six at a time and while that loop is at most a few connections busier than the others, so clients behind one address (a carrier's NAT, a proxy in front) still use every loop; this flag makes it strict."
        ),
        .int("max-body-bytes", \.maxBodyBytes, 1...largestBuffer, help: "Largest request body, in bytes; a larger one gets `413`.", value: "bytes"),
        .rate(
            "max-samples-per-second", \.maxSamplesPerSecond, 1...1e12, help: "Samples a session may send per second, sustained; beyond, `429`.",
            value: "rate"),
        .int(
            "max-samples-per-request", \.maxSamplesPerRequest, 1...Int.max,
            help:
                "Samples taken in one request; more get `429`; never more than one second of `--max-samples-per-second`, which a larger request could never pass.",
            value: "count"),
        .int("max-sessions", \.maxSessions, 1...Int.max, help: "Sessions alive at once; beyond, `503`.", value: "count"),
        .int(
            "max-sessions-per-client", \.maxSessionsPerClient, 1...Int.max, help: "Sessions one client address may hold; beyond, `429`.",
            value: "count"),
        .int(
            "max-streams", \.maxStreams, 1...Int.max,
            help:
                "Event streams open at once; beyond, a stream is told to come back later: `200`, a jittered `retry:`, closed (see [Limits, deadlines and overload](#limits-deadlines-and-overload)).",
            value: "count"),
        .int(
            "max-streams-per-client", \.maxStreamsPerClient, 1...Int.max,
            help: "Event streams one client address may hold open; beyond, a stream is told to come back later, as with `--max-streams`.",
            value: "count"),
        .list(
            "trusted-proxy", \.trustedProxies,
            help: "Address or CIDR network of a proxy whose `X-Forwarded-For` names the client; repeat for several.", value: "address"
        ) { TrustedProxies.Network($0) == nil ? notAProxy($0).problem : nil },
        .seconds(
            "request-head-timeout", \.requestHeadTimeout,
            help: "Seconds a request head, and then its body, may take from its first byte: a stalled head is closed, a stalled body gets `408`."),
        .seconds("idle-timeout", \.idleTimeout, help: "Seconds a kept-alive connection may wait for its next request."),
        .seconds(
            "send-timeout", \.sendTimeout,
            help: "Seconds an answer or an event stream may wait for a client that does not read; then its connection closes."),
        .int(
            "max-head-bytes", \.maxHeadBytes, 1...80 * 1024,
            help: "Largest request line plus header fields; beyond, `431`.", value: "bytes"),
        .int(
            "reconnect-delay-ms", \.reconnectDelayMilliseconds, 1...3_600_000,
            help: "Milliseconds a browser waits before it reconnects a stream: the `retry:` every stream opens with is drawn from this to twice it.",
            value: "ms"),
        .seconds("session-idle-timeout", \.sessionIdleTimeout, help: "Seconds without requests or open streams before a session ends."),
        .int("replay-buffer", \.replayBufferLength, 1...Int.max, help: "Events kept per session for `Last-Event-ID`.", value: "events"),
        .int(
            "replay-buffer-bytes", \.replayBufferBytes, 1024...Int.max,
            help:
                "Bytes of events kept per session for `Last-Event-ID`, whichever of this and `--replay-buffer` is reached first (an event stays until those after it fill the bound, so a page larger than the bound is kept for a reader still writing the one before); beyond, the oldest go and a reader that needed them is told what changed in its rows (`changes`) or, when its list gained rows meanwhile, gets `reset`.",
            value: "bytes"),
        .int(
            "stream-send-buffer", \.streamSendBufferBytes, 1...Int(Int32.max),
            help: "Kernel send buffer per event stream: a reader that stops reading gets the newest state when it resumes, not a backlog.",
            value: "bytes"),
        .seconds(
            "change-retention", \.changeRetention, atLeast: .seconds(1),
            help:
                "Seconds a removal is remembered (its tombstone) so that a page back from further away than the replay buffer is told of it rather than reloading."
        ),
        .seconds(
            "keepalive", \.keepaliveInterval, atLeast: .seconds(1), help: "Seconds between keepalive comments on idle event streams."),
        .seconds("refresh-timeout", \.actionTimeout, help: "Seconds before a refresh or load-more fails as timed out."),
        .milliseconds(
            "min-refresh-ms", \.minimumActionDuration, 0...3_600_000,
            help: "Shortest time a refresh spinner shows, in milliseconds, so it never flickers."),
        .int("page-size", \.pageSize, 1...1000, help: "Items per load-more page, and at most per refresh.", value: "items"),
        .string(
            "database", \.database,
            help:
                "Where the feed is stored: an SQLite file (created with its folder on first start), `:memory:`, or `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`; also `DATABASE_URL`, below `PTR_DATABASE`.",
            value: "location", isSecret: true, alias: "DATABASE_URL"
        ) { database in
            guard PostgresLocation.isPostgresURL(database) else { return nil }
            do {
                _ = try PostgresLocation(url: database)
                return nil
            } catch {
                return "\(error)"
            }
        },
        .optionalString(
            "instance", \.instanceName,
            help: "This instance's name among several sharing a PostgreSQL feed (letters, digits and `-`, at most 32); it prefixes every session id.",
            value: "name", absent: "none"
        ) { name in
            name.count <= 32 && !name.isEmpty
                && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }
                ? nil : "must be 1 to 32 letters, digits or '-'"
        },
        .seconds(
            "head-poll", \.headPollInterval, atLeast: .milliseconds(100),
            help: "Seconds between reads of a PostgreSQL feed's head even when no notification came."),
        .list(
            "feed", \.feeds, help: "An upstream RSS, Atom, JSON Feed or CDF URL a refresh of the feed `main` pulls; repeat for several.", value: "url"
        ) {
            UpstreamURL.problem(with: $0)
        },
        .list(
            "upstream", \.upstreams,
            help:
                "An upstream of the feed `NAME`, given as `NAME=URL`, which a refresh of that feed pulls (and no other feed's); repeat for several.",
            value: "name=url"
        ) { UpstreamURL.problem(withNamed: $0) },
        .int(
            "max-feed-bytes", \.maxFeedBytes, 1...largestBuffer, help: "Largest upstream feed, in bytes; a larger one fails the refresh.",
            value: "bytes"),
        .seconds("feed-timeout", \.feedTimeout, help: "Seconds an upstream download may take."),
        .optionalBool("demo", \.demo, help: "Seed an empty store with example items.", absent: "on without --feed"),
    ]

    /// The file of settings, read before the others; not itself a field.
    static let configurationFile = Setting(
        key: "config", kind: .string, help: #"A JSON file of settings, keyed by flag name: `{"port": 8080, "trusted-proxy": ["10.0.0.1"]}`."#,
        valueName: "file", assign: { _, _ in }, check: { _ in nil }, describe: { _ in "" })

    /// The default of a setting, as `--help` shows it: `8080`, `none`.
    public static func defaultDescription(of key: String) -> String? {
        settings.first { $0.key == key }?.describe(ServerConfiguration())
    }

    /// The environment variable of a setting: `PTR_MAX_STREAMS` for `max-streams`.
    public static func environmentVariable(of key: String) -> String {
        "PTR_" + String(key.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    /// Longest duration accepted, a year: long enough for any deadline, short enough that
    /// nanoseconds fit in an `Int64` wherever a duration meets SwiftNIO.
    static let longestDuration = Duration.seconds(365 * 24 * 3600)

    /// Largest body or upstream feed accepted, a gibibyte: either is collected in one
    /// `ByteBuffer`, which holds at most 4 GiB.
    static let largestBuffer = 1 << 30
}

extension ServerConfiguration.Setting {
    typealias Field<Value> = WritableKeyPath<ServerConfiguration, Value> & Sendable

    /// `problem` says what is wrong with a value in the range, given the other settings.
    static func int(
        _ key: String, _ field: Field<Int>, _ range: ClosedRange<Int>, help: String, value valueName: String,
        problem: @escaping @Sendable (ServerConfiguration) -> String? = { _ in nil }
    ) -> Self {
        Self(
            key: key, kind: .int, help: help, valueName: valueName,
            assign: { if case .int(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                let value = configuration[keyPath: field]
                guard range.contains(value) else { return ConfigurationError(setting: key, value: "\(value)", problem: range.requirement) }
                return problem(configuration).map { ConfigurationError(setting: key, value: "\(value)", problem: $0) }
            },
            describe: { "\($0[keyPath: field])" })
    }

    static func optionalInt(
        _ key: String, _ field: Field<Int?>, _ range: ClosedRange<Int>, help: String, value valueName: String, absent: String
    ) -> Self {
        Self(
            key: key, kind: .int, help: help, valueName: valueName,
            assign: { if case .int(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                guard let value = configuration[keyPath: field], !range.contains(value) else { return nil }
                return ConfigurationError(setting: key, value: "\(value)", problem: range.requirement)
            },
            describe: { $0[keyPath: field].map { "\($0)" } ?? absent })
    }

    /// A rate, fractions allowed, within `range`.
    static func rate(_ key: String, _ field: Field<Double>, _ range: ClosedRange<Double>, help: String, value valueName: String) -> Self {
        Self(
            key: key, kind: .double, help: help, valueName: valueName,
            assign: { if case .double(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                let value = configuration[keyPath: field]
                return range.contains(value)
                    ? nil
                    : ConfigurationError(
                        setting: key, value: value.shortDescription,
                        problem: "must be a number from \(range.lowerBound.shortDescription) to \(range.upperBound.shortDescription)")
            },
            describe: { $0[keyPath: field].shortDescription })
    }

    /// A duration given in seconds (fractions allowed): above zero, or at least `shortest`;
    /// at most a year.
    static func seconds(_ key: String, _ field: Field<Duration>, atLeast shortest: Duration? = nil, help: String) -> Self {
        Self(
            key: key, kind: .double, help: help, valueName: "seconds",
            assign: { configuration, value in
                // Beyond what a Duration holds, the nearest value that `check` refuses.
                guard case .double(let seconds) = value else { return }
                let bounded = seconds.isNaN ? 0 : min(max(seconds, -1e12), 1e12)
                configuration[keyPath: field] = .seconds(bounded)
            },
            check: { configuration in
                let value = configuration[keyPath: field]
                let longest = "at most \(ServerConfiguration.longestDuration.components.seconds) seconds (a year)"
                if let shortest, value < shortest || value > ServerConfiguration.longestDuration {
                    return ConfigurationError(
                        setting: key, value: value.seconds.shortDescription,
                        problem: "must be at least \(shortest.seconds.shortDescription) and \(longest)")
                }
                guard value > .zero, value <= ServerConfiguration.longestDuration else {
                    return ConfigurationError(setting: key, value: value.seconds.shortDescription, problem: "must be more than 0 and \(longest)")
                }
                return nil
            },
            describe: { $0[keyPath: field].seconds.shortDescription })
    }

    /// A duration given in whole milliseconds.
    static func milliseconds(_ key: String, _ field: Field<Duration>, _ range: ClosedRange<Int>, help: String) -> Self {
        Self(
            key: key, kind: .int, help: help, valueName: "ms",
            assign: { if case .int(let value) = $1 { $0[keyPath: field] = .milliseconds(value) } },
            check: { configuration in
                let value = configuration[keyPath: field]
                guard value >= .milliseconds(range.lowerBound), value <= .milliseconds(range.upperBound) else {
                    return ConfigurationError(setting: key, value: (value.seconds * 1000).shortDescription, problem: range.requirement)
                }
                return nil
            },
            describe: { ($0[keyPath: field].seconds * 1000).shortDescription })
    }

    static func string(
        _ key: String, _ field: Field<String>, help: String, value valueName: String? = nil, isSecret: Bool = false, alias: String? = nil,
        problem: @escaping @Sendable (String) -> String? = { _ in nil }
    ) -> Self {
        Self(
            key: key, kind: .string, help: help, valueName: valueName ?? key, isSecret: isSecret, alias: alias,
            assign: { if case .string(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                let value = configuration[keyPath: field]
                if value.isEmpty { return ConfigurationError(setting: key, value: "''", problem: "must not be empty") }
                return problem(value).map { ConfigurationError(setting: key, value: isSecret ? nil : value, problem: $0) }
            },
            describe: { $0[keyPath: field] })
    }

    /// An optional string; `problem` says what is wrong with a value, if anything.
    static func optionalString(
        _ key: String, _ field: Field<String?>, help: String, value valueName: String, isSecret: Bool = false, absent: String,
        problem: @escaping @Sendable (String) -> String?
    ) -> Self {
        Self(
            key: key, kind: .string, help: help, valueName: valueName, isSecret: isSecret,
            assign: { if case .string(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                guard let value = configuration[keyPath: field], let problem = problem(value) else { return nil }
                return ConfigurationError(setting: key, value: isSecret ? nil : "'\(value)'", problem: problem)
            },
            describe: { configuration in configuration[keyPath: field].map { isSecret ? "set" : $0 } ?? absent })
    }

    /// A list; `problem` says what is wrong with an element, naming it.
    static func list(
        _ key: String, _ field: Field<[String]>, help: String, value valueName: String, problem: @escaping @Sendable (String) -> String?
    ) -> Self {
        Self(
            key: key, kind: .strings, help: help, valueName: valueName,
            assign: { if case .strings(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                for element in configuration[keyPath: field] {
                    if let problem = problem(element) { return ConfigurationError(setting: key, value: nil, problem: problem) }
                }
                return nil
            },
            describe: { configuration in configuration[keyPath: field].isEmpty ? "none" : configuration[keyPath: field].joined(separator: ", ") })
    }

    static func bool(_ key: String, _ field: Field<Bool>, help: String) -> Self {
        Self(
            key: key, kind: .bool, help: help, isNegatable: true,
            assign: { if case .bool(let value) = $1 { $0[keyPath: field] = value } },
            check: { _ in nil },
            describe: { $0[keyPath: field] ? "on" : "off" })
    }

    /// `disable-publishing`, which also holds the rule it exists for: beyond loopback, a server
    /// takes publishes with a token or none at all. The error names `--host`, the setting
    /// that makes the token necessary.
    static let publishingDisabled = Self(
        key: "disable-publishing", kind: .bool,
        help:
            "Refuse every `POST /api/items` (`403 publishing_disabled`): a read-only server, which may then listen beyond loopback without a token.",
        assign: { if case .bool(let value) = $1 { $0.publishingDisabled = value } },
        check: { configuration in
            guard !configuration.listensOnLoopbackOnly, configuration.publishToken == nil, configuration.authKeys.isEmpty,
                !configuration.publishingDisabled
            else { return nil }
            return ConfigurationError(
                setting: "host", value: configuration.host,
                problem:
                    "listening beyond loopback needs --publish-token or --auth-key (publishing is open to whoever reaches the server otherwise), or --disable-publishing for a server that takes no publishes"
            )
        },
        describe: { $0.publishingDisabled ? "on" : "off" })

    static func optionalBool(_ key: String, _ field: Field<Bool?>, help: String, absent: String) -> Self {
        Self(
            key: key, kind: .bool, help: help, isNegatable: true,
            assign: { if case .bool(let value) = $1 { $0[keyPath: field] = value } },
            check: { _ in nil },
            describe: { configuration in configuration[keyPath: field].map { $0 ? "on" : "off" } ?? absent })
    }
    /// One of a few words, each a case of `Value`.
    static func choice<Value: RawRepresentable<String> & CaseIterable & Sendable>(
        _ key: String, _ field: Field<Value>, help: String
    ) -> Self {
        Self(
            key: key, kind: .choice(Value.allCases.map(\.rawValue)), help: help, valueName: key,
            assign: { if case .string(let word) = $1, let value = Value(rawValue: word) { $0[keyPath: field] = value } },
            check: { _ in nil },
            describe: { $0[keyPath: field].rawValue })
    }
}

extension ClosedRange<Int> {
    /// The rule a value outside the range breaks, as an error says it.
    fileprivate var requirement: String {
        upperBound == Int.max ? "must be at least \(lowerBound)" : "must be \(lowerBound)…\(upperBound)"
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}

extension Double {
    /// `5` rather than `5.0`, `0.25` as it is.
    var shortDescription: String {
        if isFinite, self == rounded(), abs(self) < 1e15 { return String(Int64(self)) }
        return description
    }
}
