import Foundation

/// The command line of `refresh-server`, read and explained from the settings table alone:
/// a setting declared in ``ServerConfiguration/settings`` has its flag, its `--help` line
/// (with its default and its variable) and its parse-time check without another line.
///
/// Why not ArgumentParser's `@Option`s: its options are property wrappers, one stored
/// property per flag, so a table cannot produce them; every setting would again be written
/// once as a field, once in the table, once as an option and once in a map from the one to
/// the other, with string keys a typo compiles past. Why not swift-configuration's
/// `CommandLineArgumentsProvider`: it takes any `--name`, so a mistyped flag would be
/// ignored rather than refused; it splits values at commas and takes the words after a
/// flag as a list; it has no `--no-` form and no help. So the command line is read here,
/// the way ArgumentParser read it (`--name value`, `--name=value`, a list by repeating its
/// flag, the last of a repeated value winning), with its messages and its exit status (64,
/// EX_USAGE), and the values go on to ``ConfigurationSources`` as its strongest source.
public enum CommandLineSettings {
    /// What the command line asks for.
    public enum Request: Sendable, Equatable {
        /// `--help` or `-h`: the text of ``help(command:overview:discussion:)``.
        case help
        /// The flags given, by setting key (`"port": .int(8080)`), the file's path as `config`.
        case settings([String: SettingValue])
    }

    typealias Setting = ServerConfiguration.Setting

    /// Every setting the command line sets, in the order `--help` lists them.
    static var table: [Setting] { [ServerConfiguration.configurationFile] + ServerConfiguration.settings }

