import RefreshJSON

/// The API's refusals are the JSON toolkit's: a faulty field is answered with `400` (or
/// `422` for an inexact integer), in the API's words.
extension APIError: JSONRefusal {}

extension JSONValue {
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
