import RefreshJSON

@testable import RefreshServer

/// Reads what a server wrote on one connection as a client would, and checks every answer:
/// a well-formed HTTP/1.1 head, a status the input may cause, framing that can be followed,
/// nothing after an answer that said `Connection: close`, and JSON bodies that parse.
public struct ResponseStream {
    public struct Answer {
        public var status: Int
        public var fields: [(name: String, value: String)]
        public var body: [UInt8]?

        func field(_ name: String) -> String? {
            fields.first { $0.name.lowercased() == name }?.value
        }
    }

    /// Statuses of 500 and above the server gives on purpose to what a client sent, by the
    /// error code that says so: a transfer coding it does not implement (RFC 9112 §6.1), an
    /// event stream over HTTP/1.0, and overload (always with `Retry-After`).
    static let deliberate: [Int: Set<String>] = [
        501: ["unsupported_transfer_encoding"],
        505: ["http_version_not_supported"],
        503: ["too_many_sessions"],
    ]

    public private(set) var answers: [Answer] = []
    private let bytes: [UInt8]
    private var index = 0

    /// Checks `bytes`, everything written on the connection; a broken rule is a finding.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var closed = false
        while index < bytes.count {
            invariant(!closed, "an answer after one that said Connection: close: \(text(from: index))")
            let answer = readAnswer()
            if answer.status >= 200, answer.field("connection")?.lowercased() == "close" { closed = true }
            answers.append(answer)
        }
    }

    private func text(from start: Int) -> String {
        String(decoding: bytes[start..<min(bytes.count, start + 400)], as: UTF8.self).debugDescription
    }

    private func find(_ pattern: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= pattern.count, start <= bytes.count - pattern.count else { return nil }
        return (start...(bytes.count - pattern.count)).first { at in pattern.indices.allSatisfy { bytes[at + $0] == pattern[$0] } }
    }

    private mutating func readAnswer() -> Answer {
        let start = index
        // A head is written in one piece, so even a connection cut short never ends inside one.
        guard let end = find(Array("\r\n\r\n".utf8), from: index) else {
            fatalError("invariant broken: an incomplete response head: \(text(from: start))")
        }
        let lines = bytes[index..<end].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            invariant(line.last == UInt8(ascii: "\r") || line.endIndex == end, "a bare LF in the head: \(text(from: start))")
            return line.last == UInt8(ascii: "\r") ? Array(line.dropLast()) : Array(line)
        }
        index = end + 4
        let statusLine = lines[0]
        invariant(statusLine.starts(with: Array("HTTP/1.1 ".utf8)) && statusLine.count >= 13, "bad status line: \(text(from: start))")
        let code = statusLine[9..<12]
        invariant(code.allSatisfy { (48...57).contains($0) } && statusLine[12] == UInt8(ascii: " "), "bad status code: \(text(from: start))")
        let status = Int(String(decoding: code, as: UTF8.self))!
        invariant((100...599).contains(status), "status \(status)")
        // The server upgrades to nothing: an `Upgrade` is answered as if it were absent.
        invariant(status != 101, "a 101: \(text(from: start))")
        invariant(statusLine[13...].allSatisfy { $0 == 0x09 || (0x20...0x7E).contains($0) || $0 >= 0x80 }, "bad reason phrase: \(text(from: start))")
        var fields: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                fatalError("invariant broken: a field line without a colon: \(text(from: start))")
            }
            let name = line[..<colon]
            invariant(!name.isEmpty && name.allSatisfy(Self.isTokenByte), "bad field name: \(text(from: start))")
            let value = line[(colon + 1)...]
            invariant(value.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }, "control byte in a field value: \(text(from: start))")
            fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self).trimmingSpaces))
        }
        var answer = Answer(status: status, fields: fields.map { (name: $0.0, value: $0.1) }, body: nil)
        let lengths = answer.fields.filter { $0.name.lowercased() == "content-length" }
        let chunked = answer.field("transfer-encoding")
        invariant(lengths.count <= 1, "\(lengths.count) Content-Length fields")
        invariant(lengths.isEmpty || chunked == nil, "both Content-Length and Transfer-Encoding")
        if status < 200 || status == 204 || status == 304 {
            invariant(chunked == nil, "a \(status) with a body")
        } else if let length = lengths.first {
            guard let count = Int(length.value), count >= 0 else { fatalError("invariant broken: Content-Length \(length.value)") }
            // An answer to HEAD has the length of the body it does not send.
            if count > 0, bytes[index...].starts(with: Array("HTTP/1.1 ".utf8)) {
            } else {
                answer.body = Array(bytes[index..<min(bytes.count, index + count)])
                index = min(bytes.count, index + count)
            }
        } else if let chunked {
            invariant(chunked.lowercased() == "chunked", "Transfer-Encoding \(chunked)")
            // An answer to HEAD says how the body would be framed and sends none (the event
            // stream's); a chunk-size line never starts like a status line.
            if !bytes[index...].starts(with: Array("HTTP/1.1 ".utf8)) { answer.body = readChunks() }
        } else {
            invariant(status == 101, "a \(status) without framing: \(text(from: start))")
        }
        checkStatus(answer)
        return answer
    }

    /// The chunks of a body, up to its last chunk or to the end of what was written.
    private mutating func readChunks() -> [UInt8] {
        var body: [UInt8] = []
        while index < bytes.count {
            guard let lineEnd = find(Array("\r\n".utf8), from: index) else {
                fatalError("invariant broken: an incomplete chunk size: \(text(from: index))")
            }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self)
            guard let size = Int(sizeText, radix: 16), size >= 0 else { fatalError("invariant broken: chunk size \(sizeText.debugDescription)") }
            index = lineEnd + 2
            if size == 0 {
                invariant(
                    index == bytes.count || bytes[index...].starts(with: Array("\r\n".utf8)), "no CRLF after the last chunk: \(text(from: index))")
                index = min(bytes.count, index + 2)
                return body
            }
            let end = min(bytes.count, index + size)
            body += bytes[index..<end]
            index = end
            guard index < bytes.count else { break }
            invariant(bytes[index...].starts(with: Array("\r\n".utf8)), "no CRLF after a chunk: \(text(from: index))")
            index += 2
        }
        return body
    }

    private func checkStatus(_ answer: Answer) {
        let json: JSONValue? =
            if answer.field("content-type")?.hasPrefix("application/json") == true, answer.field("content-encoding") == nil,
                let body = answer.body, let length = answer.field("content-length").flatMap(Int.init), body.count == length
            {
                jsonBody(body)
            } else {
                nil
            }
        guard answer.status >= 500 else { return }
        var code: String?
        if case .object(let members) = json, case .string(let given) = members["error"] { code = given }
        invariant(
            code.map { Self.deliberate[answer.status]?.contains($0) == true } == true,
            "answered \(answer.status) (\(code ?? "no code")) to what a client sent")
        if answer.status == 503 { invariant(answer.field("retry-after") != nil, "a 503 without Retry-After") }
    }

    private func jsonBody(_ body: [UInt8]) -> JSONValue {
        do {
            return try JSONParser.parse(body)
        } catch {
            fatalError("invariant broken: a JSON answer does not parse (\(error.reason)): \(String(decoding: body, as: UTF8.self).debugDescription)")
        }
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
