/// Where the bytes handed to NIO's decoder stand between requests: whether the last of them
/// ended a request, or a request has started and is not complete.
///
/// The decoder takes every byte it is given and keeps a started head inside its parser,
/// saying nothing until the head is whole. When one read brings a request and the start of
/// the next, the connection answers the first and could not otherwise tell the second had
/// begun: a client could then drip a head for the idle deadline instead of the request
/// head's. This follows the requests' framing (the head's end, then a `Content-Length` or
/// chunked body) only to say that; what a request is, and whether it is refused, stays the
/// decoder's. A reading in doubt says a request has started: its cost is a shorter wait.
package struct RequestBoundaries: Sendable {
    private enum State: Sendable {
        /// At a request's first byte (empty lines before a request line are not one).
        case between
        /// In a head: the bytes so far, kept up to the decoder's limit to read the framing.
        case head
        /// In a body of known length: this many bytes are still to come.
        case body(remaining: Int)
        /// In a chunked body's framing.
        case chunkSize(digits: Int, size: Int, inExtension: Bool)
        case chunkData(remaining: Int)
        /// The line end after a chunk's data.
        case chunkEnd(sawCR: Bool)
        /// The trailer section after the last chunk: `lineLength` bytes of its current line.
        case trailers(lineLength: Int)
        /// The framing could not be followed (the decoder refuses such bytes, and the
        /// connection closes): every byte from here on is taken as inside a request.
        case lost
    }

    private var state = State.between
    /// The current head's bytes, up to ``maxKeptHeadBytes``.
    private var head: [UInt8] = []
    private let maxKeptHeadBytes: Int

    /// `maxHeadBytes`: the decoder's limit on a head; a longer one is refused by it.
    package init(maxHeadBytes: Int) {
        maxKeptHeadBytes = maxHeadBytes + 4 * 1024
    }

    /// Whether the bytes so far end inside a request.
    package var insideRequest: Bool {
        if case .between = state { false } else { true }
    }

    /// Follows `bytes`, the next the decoder is given.
    package mutating func consume(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        let count = bytes.count
        while index < count {
            switch state {
            case .between:
                let byte = bytes[index]
                if byte == .cr || byte == .lf {
                    index += 1
                } else {
                    head.removeAll(keepingCapacity: true)
                    state = .head
                }
            case .head:
                let byte = bytes[index]
                index += 1
                if head.count < maxKeptHeadBytes { head.append(byte) } else { state = .lost }
                if byte == .lf, head.count >= 2, endsHead() { state = framing() }
            case .body(let remaining):
                let taken = min(remaining, count - index)
                index += taken
                state = remaining == taken ? .between : .body(remaining: remaining - taken)
            case .chunkSize(let digits, let size, let inExtension):
                let byte = bytes[index]
                index += 1
                if byte == .lf {
                    guard digits > 0 else {
                        state = .lost
                        break
                    }
                    state = size == 0 ? .trailers(lineLength: 0) : .chunkData(remaining: size)
                } else if inExtension || byte == .cr {
                    break
                } else if byte == UInt8(ascii: ";") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                    state = .chunkSize(digits: digits, size: size, inExtension: true)
                } else if let digit = Self.hexValue(byte), digits < 15 {
                    state = .chunkSize(digits: digits + 1, size: size * 16 + digit, inExtension: false)
                } else {
                    state = .lost
                }
            case .chunkData(let remaining):
                let taken = min(remaining, count - index)
                index += taken
                state = remaining == taken ? .chunkEnd(sawCR: false) : .chunkData(remaining: remaining - taken)
            case .chunkEnd(let sawCR):
                let byte = bytes[index]
                index += 1
                if byte == .cr, !sawCR {
                    state = .chunkEnd(sawCR: true)
                } else if byte == .lf {
                    state = .chunkSize(digits: 0, size: 0, inExtension: false)
                } else {
                    state = .lost
                }
            case .trailers(let lineLength):
                let byte = bytes[index]
                index += 1
                if byte == .lf {
                    state = lineLength == 0 ? .between : .trailers(lineLength: 0)
                } else if byte != .cr {
                    state = .trailers(lineLength: lineLength + 1)
                }
            case .lost:
                return
            }
        }
    }

    /// Whether the head so far ends with an empty line (`CRLF CRLF`, or a bare `LF LF`).
    private func endsHead() -> Bool {
        let last = head.count - 1
        if head[last - 1] == .lf { return true }
        return head.count >= 4 && head[last - 1] == .cr && head[last - 2] == .lf && head[last - 3] == .cr
    }

    /// What follows the complete head in `head`: its body's framing.
    private func framing() -> State {
        var length: Int?
        var chunked = false
        var lineStart = 0
        var index = 0
        // The request line first, then the fields, each up to its LF.
        var isRequestLine = true
        while index < head.count {
            if head[index] == .lf {
                let line = head[lineStart..<index].last == .cr ? head[lineStart..<(index - 1)] : head[lineStart..<index]
                if !isRequestLine, let colon = line.firstIndex(of: UInt8(ascii: ":")) {
                    let name = line[line.startIndex..<colon]
                    let value = line[(colon + 1)...].drop { $0 == .space || $0 == .tab }
                    if RequestPolicy.equalIgnoringCase(name, "content-length".utf8) {
                        guard length == nil, let parsed = Self.decimal(value) else { return .lost }
                        length = parsed
                    } else if RequestPolicy.equalIgnoringCase(name, "transfer-encoding".utf8) {
                        chunked = true
                    }
                }
                isRequestLine = false
                lineStart = index + 1
            }
            index += 1
        }
        if chunked { return length == nil ? .chunkSize(digits: 0, size: 0, inExtension: false) : .lost }
        if let length, length > 0 { return .body(remaining: length) }
        return .between
    }

    private static func decimal(_ bytes: some Collection<UInt8>) -> Int? {
        var trimmed = Array(bytes)
        while let last = trimmed.last, last == .space || last == .tab { trimmed.removeLast() }
        guard !trimmed.isEmpty, trimmed.count <= 15 else { return nil }
        var value = 0
        for byte in trimmed {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }
}

extension UInt8 {
    fileprivate static let space = UInt8(ascii: " ")
    fileprivate static let tab = UInt8(ascii: "\t")
}
