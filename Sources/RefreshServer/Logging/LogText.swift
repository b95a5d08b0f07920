import Logging

extension String {
    /// Text a client chose (a path, a query value, a header), as a log line may hold it:
    /// control characters, the line separators U+2028 and U+2029 and the backslash written as
    /// escapes (`\n`, `\r`, `\t`, `\\`, `\u{85}`), so no request can end a line of the text log
    /// early and forge the next one.
    var escapedForLog: String {
        guard unicodeScalars.contains(where: Self.needsEscape) else { return self }
        var escaped = ""
        escaped.reserveCapacity(utf8.count + 8)
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case "\\": escaped += "\\\\"
            case _ where Self.needsEscape(scalar): escaped += "\\u{\(String(scalar.value, radix: 16))}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar == "\\" || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}

/// Any log handler, with control characters escaped in every message and metadata value it
/// is given: the server escapes what clients send where it logs it, and this keeps a line one
/// line whatever else reaches the log (an error's description, a library's message).
/// `refresh-server` writes its text log through it.
public struct LineSafeLogHandler<Wrapped: LogHandler>: LogHandler {
    public var wrapped: Wrapped

    public init(_ wrapped: Wrapped) {
        self.wrapped = wrapped
    }

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: Self.lineSafe(event.message.description))
        event.metadata = event.metadata.map { $0.mapValues(Self.lineSafe) }
        wrapped.log(event: event)
    }

    /// Backslashes are left as they are: only what could end the line is escaped here (the
    /// server's own escaping, before, writes them as `\\`).
    private static func lineSafe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029 })
        else {
            return text
        }
        return text.escapedForLog
    }

    private static func lineSafe(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(lineSafe(text))
        case .stringConvertible(let convertible): .string(lineSafe(convertible.description))
        case .array(let values): .array(values.map(lineSafe))
        case .dictionary(let values): .dictionary(values.mapValues(lineSafe))
        }
    }
}
