import Foundation
import RefreshServerTesting
import Testing

@testable import RefreshServer

/// The command line read from the settings table: flags, their values, their refusals with
/// ArgumentParser's words, and `--help`.
@Suite struct CommandLineSettingsTests {
    static func parsed(_ arguments: String...) throws(CommandLineError) -> [String: SettingValue]? {
        guard case .settings(let flags) = try CommandLineSettings.parse(arguments) else { return nil }
        return flags
    }

    static func refusal(_ arguments: String...) -> String? {
        do {
            _ = try CommandLineSettings.parse(arguments)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func flagsBecomeTheValuesOfTheirSettings() throws {
        let flags = try Self.parsed(
            "--port", "0", "--max-samples-per-second=12.5", "--feed", "https://a.example/f", "--feed=https://b.example/f", "--demo",
            "--no-steer-by-client", "--log-format", "json", "--config", "settings.json", "--port", "9", "--reconnect-delay-ms", "-1")
        #expect(
            flags == [
                "port": .int(9), "max-samples-per-second": .double(12.5), "feed": .strings(["https://a.example/f", "https://b.example/f"]),
                "demo": .bool(true), "steer-by-client": .bool(false), "log-format": .string("json"), "config": .string("settings.json"),
                "reconnect-delay-ms": .int(-1),
            ])
        #expect(try Self.parsed() == [:])
        #expect(try Self.parsed("--disable-publishing") == ["disable-publishing": .bool(true)])
        #expect(try CommandLineSettings.parse(["--port", "1", "--help"]) == .help)
        #expect(try CommandLineSettings.parse(["-h"]) == .help)
        #expect(try CommandLineSettings.parse(["--bogus", "--help"]) == .help, "help wins over what is wrong")
        #expect(try CommandLineSettings.parse(["--port", "--help"]) == .help)
        #expect(try Self.parsed("--port", "7", "--") == ["port": .int(7)], "-- ends the options")
    }

    @Test func whatDoesNotParseIsOneLineNamingIt() {
        #expect(Self.refusal("--max-streams", "abc") == "The value 'abc' is invalid for '--max-streams <count>'")
        #expect(Self.refusal("--max-streams=abc") == "The value 'abc' is invalid for '--max-streams <count>'")
        #expect(Self.refusal("--keepalive", "soon") == "The value 'soon' is invalid for '--keepalive <seconds>'")
        #expect(
            Self.refusal("--log-format", "xml")
                == "The value 'xml' is invalid for '--log-format <log-format>'. Please provide one of 'text' and 'json'.")
        #expect(Self.refusal("--bogus") == "Unknown option '--bogus'")
        #expect(Self.refusal("--max-stream", "5") == "Unknown option '--max-stream'. Did you mean '--max-streams'?")
        #expect(Self.refusal("--no-disable-publishing") == "Unknown option '--no-disable-publishing'. Did you mean '--disable-publishing'?")
        #expect(Self.refusal("-p", "3") == "Unknown option '-p'")
        #expect(Self.refusal("--port") == "Missing value for '--port <number>'")
        #expect(Self.refusal("--port", "--host", "::1") == "Missing value for '--port <number>'")
        #expect(Self.refusal("extra") == "Unexpected argument 'extra'")
        #expect(Self.refusal("--", "--help") == "Unexpected argument '--help'")
        #expect(Self.refusal("--demo=true") == "The option '--demo' does not take any value, but 'true' was specified.")
        #expect(Self.refusal("--no-demo=1") == "The option '--no-demo' does not take any value, but '1' was specified.")
    }

