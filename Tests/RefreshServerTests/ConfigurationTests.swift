import Foundation
import Logging
import NIOCore
import NIOPosix
import RefreshServerTesting
import ServiceLifecycle
import Synchronization
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Settings layered from flags, environment variables and a file, and the errors that name
/// a bad value where it was written.
@Suite struct ConfigurationTests {
    typealias Setting = ServerConfiguration.Setting

    /// A value every setting accepts and that no default equals, as the source holds it and
    /// as `describe` then shows it.
    static func sample(_ setting: Setting) -> (value: SettingValue, text: String, described: String) {
        switch setting.kind {
        case .int where setting.key == "replay-buffer-bytes": (.int(7000), "7000", "7000")
        case .int: (.int(7), "7", "7")
        // At least the default samples per request, which could not pass a lower rate.
        case .double where setting.key == "max-samples-per-second": (.double(70.5), "70.5", "70.5")
        case .double: (.double(7.5), "7.5", "7.5")
        // A folder that exists everywhere.
        case .string where setting.key == "public": (.string("/"), "/", "/")
        // Beyond loopback a server needs a publish token: a loopback address no default equals.
        case .string where setting.key == "host": (.string("127.0.0.7"), "127.0.0.7", "127.0.0.7")
        case .string: (.string("x-7"), "x-7", setting.isSecret && setting.key != "database" ? "set" : "x-7")
        case .bool: (.bool(true), "true", "on")
        case .choice(let words):
            words.last { $0 != setting.describe(ServerConfiguration()) }.map { (.string($0), $0, $0) } ?? (.string(""), "", "")
        case .strings:
            switch setting.key {
            case "feed":
                (
                    .strings(["https://a.example/f", "https://b.example/f"]), "https://a.example/f,https://b.example/f",
                    "https://a.example/f, https://b.example/f"
                )
            case "upstream":
                (
                    .strings(["team.eng=https://a.example/f", "user:7=https://b.example/f"]),
                    "team.eng=https://a.example/f,user:7=https://b.example/f", "team.eng=https://a.example/f, user:7=https://b.example/f"
                )
            case "cors-origin":
                (
                    .strings(["https://a.example", "http://localhost:3000"]), "https://a.example,http://localhost:3000",
                    "https://a.example, http://localhost:3000"
                )
            case "public-host":
                (.strings(["a.example", "10.0.0.7"]), "a.example,10.0.0.7", "a.example, 10.0.0.7")
            case "public-feed", "insights-feed":
                (.strings(["news", "team.*"]), "news,team.*", "news, team.*")
            case "auth-key":
                (.strings(keyFiles), keyFiles.joined(separator: ","), keyFiles.joined(separator: ", "))
            default:
                (.strings(["10.0.0.7", "10.1.0.0/16"]), "10.0.0.7,10.1.0.0/16", "10.0.0.7, 10.1.0.0/16")
            }
        }
    }

