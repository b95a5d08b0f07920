import Foundation
import Testing

@testable import RefreshServer

/// The flag table of `docs/configuration.md` against the settings table the command line,
/// the variables and the configuration file are read from.
@Suite struct SettingsDocumentTests {
    /// A row of the table: its flag (`--demo` of `--demo` / `--no-demo`) and its default column.
    struct Row: Equatable {
        var flag: String
        var defaultValue: String
    }

    static func documentedRows() throws -> [Row] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var rows: [Row] = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `--") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4, let flag = cells[1].split(separator: "`").first else { continue }
            rows.append(Row(flag: String(flag), defaultValue: cells[2]))
        }
        return rows
    }

    static let tableStart = "<!-- settings table: made from the settings by `bash scripts/settings-table`; edit them, not this -->"
    static let tableEnd = "<!-- settings table end -->"

    /// The table between the document's markers is the one the settings make. With
    /// `PTR_WRITE_SETTINGS_TABLE=1` (`scripts/settings-table`), it is written there instead.
    @Test func theFlagTableIsMadeFromTheSettings() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = root.appendingPathComponent("docs/configuration.md")
        let text = try String(contentsOf: file, encoding: .utf8)
        let start = try #require(text.range(of: Self.tableStart + "\n"), "no start marker")
        let end = try #require(text.range(of: Self.tableEnd, range: start.upperBound..<text.endIndex), "no end marker")
        let made = CommandLineSettings.flagTable()
        if ProcessInfo.processInfo.environment["PTR_WRITE_SETTINGS_TABLE"] == "1" {
            try (text[..<start.upperBound] + made + text[end.lowerBound...]).write(to: file, atomically: true, encoding: .utf8)
            return
        }
        #expect(String(text[start.upperBound..<end.lowerBound]) == made, "the flag table is not the settings': run bash scripts/settings-table")
    }

    /// `--help` says each setting as the manual does, as plain text.
    @Test func helpShowsTheManualsWordsAsPlainText() throws {
        let host = try #require(ServerConfiguration.settings.first { $0.key == "host" })
        #expect(host.help.contains("[the security guide](security.md#security)"))
        #expect(host.plainHelp.hasPrefix("Address to listen on; beyond loopback the server starts only with --publish-token, --auth-key"))
        #expect(host.plainHelp.hasSuffix("(see the security guide)."))
        let database = try #require(ServerConfiguration.settings.first { $0.key == "database" })
        #expect(database.plainHelp.contains("postgres://USER[:PASSWORD]@HOST[:PORT]/DB"), "a [ that is text was read as a link")
        #expect(!host.plainHelp.contains("`"))
    }

    @Test func everySettingHasOneRowAndEveryRowIsASetting() throws {
        let rows = try Self.documentedRows()
        let documented = rows.map(\.flag)
        #expect(Set(documented).count == documented.count, "a flag is documented twice")
        let declared = CommandLineSettings.table.map { "--\($0.key)" }
        #expect(Set(documented).subtracting(declared).isEmpty, "documented, no setting: \(Set(documented).subtracting(declared).sorted())")
        #expect(Set(declared).subtracting(documented).isEmpty, "a setting without a row: \(Set(declared).subtracting(documented).sorted())")
    }

    /// A default the table writes as a value (in backticks) is the one the server starts with.
    @Test func aDefaultWrittenAsAValueIsTheServersDefault() throws {
        let defaults = ServerConfiguration()
        let settings = Dictionary(uniqueKeysWithValues: CommandLineSettings.table.map { ("--\($0.key)", $0) })
        var compared = 0
        for row in try Self.documentedRows() where row.defaultValue.hasPrefix("`") && row.defaultValue.hasSuffix("`") {
            guard let setting = settings[row.flag] else { continue }
            let value = String(row.defaultValue.dropFirst().dropLast())
            #expect(setting.describe(defaults) == value, "\(row.flag): documented \(value), starts with \(setting.describe(defaults))")
            compared += 1
        }
        #expect(compared >= 30)
    }

    /// A flag that can be turned off is documented with both forms.
    @Test func aNegatableFlagIsDocumentedWithItsNoForm() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        for setting in CommandLineSettings.table where setting.isNegatable {
            #expect(text.contains("`--no-\(setting.key)`"), "--no-\(setting.key)")
        }
    }
}
