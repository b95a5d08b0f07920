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
        var draft = SampleDraft()
        var seen: UInt8 = 0
        repeat {
            reader.skipSpace()
            guard let word = reader.word(), let field = SampleField(rawValue: word), seen & field.bit == 0 else { return nil }
            seen |= field.bit
            reader.skipSpace()
            guard reader.take(UInt8(ascii: ":")) else { return nil }
            reader.skipSpace()
            switch field.value {
            case .phase:
                guard let word = reader.word(), let phase = Sample.Phase(rawValue: word) else { return nil }
                draft.phase = phase
            case .input:
                guard let word = reader.word(), let input = Sample.Input(rawValue: word) else { return nil }
                draft.input = input
            case .wholeNumber:
                guard let number = reader.number(), number.rounded() == number, abs(number) <= JSONValue.largestExactInteger else { return nil }
                draft.set(field, number)
            case .number:
                guard let number = reader.number() else { return nil }
                draft.set(field, number)
            }
            reader.skipSpace()
        } while reader.take(UInt8(ascii: ","))
        guard reader.take(UInt8(ascii: "}")) else { return nil }
        reader.skipSpace()
        guard reader.isAtEnd, let sample = draft.sample else { return nil }
        return try? ValidSample(sample)
    }
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
        let negative = take(UInt8(ascii: "-"))
        let integer = index
        guard digits() > 0 else { return nil }
        if bytes[integer] == UInt8(ascii: "0"), index - integer > 1 { return nil }
        let integerEnd = index
        var fraction = index..<index
        if take(UInt8(ascii: ".")) {
            let first = index
            guard digits() > 0 else { return nil }
            fraction = first..<index
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits() > 0 else { return nil }
        } else if let exact = Self.exactDecimal(bytes[integer..<integerEnd], fraction: bytes[fraction], negative: negative) {
            return exact
        }
        guard let value = Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)), value.isFinite
        else { return nil }
        return value
    }

    /// A decimal of few digits, without an exponent, the way a page writes a position
    /// (`-30.5`, `812`): its digits are a whole number a `Double` holds exactly, divided by a
    /// power of ten it holds exactly, and that one division is rounded as the full conversion
    /// rounds (the fast path of correctly rounded conversion). `nil` for any other number.
    private static func exactDecimal(_ integer: Slice<UnsafeRawBufferPointer>, fraction: Slice<UnsafeRawBufferPointer>, negative: Bool) -> Double? {
        guard integer.count + fraction.count <= 15, fraction.count < powersOfTen.count else { return nil }
        var digits: UInt64 = 0
        for byte in integer { digits = digits * 10 + UInt64(byte - UInt8(ascii: "0")) }
        for byte in fraction { digits = digits * 10 + UInt64(byte - UInt8(ascii: "0")) }
        let magnitude = Double(digits) / powersOfTen[fraction.count]
        return negative ? -magnitude : magnitude
    }

    /// 10⁰ … 10²², every one a `Double` holds exactly.
    private static let powersOfTen: [Double] = (0...22).map { (0..<$0).reduce(1.0) { value, _ in value * 10 } }

    private mutating func digits() -> Int {
        let start = index
        while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        return index - start
    }
}
