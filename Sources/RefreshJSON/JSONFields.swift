/// What a refusal of a JSON body says: the field's full path and what it should have been.
/// The toolkit names the fault; the code that answers the request (the server's error body)
/// decides how it is worded on the wire, so it conforms its own error type.
public protocol JSONRefusal: Error {
    static func wrongType(_ path: String, expected: String, got: JSONValue) -> Self
    static func missing(_ path: String, expected: String) -> Self
    static func invalid(_ path: String, _ reason: String) -> Self
    /// A whole number beyond what a JSON number carries exactly.
    static func inexactInteger(_ path: String) -> Self
}

/// Typed access to a JSON object's members that fails with a ``JSONRefusal`` naming the
/// field's full path (`samples[3].y`) and what it should have been. The samples route reads
/// its few fields through this rather than a decoder, to keep per-field dispatch off the hot
/// path; its accessors are `@inlinable` so they are specialized for the caller's refusal.
public struct JSONFields<Refusal: JSONRefusal> {
    public let members: [String: JSONValue]
    public let path: String

    @inlinable public init(_ value: JSONValue, path: String) throws(Refusal) {
        guard case .object(let members) = value else { throw .wrongType(path.isEmpty ? "the body" : path, expected: "an object", got: value) }
        self.members = members
        self.path = path
    }

    @inlinable public func fieldPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Absent and `null` both mean "not given".
    @inlinable func present(_ key: String) -> JSONValue? {
        guard let value = members[key], value != .null else { return nil }
        return value
    }

    @inlinable public func has(_ key: String) -> Bool { present(key) != nil }

    /// Refuses members this object does not know, so a typo is not silently ignored.
    @inlinable public func rejectUnknown(_ known: Set<String>) throws(Refusal) {
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalid(fieldPath(unknown), "is not a known field")
        }
    }

    @inlinable public func double(_ key: String) throws(Refusal) -> Double? {
        guard let value = present(key) else { return nil }
        guard case .number(let number) = value else { throw .wrongType(fieldPath(key), expected: "a number", got: value) }
        return number
    }

    /// An integer; a non-finite or fractional number is the wrong type here, and one beyond
    /// 2^53 − 1 is out of range: JSON numbers are read as doubles, which past it cannot tell
    /// `9007199254740993` from `9007199254740992`.
    @inlinable public func int(_ key: String) throws(Refusal) -> Int? {
        guard let number = try double(key) else { return nil }
        guard number.isFinite, number.rounded() == number else { throw .invalid(fieldPath(key), "must be a whole number") }
        guard abs(number) <= JSONValue.largestExactInteger else { throw .inexactInteger(fieldPath(key)) }
        return Int(number)
    }

    @inlinable public func string(_ key: String) throws(Refusal) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let string) = value else { throw .wrongType(fieldPath(key), expected: "a string", got: value) }
        return string
    }

    @inlinable public func array(_ key: String) throws(Refusal) -> [JSONValue]? {
        guard let value = present(key) else { return nil }
        guard case .array(let elements) = value else { throw .wrongType(fieldPath(key), expected: "an array", got: value) }
        return elements
    }

    /// A string member that must be one of an enum's raw values.
    @inlinable public func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, _: Choice.Type) throws(Refusal) -> Choice?
    where Choice.RawValue == String {
        guard let raw = try string(key) else { return nil }
        guard let choice = Choice(rawValue: raw) else {
            let allowed = Choice.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            throw .invalid(fieldPath(key), "must be one of \(allowed)")
        }
        return choice
    }
}

extension JSONValue {
    /// 2^53 − 1: every whole number up to it has a double of its own.
    public static let largestExactInteger = 9_007_199_254_740_991.0
}
