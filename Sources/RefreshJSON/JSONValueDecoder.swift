/// Decodes `Decodable` types from a parsed ``JSONValue``, failing with the ``JSONRefusal``
/// the caller answers with: the field's full path (`config.top.threshold`, `items[2].title`) and what it
/// should have been. The types' own `Codable` conformances are the one schema of each
/// payload; this decoder only makes them strict:
///
/// - absent and `null` both mean "not given";
/// - a member the type does not name is refused, so a typo is not silently ignored (any
///   `CodingKeys` whose `init(stringValue:)` fails for it: the synthesized ones do);
/// - a whole number must be one (`1.5` is not an `Int`);
/// - a string enum (``JSONChoice``) that does not know the value lists the ones it knows.
///
/// Numbers beyond `Double`'s range arrive as infinities, for the types' validation to refuse
/// with `422` (the parser reads them so).
public struct JSONValueDecoder<Refusal: JSONRefusal> {
    /// Given to every `init(from:)` through `Decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: Any] = [:]

    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, path: String = "") throws(Refusal) -> T {
        do {
            return try JSONValueDecoding<Refusal>(value: value, path: path, codingPath: [], userInfo: userInfo).decodeValue(T.self)
        } catch let error as Refusal {
            throw error
        } catch let error as DecodingError {
            // Thrown by a conformance's own checks (`dataCorrupted`): say where.
            throw .invalid(JSONValueDecoding<Refusal>.describe(path), "is not valid (\(error.reasonText))")
        } catch {
            throw .invalid(JSONValueDecoding<Refusal>.describe(path), "is not valid")
        }
    }
}

/// A string enum the API reads by its raw values; a refusal lists them.
public protocol JSONChoice: CaseIterable, RawRepresentable, Decodable where RawValue == String {}

extension DecodingError {
    fileprivate var reasonText: String {
        switch self {
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context),
            .valueNotFound(_, let context):
            context.debugDescription
        @unknown default:
            "\(self)"
        }
    }
}

private struct JSONValueDecoding<Refusal: JSONRefusal>: Decoder, SingleValueDecodingContainer {
    let value: JSONValue
    /// The field's path as error messages name it: empty for the body itself.
    let path: String
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    static func describe(_ path: String) -> String { path.isEmpty ? "the body" : path }

    private var described: String { Self.describe(path) }

    func child(_ value: JSONValue, key: any CodingKey, path: String) -> JSONValueDecoding {
        JSONValueDecoding(value: value, path: path, codingPath: codingPath + [key], userInfo: userInfo)
    }

    // MARK: Decoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw Refusal.wrongType(described, expected: "an object", got: value) }
        if let unknown = members.keys.sorted().first(where: { Key(stringValue: $0) == nil }) {
            throw Refusal.invalid(field(unknown), "is not a known field")
        }
        return KeyedDecodingContainer(Keyed<Key>(decoder: self, members: members))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw Refusal.wrongType(described, expected: "an array", got: value) }
        return Unkeyed(decoder: self, elements: elements)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func field(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    // MARK: SingleValueDecodingContainer

    func decodeNil() -> Bool { value == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let bool) = value else { throw Refusal.wrongType(described, expected: "true or false", got: value) }
        return bool
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let string) = value else { throw Refusal.wrongType(described, expected: "a string", got: value) }
        return string
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard case .number(let number) = value else { throw Refusal.wrongType(described, expected: "a number", got: value) }
        return number
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func decode(_ type: Int.Type) throws -> Int { try whole(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try whole(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try whole(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try whole(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try whole(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try whole(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try whole(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try whole(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try whole(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try whole(UInt64.self) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(T.self) }

    /// Every value goes through here, so a string enum is read as a ``JSONChoice``
    /// wherever it appears.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if let choice = T.self as? any JSONChoice.Type {
            return try self.choice(choice) as! T
        }
        return try T(from: self)
    }

    private func choice<Choice: JSONChoice>(_ type: Choice.Type) throws -> Choice {
        let raw = try decode(String.self)
        guard let choice = Choice(rawValue: raw) else {
            let allowed = Choice.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            throw Refusal.invalid(described, "must be one of \(allowed)")
        }
        return choice
    }

    /// A number with no fraction that fits `Integer`.
    private func whole<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        let number = try decode(Double.self)
        guard number.isFinite, number.rounded() == number else { throw Refusal.invalid(described, "must be a whole number") }
        guard abs(number) <= JSONValue.largestExactInteger else { throw Refusal.inexactInteger(described) }
        guard let whole = Integer(exactly: number) else { throw Refusal.invalid(described, "must be a whole number") }
        return whole
    }

    // MARK: Containers

    private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: JSONValueDecoding
        let members: [String: JSONValue]

        var codingPath: [any CodingKey] { decoder.codingPath }
        var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

        func decodeNil(forKey key: Key) throws -> Bool { (members[key.stringValue] ?? .null) == .null }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try child(key, expected: Self.expectation(T.self)).decodeValue(T.self)
        }

        // The synthesized `decodeIfPresent` asks `contains` and `decodeNil` first, so a
        // `null` member reads as absent; the typed overloads all come here.
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key, expected: "true or false").decode(Bool.self) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key, expected: "a string").decode(String.self) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key, expected: "a number").decode(Double.self) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key, expected: "a whole number").decode(Int.self) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key, expected: "a whole number").decode(Int64.self) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try child(key, expected: "an object").container(keyedBy: NestedKey.self)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try child(key, expected: "an array").unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder { decoder }

        func superDecoder(forKey key: Key) throws -> any Decoder { try child(key, expected: "a value") }

        /// The member `key`, which must be given (not absent, not `null`).
        private func child(_ key: Key, expected: String) throws -> JSONValueDecoding {
            let path = decoder.field(key.stringValue)
            guard let value = members[key.stringValue], value != .null else { throw Refusal.missing(path, expected: expected) }
            return decoder.child(value, key: key, path: path)
        }

        private static func expectation<T>(_ type: T.Type) -> String {
            switch type {
            case is String.Type, is any JSONChoice.Type: "a string"
            case is Bool.Type: "true or false"
            case is Double.Type, is Float.Type: "a number"
            case is any FixedWidthInteger.Type: "a whole number"
            case is any Collection.Type: "an array"
            default: "an object"
            }
        }
    }

    private struct Unkeyed: UnkeyedDecodingContainer {
        let decoder: JSONValueDecoding
        let elements: [JSONValue]
        var currentIndex = 0

        init(decoder: JSONValueDecoding, elements: [JSONValue]) {
            self.decoder = decoder
            self.elements = elements
        }

        var codingPath: [any CodingKey] { decoder.codingPath }
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, elements[currentIndex] == .null else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try next().decodeValue(T.self)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next().container(keyedBy: NestedKey.self)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try next().unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder { try next() }

        private mutating func next() throws -> JSONValueDecoding {
            let path = "\(decoder.path)[\(currentIndex)]"
            guard !isAtEnd else { throw Refusal.missing(path, expected: "a value") }
            defer { currentIndex += 1 }
            return decoder.child(elements[currentIndex], key: Index(intValue: currentIndex), path: path)
        }
    }

    private struct Index: CodingKey {
        var intValue: Int?
        var stringValue: String { "\(intValue ?? 0)" }
        init(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }
}