    @Test func helpShowsEachSettingWithItsDefaultAndVariable() {
        let help = CommandLineSettings.help(command: "refresh-server", overview: "Serves.", discussion: "Flags win.")
        #expect(help.hasPrefix("OVERVIEW: Serves.\n\nFlags win.\n\nUSAGE: refresh-server <options>\n\nOPTIONS:\n"))
        #expect(help.contains("  --port <number>         Port to listen on; 0 picks a free one (the URL is\n"))
        let words = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("default: 8080; env: PTR_PORT"))
        #expect(words.contains("env: PTR_DATABASE or DATABASE_URL"))
        #expect(help.contains("  --demo/--no-demo        Seed an empty store with example items. (default: on\n"))
        #expect(help.contains("  --config <file>"))
        #expect(help.hasSuffix("  -h, --help              Show help information.\n"))
        #expect(help.split(separator: "\n").allSatisfy { $0.count < 80 })
    }
}

/// Every setting is one declaration: its flag, its variable and its file key all come from
/// its one name, and it says what it does and what its default is, so that a setting added
/// to the table cannot miss any of them.
@Suite struct SettingsTableTests {
    typealias Setting = ServerConfiguration.Setting

    static let help = CommandLineSettings.help(command: "refresh-server", overview: "", discussion: "")

    /// One value of the setting's kind as the command line gives it, and as it is then held.
    static func argument(for setting: Setting) -> (arguments: [String], value: SettingValue) {
        switch setting.kind {
        case .int: ([setting.flag, "7"], .int(7))
        case .double: ([setting.flag, "7.5"], .double(7.5))
        case .string: ([setting.flag, "x-7"], .string("x-7"))
        case .strings: ([setting.flag, "x-7", setting.flag, "y-7"], .strings(["x-7", "y-7"]))
        case .choice(let words): (["\(setting.flag)=\(words[words.count - 1])"], .string(words[words.count - 1]))
        case .bool: ([setting.flag], .bool(true))
        }
    }

    @Test func theNamesAreUnique() {
        let keys = CommandLineSettings.table.map(\.key)
        #expect(Set(keys).count == keys.count, "\(keys)")
    }

    @Test(arguments: CommandLineSettings.table.map(\.key))
    func aSettingIsWholeFromOneDeclaration(key: String) async throws {
        let setting = try #require(CommandLineSettings.table.first { $0.key == key })
        #expect(key.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" } && !key.hasPrefix("-"), "a flag's name")
        #expect(setting.flag == "--\(key)")
        #expect(setting.variable == "PTR_" + key.uppercased().replacingOccurrences(of: "-", with: "_"))

        let (arguments, value) = Self.argument(for: setting)
        #expect(try CommandLineSettings.parse(arguments) == .settings([key: value]), "the flag sets it")
        if setting.isNegatable {
            #expect(try CommandLineSettings.parse(["--no-\(key)"]) == .settings([key: .bool(false)]), "--no- unsets it")
        }

        #expect(setting.help.count > 10 && setting.help.hasSuffix("."), "what it does, as a sentence: \(setting.help)")
        #expect(setting.kind == .bool ? setting.valueName.isEmpty : !setting.valueName.isEmpty, "what its value is")
        let described = setting.describe(ServerConfiguration())
        #expect(key == "config" || !described.isEmpty, "its default, as --help shows it")
        let line = Self.help.split(separator: "\n").first { $0.hasPrefix("  \(setting.usage)") || $0.hasPrefix("  \(setting.flag)/--no-") }
        #expect(line != nil, "its --help line")
        #expect(Self.help.split(whereSeparator: \.isWhitespace).joined(separator: " ").contains("env: \(setting.variable)"), "its variable in --help")

        // Its variable and its file key are read: the set of keys a source knows is the table's.
        guard key != "config" else { return }
        let sources = try await ConfigurationSources(environment: [setting.variable: "7"])
        #expect(sources.unknownVariables.isEmpty, "its variable is a setting's")
        let folder = Scratch.path("table")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("config.json").path
        try Data("{\"\(key)\": null}".utf8).write(to: URL(fileURLWithPath: path))
        _ = try await ConfigurationSources(flags: ["config": .string(path)])
    }
}
