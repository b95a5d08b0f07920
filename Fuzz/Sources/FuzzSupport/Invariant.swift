import NIOCore
import RefreshJSON

@testable import RefreshServer

/// A broken invariant is a finding: it stops the fuzzer with the input that broke it.
public func invariant(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    guard condition() else { fatalError("invariant broken: \(message())", file: file, line: line) }
}

/// A refusal must be the client's fault: a 4xx with a code and a sentence, and a JSON body
/// that parses back to them (messages quote field names from the input).
public func checkRefusal(_ error: APIError, context: @autoclosure () -> String) {
    let status = Int(error.status.code)
    invariant((400..<500).contains(status), "\(context()): refused with \(status) \(error.code): \(error.message)")
    invariant(!error.message.isEmpty, "\(context()): refusal without a message")
    let payload = JSONResponse.errorPayload(error, acceptsGzip: false)
    let json = parsed(payload.body, context: "\(context()): error body")
    invariant(
        json == .object(["error": .string(error.code.rawValue), "message": .string(error.message)]),
        "\(context()): error body does not say the refusal: \(String(buffer: payload.body))")
}

/// What the server wrote as JSON must parse with its own parser.
public func parsed(_ buffer: ByteBuffer, context: @autoclosure () -> String) -> JSONValue {
    do {
        return try JSONParser.parse(Array(buffer.readableBytesView))
    } catch {
        fatalError("\(context()) is not JSON (\(error.reason) at \(error.offset)): \(String(buffer: buffer))")
    }
}

/// Parses a body as a route does; a syntax error must be a 400. A body that parses is
/// written back with the server's own writer and must parse to the same tree (non-finite
/// numbers, which JSON cannot carry, come back as `null`).
public func parseBody(_ bytes: [UInt8]) -> JSONValue? {
    let value: JSONValue
    do {
        value = try JSONValue.parseBody(bytes)
    } catch {
        invariant(error.status == .badRequest && error.code == .malformedJSON, "syntax error answered \(error.status.code) \(error.code)")
        checkRefusal(error, context: "malformed body")
        return nil
    }
    var writer = JSONWriter(capacity: bytes.count + 16)
    writer.write(value)
    invariant(parsed(writer.buffer, context: "written back body") == value.finite, "write-back changed the body: \(String(buffer: writer.buffer))")
    return value
}

extension JSONWriter {
    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let bool): self.value(bool)
        case .number(let number): self.value(number)
        case .string(let string): self.value(string)
        case .array(let elements):
            beginArray()
            for element in elements { write(element) }
            endArray()
        case .object(let members):
            beginObject()
            for (name, member) in members {
                key(name)
                write(member)
            }
            endObject()
        }
    }
}

extension JSONValue {
    /// The tree JSON can carry: non-finite numbers become `null`.
    var finite: JSONValue {
        switch self {
        case .number(let number) where !number.isFinite: .null
        case .array(let elements): .array(elements.map(\.finite))
        case .object(let members): .object(members.mapValues(\.finite))
        case .null, .bool, .number, .string: self
        }
    }
}
