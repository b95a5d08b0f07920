import AsyncHTTPClient
import Foundation
import NIOCore

/// One parsed server-sent event block.
struct SSE: Sendable, CustomStringConvertible {
    var id: UInt64?
    var event: String?
    var data: String
    var retry: Int?
    var comment: String?

    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:] }
    var description: String { "\(id.map(String.init) ?? "-") \(event ?? comment.map { ": \($0)" } ?? "") \(data)" }
}

/// Reads an event stream incrementally, block by block, as the server flushes it. Every wait
/// is bounded at half a minute by default: a bound on a wait that ends as soon as the data
/// comes, not a measure of how fast this machine sends it.
// `@unchecked`: one test task uses a reader at a time, and the AHC iterator is not Sendable.
final class EventReader: @unchecked Sendable {
    let status: Int
    let headers: [(String, String)]
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var pending = ""
    /// Raw bytes as received, for decompression checks.
    private(set) var raw = Data()
    var decode: (ByteBuffer) -> String = { String(buffer: $0) }

    init(response: HTTPClientResponse) {
        status = Int(response.status.code)
        headers = response.headers.map { ($0.name, $0.value) }
        iterator = response.body.makeAsyncIterator()
    }

    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }

    /// The next raw chunk, waiting at most `seconds`; `nil` when the stream ended.
    func chunk(within seconds: Double = 30) async throws -> ByteBuffer? {
        let chunk = try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { [self] in try await self.iterator.next() }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                throw TestFailure("no data within \(seconds) s")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
        if let chunk { raw.append(contentsOf: chunk.readableBytesView) }
        return chunk
    }

    /// The next block (event, retry or comment), waiting at most `seconds` in all.
    func next(within seconds: Double = 30) async throws -> SSE {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            if let range = pending.range(of: "\n\n") {
                let block = String(pending[..<range.lowerBound])
                pending.removeSubrange(..<range.upperBound)
                return Self.parse(block)
            }
            guard let chunk = try await chunk(within: Self.left(until: deadline)) else {
                throw TestFailure("the stream ended; pending: \(pending)")
            }
            pending += decode(chunk)
        }
    }

    /// The next real event, skipping `retry:` and comments, waiting at most `seconds` in all
    /// (keepalive comments do not extend the wait).
    func nextEvent(within seconds: Double = 30) async throws -> SSE {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            let block = try await next(within: Self.left(until: deadline))
            if block.event != nil { return block }
        }
    }

    /// The seconds left until `deadline`, at least a millisecond (a wait that is over fails
    /// with "no data" at once).
    private static func left(until deadline: ContinuousClock.Instant) -> Double {
        let left = (deadline - .now).components
        return max(0.001, Double(left.seconds) + Double(left.attoseconds) / 1e18)
    }

    /// Events until (and including) the first named `name`.
    func events(until name: String, within seconds: Double = 30) async throws -> [SSE] {
        var events: [SSE] = []
        while true {
            let event = try await nextEvent(within: seconds)
            events.append(event)
            if event.event == name { return events }
        }
    }

    /// Whether the server closed the stream within `seconds`.
    func ends(within seconds: Double) async throws -> Bool {
        do {
            while try await chunk(within: seconds) != nil {}
            return true
        } catch let failure as TestFailure where failure.description.hasPrefix("no data") {
            return false
        }
    }

    static func parse(_ block: String) -> SSE {
        var event = SSE(data: "")
        var data: [String] = []
        for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(":") {
                event.comment = line.dropFirst().trimmingCharacters(in: .whitespaces)
                continue
            }
            let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            var value = parts.count > 1 ? String(parts[1]) : ""
            if value.hasPrefix(" ") { value.removeFirst() }
            switch String(parts[0]) {
            case "id": event.id = UInt64(value)
            case "event": event.event = value
            case "data": data.append(value)
            case "retry": event.retry = Int(value)
            default: break
            }
        }
        event.data = data.joined(separator: "\n")
        return event
    }
}
