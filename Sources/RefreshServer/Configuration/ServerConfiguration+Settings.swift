import Foundation
import RefreshFeed

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
        enum Kind: Sendable {
            case int, double, string, strings, bool

            /// What a value that cannot be read as this kind is not.
            var expected: String {
                switch self {
                case .int: "a whole number"
                case .double: "a number"
                case .string: "a string"
                case .strings: "a list of strings"
                case .bool: "true or false"
                }
            }
        }

        let key: String
        let kind: Kind
        /// Never repeated in an error: it may be a password.
        let isSecret: Bool
        /// Stores a value of ``kind`` in its field.
        let assign: @Sendable (inout ServerConfiguration, SettingValue) -> Void
        /// What is wrong with the field's value, if anything.
        let check: @Sendable (ServerConfiguration) -> ConfigurationError?
        /// The field's value as `--help` shows a default.
        let describe: @Sendable (ServerConfiguration) -> String
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
        .string("host", \.host),
        .int("port", \.port, 0...65535),
        .string("public", \.publicDirectory) { folder in
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) else {
                // The default may be missing (a server of the API alone): the start warns instead.
                return folder == ServerConfiguration().publicDirectory ? nil : "no such folder"
            }
            return isFolder.boolValue ? nil : "is not a folder"
        },
        .optionalString("publish-token", \.publishToken, isSecret: true, absent: "none") { $0.isEmpty ? "must not be empty" : nil },
        .publishingDisabled,
        .list("public-host", \.publicHosts) { name in
            RequestPolicy.isHostName(name) ? nil : "\(name) is not a host name or an IP address (no scheme, port or path)"
        },
        .list("cors-origin", \.corsOrigins) { origin in
            RequestPolicy.isOrigin(origin) ? nil : "\(origin) is not an origin such as https://app.example or http://localhost:3000 (no path)"
        },
        .optionalInt("event-loops", \.eventLoops, 1...256, absent: "one per CPU core"),
        .bool("steer-by-client", \.steerByClient),
        .int("max-body-bytes", \.maxBodyBytes, 1...largestBuffer),
        .rate("max-samples-per-second", \.maxSamplesPerSecond, 1...1e12),
        .int("max-samples-per-request", \.maxSamplesPerRequest, 1...Int.max),
        .int("max-sessions", \.maxSessions, 1...Int.max),
        .int("max-sessions-per-client", \.maxSessionsPerClient, 1...Int.max),
        .int("max-streams", \.maxStreams, 1...Int.max),
        .int("max-streams-per-client", \.maxStreamsPerClient, 1...Int.max),
        .list("trusted-proxy", \.trustedProxies) { TrustedProxies.Network($0) == nil ? notAProxy($0).problem : nil },
        .seconds("request-head-timeout", \.requestHeadTimeout),
        .seconds("idle-timeout", \.idleTimeout),
        .seconds("send-timeout", \.sendTimeout),
        .int("max-head-bytes", \.maxHeadBytes, 1...80 * 1024),
        .int("reconnect-delay-ms", \.reconnectDelayMilliseconds, 1...3_600_000),
        .seconds("session-idle-timeout", \.sessionIdleTimeout),
        .int("replay-buffer", \.replayBufferLength, 1...Int.max),
        .int("replay-buffer-bytes", \.replayBufferBytes, 1024...Int.max),
        .int("stream-send-buffer", \.streamSendBufferBytes, 1...Int(Int32.max)),
        .seconds("keepalive", \.keepaliveInterval, atLeast: .seconds(1)),
        .seconds("refresh-timeout", \.actionTimeout),
        .milliseconds("min-refresh-ms", \.minimumActionDuration, 0...3_600_000),
        .int("page-size", \.pageSize, 1...1000),
        .string("database", \.database, isSecret: true) { database in
            guard PostgresLocation.isPostgresURL(database) else { return nil }
            do {
                _ = try PostgresLocation(url: database)
                return nil
            } catch {
                return "\(error)"
            }
        },
        .optionalString("instance", \.instanceName, absent: "none") { name in
            name.count <= 32 && !name.isEmpty
                && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }
                ? nil : "must be 1 to 32 letters, digits or '-'"
        },
        .seconds("head-poll", \.headPollInterval, atLeast: .milliseconds(100)),
        .list("feed", \.feeds) { url in
            guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
                parsed.host?.isEmpty == false
            else { return "\(url) is not an http or https URL" }
            return nil
        },
        .int("max-feed-bytes", \.maxFeedBytes, 1...largestBuffer),
        .seconds("feed-timeout", \.feedTimeout),
        .optionalBool("demo", \.demo, absent: "on without --feed"),
    ]

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
        _ key: String, _ field: Field<Int>, _ range: ClosedRange<Int>,
        problem: @escaping @Sendable (ServerConfiguration) -> String? = { _ in nil }
    ) -> Self {
        Self(
            key: key, kind: .int, isSecret: false,
            assign: { if case .int(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                let value = configuration[keyPath: field]
                guard range.contains(value) else { return ConfigurationError(setting: key, value: "\(value)", problem: range.requirement) }
                return problem(configuration).map { ConfigurationError(setting: key, value: "\(value)", problem: $0) }
            },
            describe: { "\($0[keyPath: field])" })
    }

    static func optionalInt(_ key: String, _ field: Field<Int?>, _ range: ClosedRange<Int>, absent: String) -> Self {
        Self(
            key: key, kind: .int, isSecret: false,
            assign: { if case .int(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                guard let value = configuration[keyPath: field], !range.contains(value) else { return nil }
                return ConfigurationError(setting: key, value: "\(value)", problem: range.requirement)
            },
            describe: { $0[keyPath: field].map { "\($0)" } ?? absent })
    }

    /// A rate, fractions allowed, within `range`.
    static func rate(_ key: String, _ field: Field<Double>, _ range: ClosedRange<Double>) -> Self {
        Self(
            key: key, kind: .double, isSecret: false,
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
    static func seconds(_ key: String, _ field: Field<Duration>, atLeast shortest: Duration? = nil) -> Self {
        Self(
            key: key, kind: .double, isSecret: false,
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
    static func milliseconds(_ key: String, _ field: Field<Duration>, _ range: ClosedRange<Int>) -> Self {
        Self(
            key: key, kind: .int, isSecret: false,
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
        _ key: String, _ field: Field<String>, isSecret: Bool = false, problem: @escaping @Sendable (String) -> String? = { _ in nil }
    ) -> Self {
        Self(
            key: key, kind: .string, isSecret: isSecret,
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
        _ key: String, _ field: Field<String?>, isSecret: Bool = false, absent: String,
        problem: @escaping @Sendable (String) -> String?
    ) -> Self {
        Self(
            key: key, kind: .string, isSecret: isSecret,
            assign: { if case .string(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                guard let value = configuration[keyPath: field], let problem = problem(value) else { return nil }
                return ConfigurationError(setting: key, value: isSecret ? nil : "'\(value)'", problem: problem)
            },
            describe: { configuration in configuration[keyPath: field].map { isSecret ? "set" : $0 } ?? absent })
    }

    /// A list; `problem` says what is wrong with an element, naming it.
    static func list(_ key: String, _ field: Field<[String]>, problem: @escaping @Sendable (String) -> String?) -> Self {
        Self(
            key: key, kind: .strings, isSecret: false,
            assign: { if case .strings(let value) = $1 { $0[keyPath: field] = value } },
            check: { configuration in
                for element in configuration[keyPath: field] {
                    if let problem = problem(element) { return ConfigurationError(setting: key, value: nil, problem: problem) }
                }
                return nil
            },
            describe: { configuration in configuration[keyPath: field].isEmpty ? "none" : configuration[keyPath: field].joined(separator: ", ") })
    }

    static func bool(_ key: String, _ field: Field<Bool>) -> Self {
        Self(
            key: key, kind: .bool, isSecret: false,
            assign: { if case .bool(let value) = $1 { $0[keyPath: field] = value } },
            check: { _ in nil },
            describe: { $0[keyPath: field] ? "on" : "off" })
    }

    /// `disable-publishing`, which also holds the rule it exists for: beyond loopback, a server
    /// takes publishes with a token or none at all. The error names `--host`, the setting
    /// that makes the token necessary.
    static let publishingDisabled = Self(
        key: "disable-publishing", kind: .bool, isSecret: false,
        assign: { if case .bool(let value) = $1 { $0.publishingDisabled = value } },
        check: { configuration in
            guard !configuration.listensOnLoopbackOnly, configuration.publishToken == nil, !configuration.publishingDisabled else { return nil }
            return ConfigurationError(
                setting: "host", value: configuration.host,
                problem:
                    "listening beyond loopback needs --publish-token (publishing is open to whoever reaches the server otherwise), or --disable-publishing for a server that takes no publishes"
            )
        },
        describe: { $0.publishingDisabled ? "on" : "off" })

    static func optionalBool(_ key: String, _ field: Field<Bool?>, absent: String) -> Self {
        Self(
            key: key, kind: .bool, isSecret: false,
            assign: { if case .bool(let value) = $1 { $0[keyPath: field] = value } },
            check: { _ in nil },
            describe: { configuration in configuration[keyPath: field].map { $0 ? "on" : "off" } ?? absent })
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
