// RefreshJSON: the JSON toolkit the feed and the server share (a strict parser, a decoder of
// `Decodable` types that names the faulty field, a writer straight into a `ByteBuffer`).
// It holds no role of the architecture's own (the package's four library targets are the
// engine, the feed, the connection layer and the server); it is a leaf utility, standard
// library and NIOCore only, so the feed can read JSON Feed without depending on the server.
// What only the server speaks (a gesture state, a config, an error body) stays there, as
// extensions.

/// A parsed JSON document. Every request body is parsed into this first, so that numbers
/// beyond `Double`'s range, and the non-JSON `NaN` / `Infinity` some encoders emit, arrive
/// as non-finite numbers the API can refuse with `422` instead of a parse failure. The cold
/// bodies then decode through their types' `Codable` conformances (``JSONValueDecoder``);
/// the samples route reads its few fields by hand (`JSONFields`), which keeps the hot path
/// free of a decoder's per-field dispatch.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// How a refusal names what it got instead (`not a string`).
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON body did not parse.
public struct JSONSyntaxError: Error, Sendable, Equatable {
    /// Where the parser stopped, so a refusal can point at the byte.
    public var offset: Int
    public var reason: String
}

/// A strict JSON parser over UTF-8 bytes, with a nesting limit so hostile input cannot
/// exhaust the stack.
public struct JSONParser {
    public static let maximumDepth = 32

    private let bytes: [UInt8]
    private var index = 0

    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func error(_ reason: String) -> JSONSyntaxError { JSONSyntaxError(offset: index, reason: reason) }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func expect(_ literal: StaticString) throws(JSONSyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of input") }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw error("invalid literal") }
        index += count
    }

    private mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth < Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth) levels") }
        guard let byte = current else { throw error("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        case UInt8(ascii: "N"):
            try expect("NaN")
            return .number(.nan)
        case UInt8(ascii: "I"):
            try expect("Infinity")
            return .number(.infinity)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        default:
            throw error("unexpected character")
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            // A repeated name is refused: parsers disagree on which value wins, so one body
            // could mean two things to two readers.
            guard members.updateValue(try parseValue(depth: depth + 1), forKey: key) == nil else {
                throw error("the member name \"\(key)\" appears twice")
            }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default: throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> Double {
        let start = index
        if current == UInt8(ascii: "-") {
            index += 1
            if current == UInt8(ascii: "I") {
                try expect("Infinity")
                return -.infinity
            }
        }
        func digits(_ parser: inout JSONParser) -> Int {
            let from = parser.index
            while let byte = parser.current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { parser.index += 1 }
            return parser.index - from
        }
        let integerStart = index
        guard digits(&self) > 0 else { throw error("expected a digit") }
        if bytes[integerStart] == UInt8(ascii: "0"), index - integerStart > 1 { throw error("leading zero") }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw error("expected a digit after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw error("expected an exponent") }
        }
        // Out-of-range literals such as 1e999 become ±infinity: refused later as non-finite.
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text) else { throw error("invalid number") }
        return value
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"), byte >= 0x20 { index += 1 }
        if current == UInt8(ascii: "\"") {
            let string = try validUTF8(bytes[start..<index])
            index += 1
            return string
        }
        var scalars = Array(bytes[start..<index])
        while true {
            guard let byte = current else { throw error("unterminated string") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return try validUTF8(scalars[...])
            case UInt8(ascii: "\\"):
                guard let escaped = current else { throw error("unterminated escape") }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escaped)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code) {
                        guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("unpaired surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(code) {
                        throw error("unpaired surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("invalid code point") }
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    throw error("invalid escape")
                }
            case 0..<0x20:
                throw error("control character in string")
            default:
                scalars.append(byte)
            }
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unterminated escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private func validUTF8(_ slice: ArraySlice<UInt8>) throws(JSONSyntaxError) -> String {
        guard let string = String(validating: slice, as: UTF8.self) else { throw error("invalid UTF-8") }
        return string
    }
}
