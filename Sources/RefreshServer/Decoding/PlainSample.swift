import RefreshEngine
import RefreshJSON

extension SampleDecoding {
    /// The body nearly every samples request carries, one sample of plain members
    /// (`{"seq":12,"y":-30.5,"phase":"drag"}`), read in one pass without building a document.
    ///
    /// `nil` for anything else: a batch, an escape, `null`, `NaN`, a duplicate or unknown
    /// member, a number not finite or not whole where it must be, a sample the engine refuses.
    /// ``decode(_:maxCount:)`` then reads it, or refuses it, as it reads every body. What this
    /// accepts, that accepts too, as the same sample (its tests hold the two together), so a
    /// client cannot tell which one read its body.
    static func plainSample(_ bytes: UnsafeRawBufferPointer) -> ValidSample? {
        var reader = PlainReader(bytes: bytes)
        reader.skipSpace()
        guard reader.take(UInt8(ascii: "{")) else { return nil }
        var seq: Int?
        var y: Double?
        var t: Double?
        var phase: Sample.Phase?
        var contentHeight: Double?
        var viewportHeight: Double?
        var seen: UInt8 = 0
        repeat {
            reader.skipSpace()
            guard let member = reader.member() else { return nil }
            guard seen & member.rawValue == 0 else { return nil }
            seen |= member.rawValue
            reader.skipSpace()
            guard reader.take(UInt8(ascii: ":")) else { return nil }
            reader.skipSpace()
            switch member {
            case .phase:
                guard let word = reader.word(), let value = Sample.Phase(rawValue: word) else { return nil }
                phase = value
            case .seq:
                guard let number = reader.number(), number.rounded() == number, abs(number) <= JSONValue.largestExactInteger else { return nil }
                seq = Int(number)
            case .y, .t, .contentHeight, .viewportHeight:
                guard let number = reader.number() else { return nil }
                switch member {
                case .y: y = number
                case .t: t = number
                case .contentHeight: contentHeight = number
                default: viewportHeight = number
                }
            }
            reader.skipSpace()
        } while reader.take(UInt8(ascii: ","))
        guard reader.take(UInt8(ascii: "}")) else { return nil }
        reader.skipSpace()
        guard reader.isAtEnd, let seq, let y else { return nil }
        return try? ValidSample(
            Sample(seq: seq, t: t ?? 0, y: y, phase: phase ?? .drag, contentHeight: contentHeight, viewportHeight: viewportHeight))
    }
}

/// A sample's members, each a bit of the set already read.
private enum PlainMember: UInt8 {
    case seq = 1
    case t = 2
    case y = 4
    case phase = 8
    case contentHeight = 16
    case viewportHeight = 32
}

/// The few JSON tokens a plain sample holds, over the body's bytes.
private struct PlainReader {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    var isAtEnd: Bool { index == bytes.count }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// JSON's white space, as the full parser skips it.
    mutating func skipSpace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    mutating func take(_ byte: UInt8) -> Bool {
        guard current == byte else { return false }
        index += 1
        return true
    }

    /// A quoted member name, without escapes, that a sample has.
    mutating func member() -> PlainMember? {
        guard let word = word() else { return nil }
        switch word {
        case "seq": return .seq
        case "t": return .t
        case "y": return .y
        case "phase": return .phase
        case "contentHeight": return .contentHeight
        case "viewportHeight": return .viewportHeight
        default: return nil
        }
    }

    /// A quoted string of ASCII letters only.
    mutating func word() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while let byte = current, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) {
            index += 1
        }
        guard index > start, take(UInt8(ascii: "\"")) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index - 1]), as: UTF8.self)
    }

    /// A number in JSON's grammar, converted as the full parser converts it; `nil` for one out
    /// of range (which that refuses as not finite).
    mutating func number() -> Double? {
        let start = index
        _ = take(UInt8(ascii: "-"))
        let integer = index
        guard digits() > 0 else { return nil }
        if bytes[integer] == UInt8(ascii: "0"), index - integer > 1 { return nil }
        if take(UInt8(ascii: ".")) {
            guard digits() > 0 else { return nil }
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits() > 0 else { return nil }
        }
        guard let value = Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)), value.isFinite
        else { return nil }
        return value
    }

    private mutating func digits() -> Int {
        let start = index
        while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        return index - start
    }
}
