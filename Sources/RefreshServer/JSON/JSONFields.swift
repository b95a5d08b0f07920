/// Typed access to a JSON object's members that fails with an ``APIError`` naming the
/// field's full path (`samples[3].y`) and what it should have been.
struct JSONFields {
    let members: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, path: String) throws(APIError) {
        guard case .object(let members) = value else { throw .wrongType(path.isEmpty ? "the body" : path, expected: "an object", got: value) }
        self.members = members
        self.path = path
    }

    func fieldPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Absent and `null` both mean "not given".
    private func present(_ key: String) -> JSONValue? {
        guard let value = members[key], value != .null else { return nil }
        return value
    }

    func has(_ key: String) -> Bool { present(key) != nil }

    /// Refuses members this object does not know, so a typo is not silently ignored.
    func rejectUnknown(_ known: Set<String>) throws(APIError) {
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalid(fieldPath(unknown), "is not a known field")
        }
    }

    func double(_ key: String) throws(APIError) -> Double? {
        guard let value = present(key) else { return nil }
        guard case .number(let number) = value else { throw .wrongType(fieldPath(key), expected: "a number", got: value) }
        return number
    }

    /// An integer; a non-finite or fractional number is the wrong type here, and one beyond
    /// 2^53 − 1 is out of range: JSON numbers are read as doubles, which past it cannot tell
    /// `9007199254740993` from `9007199254740992`.
    func int(_ key: String) throws(APIError) -> Int? {
        guard let number = try double(key) else { return nil }
        guard number.isFinite, number.rounded() == number else { throw .invalid(fieldPath(key), "must be a whole number") }
        guard abs(number) <= JSONValue.largestExactInteger else { throw .inexactInteger(fieldPath(key)) }
        return Int(number)
    }

    func string(_ key: String) throws(APIError) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let string) = value else { throw .wrongType(fieldPath(key), expected: "a string", got: value) }
        return string
    }

    func array(_ key: String) throws(APIError) -> [JSONValue]? {
        guard let value = present(key) else { return nil }
        guard case .array(let elements) = value else { throw .wrongType(fieldPath(key), expected: "an array", got: value) }
        return elements
    }

    /// A string member that must be one of an enum's raw values.
    func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, _: Choice.Type) throws(APIError) -> Choice?
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
    static let largestExactInteger = 9_007_199_254_740_991.0

    /// Parses a request body, mapping syntax errors to `400 malformed_json`.
    static func parseBody(_ bytes: [UInt8]) throws(APIError) -> JSONValue {
        guard !bytes.isEmpty else { throw .malformedJSON("the body is empty") }
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw .malformedJSON("\(error.reason) at byte \(error.offset)")
        }
    }
}
