import Foundation
import OpenAPIRuntime

/// The server writes RFC 3339 times with milliseconds only when there are some
/// (`2026-11-22T08:00:00Z`, `2026-11-22T08:00:00.250Z`); each of the runtime's ISO 8601
/// transcoders reads only one of the two forms, so this one tries both.
struct RFC3339DateTranscoder: DateTranscoder {
    private let fractional = ISO8601DateTranscoder.iso8601WithFractionalSeconds
    private let whole = ISO8601DateTranscoder.iso8601

    func encode(_ date: Date) throws -> String { try fractional.encode(date) }

    func decode(_ text: String) throws -> Date {
        if let date = try? fractional.decode(text) { return date }
        return try whole.decode(text)
    }
}