    /// Two HMAC secret files, `a` and `b`, for the settings that name key files.
    static let keyFiles: [String] = {
        let folder = Scratch.path("configuration-keys")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return ["a", "b"].map { name in
            let path = folder.appendingPathComponent("\(name).key").path
            try? Data("a secret of thirty-two bytes or more: \(name)".utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }()

    static func json(_ value: SettingValue) -> String {
        switch value {
        case .int(let value): "\(value)"
        case .double(let value): "\(value)"
        case .string(let value): "\"\(value)\""
        case .bool(let value): "\(value)"
        case .strings(let values): "[" + values.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        }
    }

    /// A configuration file in a folder of its own.
    static func file(_ text: String) throws -> String {
        let folder = Scratch.path("configuration")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("config.json").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func load(flags: [String: SettingValue] = [:], environment: [String: String] = [:]) async throws(ConfigurationError) -> ServerConfiguration
    {
        try await ServerConfiguration(ConfigurationSources(flags: flags, environment: environment))
    }

    /// The error loading fails with, as the operator reads it.
    static func failure(flags: [String: SettingValue] = [:], environment: [String: String] = [:]) async -> String? {
        do {
            _ = try await load(flags: flags, environment: environment)
            return nil
        } catch {
            return error.description
        }
    }

    // MARK: Every setting from every source

    @Test func withNoSourceEverySettingKeepsItsDefault() async throws {
        let loaded = try await Self.load()
        for setting in ServerConfiguration.settings {
            #expect(setting.describe(loaded) == setting.describe(ServerConfiguration()), "\(setting.key)")
        }
    }

    @Test(arguments: ServerConfiguration.settings.map(\.key))
    func everySettingIsReadFromItsFlag(key: String) async throws {
        let setting = try #require(ServerConfiguration.settings.first { $0.key == key })
        let sample = Self.sample(setting)
        let loaded = try await Self.load(flags: [key: sample.value])
        #expect(setting.describe(loaded) == sample.described)
        #expect(sample.described != setting.describe(ServerConfiguration()))
    }

    @Test(arguments: ServerConfiguration.settings.map(\.key))
    func everySettingIsReadFromItsVariable(key: String) async throws {
        let setting = try #require(ServerConfiguration.settings.first { $0.key == key })
        let sample = Self.sample(setting)
        let loaded = try await Self.load(environment: [ServerConfiguration.environmentVariable(of: key): sample.text])
        #expect(setting.describe(loaded) == sample.described)
    }

    @Test(arguments: ServerConfiguration.settings.map(\.key))
    func everySettingIsReadFromItsKeyInTheFile(key: String) async throws {
        let setting = try #require(ServerConfiguration.settings.first { $0.key == key })
        let sample = Self.sample(setting)
        let path = try Self.file("{\"\(key)\": \(Self.json(sample.value))}")
        let loaded = try await Self.load(flags: ["config": .string(path)])
        #expect(setting.describe(loaded) == sample.described)
    }

    @Test func variablesAreNamedAfterTheFlag() {
        #expect(ServerConfiguration.environmentVariable(of: "port") == "PTR_PORT")
        #expect(ServerConfiguration.environmentVariable(of: "max-streams-per-client") == "PTR_MAX_STREAMS_PER_CLIENT")
        #expect(ServerConfiguration.environmentVariable(of: "head-poll") == "PTR_HEAD_POLL")
    }

    @Test func valuesReachTheirFieldsInTheirUnits() async throws {
        let loaded = try await Self.load(environment: [
            "PTR_MAX_STREAMS_PER_CLIENT": "9", "PTR_HEAD_POLL": "0.25", "PTR_MIN_REFRESH_MS": "0",
            "PTR_REQUEST_HEAD_TIMEOUT": "3", "PTR_INSTANCE": "eu-1", "PTR_FEED": "https://a.example/f, https://b.example/f",
            "PTR_DEMO": "no", "PTR_EVENT_LOOPS": "2", "PTR_MAX_SAMPLES_PER_SECOND": "12.5", "PTR_MAX_SAMPLES_PER_REQUEST": "12",
        ])
        #expect(loaded.maxStreamsPerClient == 9)
        #expect(loaded.headPollInterval == .milliseconds(250))
        #expect(loaded.minimumActionDuration == .zero)
        #expect(loaded.requestHeadTimeout == .seconds(3))
        #expect(loaded.instanceName == "eu-1")
        #expect(loaded.feeds == ["https://a.example/f", "https://b.example/f"])
        #expect(loaded.demo == false)
        #expect(loaded.eventLoops == 2)
        #expect(loaded.maxSamplesPerSecond == 12.5)
    }

    // MARK: Precedence

    @Test func aFlagWinsOverAVariableWhichWinsOverTheFileWhichWinsOverTheDefault() async throws {
        let path = try Self.file(#"{"port": 1001, "max-streams": 1002, "max-sessions": 1003}"#)
        let loaded = try await Self.load(
            flags: ["config": .string(path), "port": .int(3001)],
            environment: ["PTR_PORT": "2001", "PTR_MAX_STREAMS": "2002"])
        #expect(loaded.port == 3001)
        #expect(loaded.maxStreams == 2002)
        #expect(loaded.maxSessions == 1003)
        #expect(loaded.maxBodyBytes == ServerConfiguration().maxBodyBytes)
    }

    @Test func theFileIsNamedByAFlagOrAVariable() async throws {
        let fromVariable = try Self.file(#"{"page-size": 11}"#)
        let fromFlag = try Self.file(#"{"page-size": 12}"#)
        #expect(try await Self.load(environment: ["PTR_CONFIG": fromVariable]).pageSize == 11)
        #expect(try await Self.load(flags: ["config": .string(fromFlag)], environment: ["PTR_CONFIG": fromVariable]).pageSize == 12)
    }

    @Test func aListFromAFlagReplacesTheListFromTheEnvironment() async throws {
        let loaded = try await Self.load(flags: ["trusted-proxy": .strings(["10.0.0.1"])], environment: ["PTR_TRUSTED_PROXY": "10.0.0.2,10.0.0.3"])
        #expect(loaded.trustedProxies == ["10.0.0.1"])
    }

    @Test func databaseURLIsReadBelowPTRDatabase() async throws {
        let url = "postgres://ptr@db.example/ptr"
        #expect(try await Self.load(environment: ["DATABASE_URL": url]).database == url)
        #expect(try await Self.load(environment: ["DATABASE_URL": url, "PTR_DATABASE": ":memory:"]).database == ":memory:")
        #expect(try await Self.load(flags: ["database": .string("a.sqlite")], environment: ["DATABASE_URL": url]).database == "a.sqlite")
    }

    @Test func anEmptyVariableCountsAsUnset() async throws {
        let loaded = try await Self.load(environment: ["PTR_PORT": "", "PTR_PUBLISH_TOKEN": "", "PTR_CONFIG": ""])
        #expect(loaded.port == ServerConfiguration().port)
        #expect(loaded.publishToken == nil)
    }

    @Test func theCommandReadsItsOwnSettingsFromTheSameSources() async throws {
        let path = try Self.file(#"{"log-level": "debug", "log-format": "json"}"#)
        let sources = try await ConfigurationSources(
            flags: ["config": .string(path)], environment: ["PTR_LOG_LEVEL": "error"], commandSettings: ["log-level", "log-format"])
        #expect(try await sources.choice("log-level", as: Logger.Level.self) == .error)
        #expect(try await sources.choice("log-format", as: LogFormat.self) == .json)
        let bad = try await ConfigurationSources(environment: ["PTR_LOG_FORMAT": "xml"])
        await #expect(throws: ConfigurationError(setting: "log-format", subject: "PTR_LOG_FORMAT=xml", problem: "not one of text, json")) {
            try await bad.choice("log-format", as: LogFormat.self)
        }
    }

    // MARK: Errors name the value where it was written

    @Test func aBadFlagIsNamedAsWritten() async {
        #expect(await Self.failure(flags: ["port": .int(70000)]) == "--port 70000: must be 0…65535")
        #expect(
            await Self.failure(flags: ["idle-timeout": .double(0)]) == "--idle-timeout 0: must be more than 0 and at most 31536000 seconds (a year)")
        #expect(
            await Self.failure(flags: ["trusted-proxy": .strings(["10.0.0.1", "nope"])])
                == "--trusted-proxy: nope is not an IP address or a CIDR network (such as 10.0.0.0/8)")
        #expect(await Self.failure(flags: ["instance": .string("eu_1")]) == "--instance eu_1: must be 1 to 32 letters, digits or '-'")
        #expect(await Self.failure(flags: ["host": .string("")]) == "--host '': must not be empty")
    }

    @Test func aBadVariableIsNamedAsWritten() async {
        #expect(await Self.failure(environment: ["PTR_PORT": "abc"]) == "PTR_PORT=abc: not a whole number")
        #expect(await Self.failure(environment: ["PTR_PORT": "70000"]) == "PTR_PORT=70000: must be 0…65535")
        #expect(
            await Self.failure(environment: ["PTR_HEAD_POLL": "0"]) == "PTR_HEAD_POLL=0: must be at least 0.1 and at most 31536000 seconds (a year)")
        #expect(
            await Self.failure(environment: ["PTR_KEEPALIVE": "nan"])
                == "PTR_KEEPALIVE=nan: must be at least 1 and at most 31536000 seconds (a year)")
        #expect(await Self.failure(environment: ["PTR_DEMO": "maybe"]) == "PTR_DEMO=maybe: not true or false")
        #expect(
            await Self.failure(environment: ["PTR_FEED": "https://a.example/f,ftp://b.example/f"])
                == "PTR_FEED=https://a.example/f,ftp://b.example/f: ftp://b.example/f is not an http or https URL")
    }

    @Test func aBadValueInTheFileIsNamedByFileAndKey() async throws {
        let path = try Self.file(#"{"max-streams": 0}"#)
        #expect(await Self.failure(flags: ["config": .string(path)]) == "\(path): max-streams: must be at least 1")
        let typed = try Self.file(#"{"port": "8080"}"#)
        #expect(await Self.failure(environment: ["PTR_CONFIG": typed]) == "\(typed): port: not a whole number")
        let list = try Self.file(#"{"feed": "https://a.example/f"}"#)
        #expect(await Self.failure(environment: ["PTR_CONFIG": list]) == "\(list): feed: not a list of strings")
    }

    @Test func aFileThatIsNotASettingsObjectIsRefused() async throws {
        let broken = try Self.file(#"{"port": 1,}"#)
        #expect(await Self.failure(environment: ["PTR_CONFIG": broken])?.hasPrefix("\(broken): not JSON: ") == true)
        let array = try Self.file("[1]")
        #expect(await Self.failure(environment: ["PTR_CONFIG": array]) == #"\#(array): must be a JSON object of settings, such as {"port": 8080}"#)
        let misspelt = try Self.file(#"{"max-stream": 5}"#)
        #expect(await Self.failure(environment: ["PTR_CONFIG": misspelt])?.hasPrefix("\(misspelt): max-stream: not a setting") == true)
        let nested = try Self.file(#"{"limits": {"max-streams": 5}}"#)
        #expect(await Self.failure(environment: ["PTR_CONFIG": nested])?.hasPrefix("\(nested): limits: not a setting") == true)
        #expect(await Self.failure(flags: ["config": .string("/nonexistent/config.json")]) == "/nonexistent/config.json: no such file")
    }

    @Test func aSecretIsNeverRepeatedInAnError() async {
        #expect(await Self.failure(environment: ["PTR_DATABASE": "postgres://u:hunter2@h/d", "PTR_PORT": "x"]) == "PTR_PORT=x: not a whole number")
        let message = await Self.failure(flags: ["publish-token": .string("")])
        #expect(message == "--publish-token: must not be empty")
    }

    @Test func aBadValueInAStrongerSourceIsReportedNotSkipped() async throws {
        let path = try Self.file(#"{"port": 9000}"#)
        #expect(await Self.failure(flags: ["config": .string(path)], environment: ["PTR_PORT": "x"]) == "PTR_PORT=x: not a whole number")
    }

    // MARK: validate(), for code that embeds the server

    /// A configuration one field away from the defaults, and what `validate()` says of it.
    struct Invalid: Sendable, CustomTestStringConvertible {
        let message: String
        let change: @Sendable (inout ServerConfiguration) -> Void

        init(_ message: String, _ change: @escaping @Sendable (inout ServerConfiguration) -> Void) {
            self.message = message
            self.change = change
        }

        var testDescription: String { message }
    }

    static let invalid: [Invalid] = [
        Invalid("port -1: must be 0…65535") { $0.port = -1 },
        Invalid("max-sessions 0: must be at least 1") { $0.maxSessions = 0 },
        Invalid("max-streams-per-client 0: must be at least 1") { $0.maxStreamsPerClient = 0 },
        Invalid("page-size 0: must be 1…1000") { $0.pageSize = 0 },
        Invalid("max-head-bytes 100000: must be 1…81920") { $0.maxHeadBytes = 100_000 },
        Invalid("stream-send-buffer 2147483648: must be 1…2147483647") { $0.streamSendBufferBytes = Int(Int32.max) + 1 },
        Invalid("reconnect-delay-ms 0: must be 1…3600000") { $0.reconnectDelayMilliseconds = 0 },
        Invalid("event-loops 0: must be 1…256") { $0.eventLoops = 0 },
        Invalid("max-samples-per-second inf: must be a number from 1 to 1000000000000") { $0.maxSamplesPerSecond = .infinity },
        // Each of these passed validation and then trapped or spun the server.
        Invalid("max-samples-per-second 1e-19: must be a number from 1 to 1000000000000") { $0.maxSamplesPerSecond = 1e-19 },
        Invalid("page-size 9223372036854775807: must be 1…1000") { $0.pageSize = .max },
        Invalid("keepalive 0.5: must be at least 1 and at most 31536000 seconds (a year)") { $0.keepaliveInterval = .milliseconds(500) },
        Invalid("head-poll 0.01: must be at least 0.1 and at most 31536000 seconds (a year)") { $0.headPollInterval = .milliseconds(10) },
        Invalid("max-body-bytes 1073741825: must be 1…1073741824") { $0.maxBodyBytes = (1 << 30) + 1 },
        Invalid("max-feed-bytes 9223372036854775807: must be 1…1073741824") { $0.maxFeedBytes = .max },
        Invalid("replay-buffer-bytes 1023: must be at least 1024") { $0.replayBufferBytes = 1023 },
        Invalid("public /nonexistent/Public: no such folder") { $0.publicDirectory = "/nonexistent/Public" },
        Invalid("public /dev/null: is not a folder") { $0.publicDirectory = "/dev/null" },
        Invalid("send-timeout 0: must be more than 0 and at most 31536000 seconds (a year)") { $0.sendTimeout = .zero },
        Invalid("head-poll -1: must be at least 0.1 and at most 31536000 seconds (a year)") { $0.headPollInterval = .seconds(-1) },
        Invalid("feed-timeout 34560000: must be more than 0 and at most 31536000 seconds (a year)") { $0.feedTimeout = .seconds(400 * 24 * 3600) },
        Invalid("min-refresh-ms -5: must be 0…3600000") { $0.minimumActionDuration = .milliseconds(-5) },
        Invalid("instance 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa': must be 1 to 32 letters, digits or '-'") {
            $0.instanceName = String(repeating: "a", count: 33)
        },
        Invalid("instance '': must be 1 to 32 letters, digits or '-'") { $0.instanceName = "" },
        Invalid("instance 'é': must be 1 to 32 letters, digits or '-'") { $0.instanceName = "é" },
        Invalid("trusted-proxy: 10.0.0.0/33 is not an IP address or a CIDR network (such as 10.0.0.0/8)") { $0.trustedProxies = ["10.0.0.0/33"] },
        Invalid("feed: example.com/feed is not an http or https URL") { $0.feeds = ["example.com/feed"] },
        Invalid("upstream: https://a.example/f is not NAME=URL") { $0.upstreams = ["https://a.example/f"] },
        Invalid("upstream: -team is not a feed's name (1 to 128 letters, digits and ._~:@-, starting with a letter or a digit)") {
            $0.upstreams = ["-team=https://a.example/f"]
        },
        Invalid("upstream: example.com/feed is not an http or https URL") { $0.upstreams = ["team=example.com/feed"] },
        Invalid("database '': must not be empty") { $0.database = "" },
    ]

    @Test(arguments: invalid)
    func validateNamesTheField(_ invalid: Invalid) {
        var configuration = ServerConfiguration()
        invalid.change(&configuration)
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        do {
            try configuration.validate()
        } catch {
            #expect(error.description == invalid.message)
        }
    }

    @Test func theDefaultsAndTheEdgesOfEveryRangeAreValid() throws {
        try ServerConfiguration().validate()
        var configuration = ServerConfiguration()
        configuration.port = 65535
        configuration.eventLoops = 256
        configuration.maxHeadBytes = 80 * 1024
        configuration.minimumActionDuration = .zero
        configuration.instanceName = "eu-west-1"
        configuration.headPollInterval = .milliseconds(100)
        configuration.keepaliveInterval = .seconds(1)
        configuration.pageSize = 1000
        configuration.replayBufferBytes = 1024
        configuration.maxBodyBytes = 1 << 30
        configuration.maxFeedBytes = 1 << 30
        configuration.maxSamplesPerSecond = 1
        configuration.maxSamplesPerRequest = 1
        configuration.trustedProxies = ["10.0.0.0/8", "::1"]
        configuration.feeds = ["https://example.com/feed.xml"]
        try configuration.validate()
    }

    /// A request may never carry more samples than the rate lets through in a second: the
    /// limit is derived, so lowering the rate alone starts a server that still takes samples.
    @Test func samplesPerRequestAreCappedAtOneSecondOfTheRate() throws {
        var configuration = ServerConfiguration()
        configuration.maxSamplesPerSecond = 10
        try configuration.validate()
        #expect(configuration.samplesPerRequestLimit == 10)
        configuration.maxSamplesPerRequest = 4
        #expect(configuration.samplesPerRequestLimit == 4)
        configuration.maxSamplesPerSecond = 10.9
        configuration.maxSamplesPerRequest = 64
        #expect(configuration.samplesPerRequestLimit == 10)
    }

    @Test func theLargestRateAndSamplesPerRequestAreValidTogether() throws {
        var configuration = ServerConfiguration()
        configuration.maxSamplesPerSecond = 1e12
        configuration.maxSamplesPerRequest = 1_000_000
        try configuration.validate()
    }

    /// A folder given that is not there is refused where it was written. (The default may be
    /// missing: the start then warns, naming `--public`, which `Tests/e2e/config.sh` checks.)
    @Test func aMissingPublicFolderIsRefusedUnlessItIsTheDefault() async throws {
        var configuration = ServerConfiguration()
        configuration.publicDirectory = "/nonexistent/\(ServerConfiguration().publicDirectory)"
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        #expect(await Self.failure(flags: ["public": .string("/nonexistent/x")]) == "--public /nonexistent/x: no such folder")
        #expect(await Self.failure(environment: ["PTR_PUBLIC": "/nonexistent/x"]) == "PTR_PUBLIC=/nonexistent/x: no such folder")
    }

    @Test func unknownPTRVariablesAreNamedWithTheSettingTheyMostLikelyMeant() async throws {
        let sources = try await ConfigurationSources(
            environment: [
                "PTR_MAX_STREAM": "5", "PTR_PORT": "8080", "PTR_CONFIG": "", "PTR_ZZZZZZZZZZZZ": "1", "HOME": "/root", "DATABASE_URL": "x",
                "PTR_LOG_LEVEL": "info",
            ], commandSettings: ["log-level", "log-format"])
        #expect(sources.unknownVariables == ["PTR_MAX_STREAM", "PTR_ZZZZZZZZZZZZ"])
        #expect(
            sources.unknownVariablesWarning
                == "PTR_MAX_STREAM (PTR_MAX_STREAMS?), PTR_ZZZZZZZZZZZZ are not settings and are ignored; settings are PTR_ and a flag's name, such as PTR_MAX_STREAMS"
        )
        let clean = try await ConfigurationSources(environment: ["PTR_REPLAY_BUFFER_BYTES": "4096", "PATH": "/bin"])
        #expect(clean.unknownVariablesWarning == nil)
    }

    @Test func buildingTheServerValidatesItsConfiguration() async {
        var configuration = TestServer.configuration()
        configuration.maxStreams = 0
        await #expect(throws: ConfigurationError(setting: "max-streams", value: "0", problem: "must be at least 1")) {
            try await RefreshApplication.build(configuration: configuration, feed: MemoryFeed())
        }
    }

    // MARK: The event loops the server makes

    /// The loops are shut down with the server, and only after it: a service listed after
    /// the closer, as the listener is, still has working loops when it is told to stop.
    @Test func theServersOwnEventLoopsAreShutDownAfterTheServer() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let usable = UsableAtShutdown(group: group)
        let services = ServiceGroup(configuration: .init(services: [EventLoopGroupCloser(group: group), usable], logger: Logger(label: "test")))
        #if os(Linux)
        #expect(Self.threads(of: group) == 2)
        #endif
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await services.run() }
            try await Task.sleep(for: .milliseconds(50))
            await services.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(usable.loopsWorked.withLock { $0 } == true)
        #if os(Linux)
        #expect(Self.threads(of: group) == 0)
        #endif
    }

    #if os(Linux)
    /// The threads of a group still alive, found by the name NIO gives them.
    static func threads(of group: MultiThreadedEventLoopGroup) -> Int {
        // "MultiThreadedEventLoopGroup { threadPattern = NIO-ELT-7-#* }"
        let description = String(describing: group)
        guard let start = description.range(of: "threadPattern = ")?.upperBound,
            let end = description.range(of: "*", range: start..<description.endIndex)?.lowerBound
        else { return -1 }
        let prefix = String(description[start..<end])
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix(prefix) == true
        }.count
    }
    #endif

    @Test func aServerWithItsOwnEventLoopsStopsCleanly() async throws {
        try await TestServer.run(TestServer.configuration { $0.eventLoops = 2 }) { server in
            let reply = try await server.get("/healthz")
            #expect(reply.status == 200)
        }
    }
}

/// Records whether the event loops still ran a task when the service was told to stop.
private final class UsableAtShutdown: Service, Sendable {
    let group: MultiThreadedEventLoopGroup
    let loopsWorked = Mutex<Bool?>(nil)

    init(group: MultiThreadedEventLoopGroup) {
        self.group = group
    }

    func run() async throws {
        try? await gracefulShutdown()
        let worked = (try? await group.next().submit { true }.get()) ?? false
        loopsWorked.withLock { $0 = worked }
    }
}
