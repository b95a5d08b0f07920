import Configuration
import Foundation
import RefreshJSON

/// Where `refresh-server` finds its settings, strongest first: its flags, then environment
/// variables, then a JSON configuration file (`--config FILE`, or `PTR_CONFIG`), then the
/// defaults of ``ServerConfiguration``. A setting has one name everywhere: its flag's long
/// name (`max-streams`) is the file's key and, upper-cased with `_` for `-` after `PTR_`,
/// the variable's (`PTR_MAX_STREAMS`). A setting's alias (`DATABASE_URL` for `database`)
/// sets it too, below `PTR_…`. An empty variable counts as unset.
///
/// Values are read through swift-configuration, with one reader per source rather than one
/// over all of them: a value that cannot be read, or one ``ServerConfiguration/validate()``
/// refuses, is then named as it was written where it was found (`PTR_PORT=abc: not a whole
/// number`, `config.json: max-streams: must be at least 1`), and a source that holds a bad
/// value is never silently skipped for the next one.
public struct ConfigurationSources: Sendable {
    /// Where a value was found.
    enum Origin: Sendable, Equatable {
        /// A flag, with its value as given; nil for a repeatable flag, whose error names the
        /// element at fault.
        case flag(String?)
        case environment(name: String, value: String)
        case file(path: String)

        /// The value as it was written, for an error: `--port 70000`, `PTR_PORT=abc`,
        /// `config.json: port`; a secret's value is left out.
        func subject(for key: String, isSecret: Bool) -> String {
            switch self {
            case .flag(let value?) where !isSecret: "--\(key) \(value)"
            case .flag: "--\(key)"
            case .environment(let name, let value): isSecret ? name : "\(name)=\(value)"
            case .file(let path): "\(path): \(key)"
            }
        }
    }

    /// One source: a reader over its provider, and how a value found there is named.
    private struct Source: Sendable {
        let reader: ConfigReader
        /// The only keys this source holds, when it is an alias for a few.
        let keys: Set<String>?
        let origin: @Sendable (_ key: String) -> Origin
    }

    private let sources: [Source]
    /// `PTR_` variables that name no setting, sorted: most likely a mistyped one, which
    /// would otherwise be silently ignored.
    public let unknownVariables: [String]
    /// Every variable that names a setting, for a suggestion.
    private let knownVariables: [String]

    /// Reads the flags and the environment, and the configuration file they name.
    ///
    /// - Parameters:
    ///   - flags: the flags given on the command line, by key (`"port": .int(8080)`), the
    ///     configuration file's path as `config`.
    ///   - environment: the process's environment.
    ///   - commandSettings: keys the command reads itself with ``choice(_:as:)``
    ///     (`log-level`), so that the configuration file may hold them.
    /// - Throws: a ``ConfigurationError`` when the file cannot be read, is not a JSON object,
    ///   or holds a key that is not a setting.
    public init(
        flags: [String: SettingValue] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        commandSettings: Set<String> = []
    ) async throws(ConfigurationError) {
        let known = Set(ServerConfiguration.settings.map(\.key)).union(commandSettings)
        let knownVariables = known.union(["config"]).map(ServerConfiguration.environmentVariable(of:)).sorted()
        self.knownVariables = knownVariables
        unknownVariables = environment.keys.filter { $0.hasPrefix("PTR_") && !knownVariables.contains($0) }.sorted()
        assert(flags.keys.allSatisfy { known.contains($0) || $0 == "config" }, "flags that are no setting: \(flags.keys.sorted())")
        let environment = environment.filter { !$0.value.isEmpty }
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (key, value) in flags {
            let content: ConfigContent =
                switch value {
                case .int(let value): .int(value)
                case .double(let value): .double(value)
                case .string(let value): .string(value)
                case .strings(let value): .stringArray(value)
                case .bool(let value): .bool(value)
                }
            values[AbsoluteConfigKey([key])] = ConfigValue(content, isSecret: false)
        }
        let variables = EnvironmentVariablesProvider(environmentVariables: environment)
        var sources = [
            Source(reader: ConfigReader(provider: InMemoryProvider(name: "flags", values: values)), keys: nil) { key in
                switch flags[key] {
                case .int(let value): .flag("\(value)")
                case .double(let value): .flag(value.shortDescription)
                case .string(let value): .flag(value.isEmpty ? "''" : value)
                case .strings, .bool, nil: .flag(nil)
                }
            },
            Source(reader: ConfigReader(provider: variables.prefixKeys(with: ["ptr"])), keys: nil) { key in
                let name = ServerConfiguration.environmentVariable(of: key)
                return .environment(name: name, value: environment[name] ?? "")
            },
        ]
        for setting in ServerConfiguration.settings {
            guard let alias = setting.alias else { continue }
            let aliasKey = AbsoluteConfigKey(alias.lowercased().split(separator: "_").map(String.init))
            sources.append(
                Source(reader: ConfigReader(provider: variables.mapKeys { _ in aliasKey }), keys: [setting.key]) { _ in
                    .environment(name: alias, value: environment[alias] ?? "")
                })
        }
        let file = try await Self.value(of: "config", kind: .string, isSecret: false, in: sources)
        if case (.string(let path), _)? = file {
            sources.append(try await Self.file(at: path, known: known))
        }
        self.sources = sources
    }

