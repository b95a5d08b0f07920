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