    /// Reads the arguments after the command's name.
    ///
    /// - Throws: a ``CommandLineError`` naming the argument that is not a flag, a flag that is
    ///   no setting, or a value that is not of its setting's kind.
    public static func parse(_ arguments: [String]) throws(CommandLineError) -> Request {
        // As with ArgumentParser, a help flag anywhere before `--` wins over what is wrong.
        let options = arguments.prefix { $0 != "--" }
        if options.contains("--help") || options.contains("-h") { return .help }
        var flags: [String: SettingValue] = [:]
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                // The end of the options: the command takes no argument after it.
                if index < arguments.endIndex { throw CommandLineError("Unexpected argument '\(arguments[index])'") }
                break
            }
            guard argument.hasPrefix("-"), argument.count > 1 else { throw CommandLineError("Unexpected argument '\(argument)'") }
            var name = argument
            var attached: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                attached = String(argument[argument.index(after: equals)...])
            }
            if let setting = table.first(where: { $0.kind == .bool && $0.isNegatable && "--no-\($0.key)" == name }) {
                if let attached { throw CommandLineError.takesNoValue("--no-\(setting.key)", attached) }
                flags[setting.key] = .bool(false)
                continue
            }
            guard let setting = table.first(where: { $0.flag == name }) else { throw CommandLineError.unknown(name, among: table) }
            if setting.kind == .bool {
                if let attached { throw CommandLineError.takesNoValue(setting.flag, attached) }
                flags[setting.key] = .bool(true)
                continue
            }
            let text: String
            if let attached {
                text = attached
            } else if index < arguments.endIndex, !looksLikeAFlag(arguments[index]) {
                text = arguments[index]
                index += 1
            } else {
                throw CommandLineError("Missing value for '\(setting.usage)'")
            }
            flags[setting.key] = try value(text, of: setting, adding: flags[setting.key])
        }
        return .settings(flags)
    }

    /// A flag, rather than a value that starts with a dash such as `-1`.
    private static func looksLikeAFlag(_ argument: String) -> Bool {
        argument.hasPrefix("-") && argument.count > 1 && Double(argument) == nil
    }

    private static func value(_ text: String, of setting: Setting, adding earlier: SettingValue?) throws(CommandLineError) -> SettingValue {
        let invalid = CommandLineError("The value '\(text)' is invalid for '\(setting.usage)'")
        switch setting.kind {
        case .int:
            guard let value = Int(text) else { throw invalid }
            return .int(value)
        case .double:
            guard let value = Double(text) else { throw invalid }
            return .double(value)
        case .string:
            return .string(text)
        case .strings:
            guard case .strings(let values)? = earlier else { return .strings([text]) }
            return .strings(values + [text])
        case .choice(let words):
            guard words.contains(text) else {
                let quoted = words.map { "'\($0)'" }
                let listed = quoted.dropLast().joined(separator: ", ") + " and " + (quoted.last ?? "")
                throw CommandLineError("\(invalid.message). Please provide one of \(listed).")
            }
            return .string(text)
        case .bool:
            return .bool(true)
        }
    }

    /// `--help`: each setting's flag, what it does, its default and its variable, in lines
    /// shorter than 80 columns, as ArgumentParser laid them out.
    public static func help(command: String, overview: String, discussion: String) -> String {
        let defaults = ServerConfiguration()
        let width = 79
        var lines = wrap("OVERVIEW: \(overview)", width: width) + [""]
        for paragraph in discussion.split(separator: "\n") { lines += wrap(String(paragraph), width: width) }
        lines += ["", "USAGE: \(command) <options>", "", "OPTIONS:"]
        var rows = table.map { setting in
            let shown = setting.describe(defaults)
            let variables = [setting.variable] + (setting.alias.map { [$0] } ?? [])
            let label = setting.isNegatable ? "\(setting.flag)/--no-\(setting.key)" : setting.usage
            return (label, "\(setting.plainHelp) (\(shown.isEmpty ? "" : "default: \(shown); ")env: \(variables.joined(separator: " or ")))")
        }
        rows.append(("-h, --help", "Show help information."))
        let column = 26
        for (label, text) in rows {
            let described = wrap(text, width: width - column)
            let padding = String(repeating: " ", count: column)
            if label.count + 3 > column {
                lines.append("  " + label)
                lines += described.map { padding + $0 }
            } else {
                lines.append("  " + label + String(repeating: " ", count: column - 2 - label.count) + (described.first ?? ""))
                lines += described.dropFirst().map { padding + $0 }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The flag table of `docs/configuration.md`, in Markdown: each setting's flag, its
    /// default (a value in code, a word such as `none` as it is) and what it does, in the
    /// order `--help` lists them. The document holds exactly this between its markers, which
    /// a test checks and can write (`scripts/settings-table`).
    public static func flagTable() -> String {
        let defaults = ServerConfiguration()
        var lines = ["| flag | default | meaning |", "| --- | --- | --- |"]
        for setting in table {
            let flag = setting.isNegatable ? "`\(setting.flag)` / `--no-\(setting.key)`" : "`\(setting.flag)`"
            let shown = setting.describe(defaults)
            let isWord = shown.isEmpty || ["none", "any", "on", "off"].contains(shown) || shown.contains(" ")
            let value =
                shown.isEmpty
                ? "none"
                : isWord ? shown.split(separator: " ").map { $0.hasPrefix("--") ? "`\($0)`" : String($0) }.joined(separator: " ") : "`\(shown)`"
            lines.append("| \(flag) | \(value) | \(setting.help.replacingOccurrences(of: "|", with: "\\|")) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Words laid in lines of at most `width` characters (a longer word on a line alone).
    private static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}

extension ServerConfiguration.Setting {
    /// The flag with its value as `--help` and the errors show it: `--port <number>`.
    var usage: String { valueName.isEmpty ? flag : "\(flag) <\(valueName)>" }

    /// ``help`` as `--help` shows it: a sentence, without the Markdown (code marks dropped,
    /// a link as its text).
    var plainHelp: String {
        var text = help.replacingOccurrences(of: "`", with: "")
        // A link is `[text](target)`: its text is the last `[` before a `](` (an earlier one,
        // as in `USER[:PASSWORD]`, is text), its target runs to the next `)`.
        while let middle = text.range(of: "]("), let open = text.range(of: "[", options: .backwards, range: text.startIndex..<middle.lowerBound),
            let close = text.range(of: ")", range: middle.upperBound..<text.endIndex)
        {
            text.replaceSubrange(open.lowerBound..<close.upperBound, with: text[open.upperBound..<middle.lowerBound])
        }
        let sentence = text.prefix(1).uppercased() + text.dropFirst()
        return sentence.hasSuffix(".") ? sentence : sentence + "."
    }
}

/// A command line that cannot be read: one line, and exit status 64 (EX_USAGE).
public struct CommandLineError: Error, Equatable, CustomStringConvertible {
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    public var description: String { message }

    static func takesNoValue(_ flag: String, _ value: String) -> Self {
        Self("The option '\(flag)' does not take any value, but '\(value)' was specified.")
    }

    /// A flag no setting has, with the nearest that one has when it is a likely typo.
    static func unknown(_ name: String, among table: [ServerConfiguration.Setting]) -> Self {
        let flags = table.flatMap { $0.isNegatable ? [$0.flag, "--no-\($0.key)"] : [$0.flag] }
        let nearest = flags.map { ($0, name.edits(to: $0)) }.min { $0.1 < $1.1 }
        guard name.hasPrefix("--"), let nearest, nearest.1 <= 3 else { return Self("Unknown option '\(name)'") }
        return Self("Unknown option '\(name)'. Did you mean '\(nearest.0)'?")
    }
}

extension String {
    /// Edits from this name to the other (Levenshtein), for a suggestion.
    func edits(to other: String) -> Int {
        let a = Array(utf8)
        let b = Array(other.utf8)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
