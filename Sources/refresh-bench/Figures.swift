import Foundation

/// What one run of a figure found, by name: numbers, text, flags, lists of them and figures
/// nested in figures, printed as one line of JSON with its keys sorted (bench/run.sh reads
/// it). Only these kinds of values go in; a name that is read back says which kind it wants.
struct Figures: Encodable, Sendable, FigureValue {
    private var values: [String: Figure] = [:]

    init() {}

    subscript<Value: FigureValue>(name: String) -> Value? {
        get { values[name].flatMap(Value.init(figure:)) }
        set { values[name] = newValue?.figure }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(values)
    }

    var figure: Figure { .object(values) }

    init?(figure: Figure) {
        guard case .object(let values) = figure else { return nil }
        self.values = values
    }

    /// One line of JSON, keys sorted.
    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}

/// A value of ``Figures``.
indirect enum Figure: Encodable, Sendable {
    case integer(Int64)
    case unsigned(UInt64)
    case number(Double)
    case text(String)
    case flag(Bool)
    case list([Figure])
    case object([String: Figure])

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .integer(let value): try container.encode(value)
        case .unsigned(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .text(let value): try container.encode(value)
        case .flag(let value): try container.encode(value)
        case .list(let values): try container.encode(values)
        case .object(let values): try container.encode(values)
        }
    }
}

/// What may be a figure.
protocol FigureValue {
    var figure: Figure { get }
    init?(figure: Figure)
}

extension Int: FigureValue {
    var figure: Figure { .integer(Int64(self)) }
    init?(figure: Figure) {
        guard case .integer(let value) = figure else { return nil }
        self = Int(value)
    }
}

extension Int64: FigureValue {
    var figure: Figure { .integer(self) }
    init?(figure: Figure) {
        guard case .integer(let value) = figure else { return nil }
        self = value
    }
}

extension UInt64: FigureValue {
    var figure: Figure { .unsigned(self) }
    init?(figure: Figure) {
        guard case .unsigned(let value) = figure else { return nil }
        self = value
    }
}

extension Double: FigureValue {
    var figure: Figure { .number(self) }
    init?(figure: Figure) {
        guard case .number(let value) = figure else { return nil }
        self = value
    }
}

extension String: FigureValue {
    var figure: Figure { .text(self) }
    init?(figure: Figure) {
        guard case .text(let value) = figure else { return nil }
        self = value
    }
}

extension Bool: FigureValue {
    var figure: Figure { .flag(self) }
    init?(figure: Figure) {
        guard case .flag(let value) = figure else { return nil }
        self = value
    }
}

extension Array: FigureValue where Element: FigureValue {
    var figure: Figure { .list(map(\.figure)) }
    init?(figure: Figure) {
        guard case .list(let values) = figure else { return nil }
        let elements = values.compactMap(Element.init(figure:))
        guard elements.count == values.count else { return nil }
        self = elements
    }
}

extension Dictionary: FigureValue where Key == String, Value: FigureValue {
    var figure: Figure { .object(mapValues(\.figure)) }
    init?(figure: Figure) {
        guard case .object(let values) = figure else { return nil }
        let entries = values.compactMapValues(Value.init(figure:))
        guard entries.count == values.count else { return nil }
        self = entries
    }
}