    /// The one line to warn with when ``unknownVariables`` holds any, naming each, and the
    /// setting each most likely meant.
    public var unknownVariablesWarning: String? {
        guard !unknownVariables.isEmpty else { return nil }
        let described = unknownVariables.map { name in
            let nearest = knownVariables.map { ($0, name.edits(to: $0)) }.min { $0.1 < $1.1 }
            guard let nearest, nearest.1 <= 3 else { return name }
            return "\(name) (\(nearest.0)?)"
        }
        let verb = unknownVariables.count == 1 ? "is not a setting and is" : "are not settings and are"
        return "\(described.joined(separator: ", ")) \(verb) ignored; settings are PTR_ and a flag's name, such as PTR_MAX_STREAMS"
    }

    /// A setting the command reads itself, one of a few words (`log-level`).
    public func choice<Value: RawRepresentable<String> & CaseIterable>(
        _ key: String, as type: Value.Type
    ) async throws(ConfigurationError) -> Value? {
        for source in sources where source.keys?.contains(key) ?? true {
            let value: Value?
            do {
                value = try await source.reader.fetchString(forKey: ConfigKey([key]), as: Value.self)
            } catch {
                let words = Value.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError(setting: key, subject: source.origin(key).subject(for: key, isSecret: false), problem: "not one of \(words)")
            }
            if let value { return value }
        }
        return nil
    }

    /// A setting's value and where it was found, or nil when no source holds it.
    func value(of setting: ServerConfiguration.Setting) async throws(ConfigurationError) -> (SettingValue, Origin)? {
        try await Self.value(of: setting.key, kind: setting.kind, isSecret: setting.isSecret, in: sources)
    }

    private static func value(
        of key: String, kind: ServerConfiguration.Setting.Kind, isSecret: Bool, in sources: [Source]
    ) async throws(ConfigurationError) -> (SettingValue, Origin)? {
        let configKey = ConfigKey([key])
        for source in sources where source.keys?.contains(key) ?? true {
            let value: SettingValue?
            do {
                let reader = source.reader
                value =
                    switch kind {
                    case .int: try await reader.fetchInt(forKey: configKey, isSecret: isSecret).map(SettingValue.int)
                    case .double: try await reader.fetchDouble(forKey: configKey, isSecret: isSecret).map(SettingValue.double)
                    case .string: try await reader.fetchString(forKey: configKey, isSecret: isSecret).map(SettingValue.string)
                    case .strings: try await reader.fetchStringArray(forKey: configKey, isSecret: isSecret).map(SettingValue.strings)
                    case .bool: try await reader.fetchBool(forKey: configKey, isSecret: isSecret).map(SettingValue.bool)
                    case .choice(let words):
                        try await reader.fetchString(forKey: configKey, isSecret: isSecret).map { word in
                            guard words.contains(word) else { throw ConfigurationError("not one of the words") }
                            return SettingValue.string(word)
                        }
                    }
            } catch {
                throw ConfigurationError(
                    setting: key, subject: source.origin(key).subject(for: key, isSecret: isSecret), problem: "not \(kind.expected)")
            }
            if let value { return (value, source.origin(key)) }
        }
        return nil
    }

    /// The configuration file: a JSON object whose keys are settings. It is parsed here
    /// first so that a file that is not JSON, or holds a misspelt key, is refused with
    /// where and why, rather than read as holding nothing.
    private static func file(at path: String, known: Set<String>) async throws(ConfigurationError) -> Source {
        func refused(_ problem: String, key: String? = nil) -> ConfigurationError {
            ConfigurationError(setting: nil, subject: key.map { "\(path): \($0)" } ?? path, problem: problem)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw refused(FileManager.default.fileExists(atPath: path) ? "cannot be read" : "no such file")
        }
        let document: JSONValue
        do {
            document = try JSONParser.parse(Array(data))
        } catch {
            throw refused("not JSON: \(error.reason) at byte \(error.offset)")
        }
        guard case .object(let members) = document else {
            throw refused(#"must be a JSON object of settings, such as {"port": 8080}"#)
        }
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            throw refused("not a setting (a key is a flag's name without the dashes, such as \"max-streams\")", key: unknown)
        }
        let provider: FileProvider<JSONSnapshot>
        do {
            provider = try await FileProvider<JSONSnapshot>(filePath: .init(path))
        } catch {
            throw refused("cannot be read: \(error)")
        }
        return Source(reader: ConfigReader(provider: provider), keys: nil) { _ in .file(path: path) }
    }
}

extension ServerConfiguration {
    /// The defaults, overridden by what the sources hold, then validated: an error names the
    /// value as it was written where it was found (`--port 70000: must be 0…65535`).
    public init(_ sources: ConfigurationSources) async throws(ConfigurationError) {
        self.init()
        var origins: [String: ConfigurationSources.Origin] = [:]
        for setting in Self.settings {
            guard let (value, origin) = try await sources.value(of: setting) else { continue }
            setting.assign(&self, value)
            origins[setting.key] = origin
        }
        do {
            try validate()
        } catch {
            guard let key = error.setting, let origin = origins[key] else { throw error }
            let isSecret = Self.settings.first { $0.key == key }?.isSecret ?? false
            throw ConfigurationError(setting: key, subject: origin.subject(for: key, isSecret: isSecret), problem: error.problem)
        }
    }
}
