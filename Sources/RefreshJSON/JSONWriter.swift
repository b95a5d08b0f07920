import NIOCore

/// Writes JSON straight into a `ByteBuffer`: events are encoded once on the hot path, with
/// no intermediate `String`, no `Encoder` and no dictionary. Its small steps are
/// `@inlinable` so the server's event encoders, in another module, still inline them.
public struct JSONWriter {
    public var buffer: ByteBuffer
    @usableFromInline var needsComma = false

    @inlinable public init(buffer: ByteBuffer) { self.buffer = buffer }

    public init(capacity: Int = 256) { self.buffer = ByteBufferAllocator().buffer(capacity: capacity) }

    @inlinable public mutating func beginObject() {
        separate()
        buffer.writeInteger(UInt8(ascii: "{"))
        needsComma = false
    }

    @inlinable public mutating func endObject() {
        buffer.writeInteger(UInt8(ascii: "}"))
        needsComma = true
    }

    @inlinable public mutating func beginArray() {
        separate()
        buffer.writeInteger(UInt8(ascii: "["))
        needsComma = false
    }

    @inlinable public mutating func endArray() {
        buffer.writeInteger(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A member name; the next value written is its value. The separator, the quoted name
    /// and the colon go into the buffer in one write: an event has a dozen members, and each
    /// write to a buffer checks its storage afresh.
    @inlinable public mutating func key(_ name: StaticString) {
        let comma = needsComma
        let length = name.utf8CodeUnitCount
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length + 4) { out in
            var at = 0
            if comma {
                out[at] = UInt8(ascii: ",")
                at += 1
            }
            out[at] = UInt8(ascii: "\"")
            UnsafeMutableRawBufferPointer(rebasing: out[(at + 1)...]).copyMemory(
                from: UnsafeRawBufferPointer(start: name.utf8Start, count: length))
            at += 1 + length
            out[at] = UInt8(ascii: "\"")
            out[at + 1] = UInt8(ascii: ":")
            return at + 2
        }
        needsComma = false
    }

    @inlinable public mutating func key(_ name: String) {
        value(name)
        buffer.writeInteger(UInt8(ascii: ":"))
        needsComma = false
    }

    @inlinable public mutating func value(_ string: String) {
        separate()
        buffer.writeJSONString(string)
        needsComma = true
    }

    @inlinable public mutating func value(_ number: Double) {
        separate()
        buffer.writeJSONNumber(number)
        needsComma = true
    }

    @inlinable public mutating func value(_ number: Int) {
        separate()
        buffer.writeWholeNumber(Int64(number))
        needsComma = true
    }

    @inlinable public mutating func value(_ bool: Bool) {
        separate()
        buffer.writeStaticString(bool ? "true" : "false")
        needsComma = true
    }

    /// A value already encoded as JSON by this writer, written as it is.
    @inlinable public mutating func encoded(_ json: ByteBuffer) {
        separate()
        buffer.writeImmutableBuffer(json)
        needsComma = true
    }

    @inlinable public mutating func null() {
        separate()
        buffer.writeStaticString("null")
        needsComma = true
    }

    @inlinable public mutating func value(_ string: String?) {
        if let string { value(string) } else { null() }
    }

    @inlinable public mutating func field(_ name: StaticString, _ string: String) {
        key(name)
        value(string)
    }

    @inlinable public mutating func field(_ name: StaticString, _ number: Double) {
        key(name)
        value(number)
    }

    @inlinable public mutating func field(_ name: StaticString, _ number: Int) {
        key(name)
        value(number)
    }

    @inlinable public mutating func field(_ name: StaticString, _ bool: Bool) {
        key(name)
        value(bool)
    }

    @inlinable public mutating func field(_ name: StaticString, _ string: String?) {
        key(name)
        value(string)
    }

    @inlinable mutating func separate() {
        if needsComma { buffer.writeInteger(UInt8(ascii: ",")) }
    }
}

extension ByteBuffer {
    /// A JSON string literal. Besides the required escapes, `<`, `>` and `&` are escaped so
    /// a title can never close a `<script>` or start markup if a client embeds it in HTML,
    /// and U+2028/2029 so the output is also valid JavaScript.
    public mutating func writeJSONString(_ string: String) {
        var string = string
        // A string that needs no escape (a label, a phase, most titles) is written quoted in
        // one write.
        let written = string.withUTF8 { bytes -> Bool in
            let clean = !bytes.contains {
                $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">")
                    || $0 == UInt8(ascii: "&") || $0 == 0xE2
            }
            guard clean else { return false }
            writeWithUnsafeMutableBytes(minimumWritableBytes: bytes.count + 2) { out in
                out[0] = UInt8(ascii: "\"")
                UnsafeMutableRawBufferPointer(rebasing: out[1...]).copyMemory(from: UnsafeRawBufferPointer(bytes))
                out[bytes.count + 1] = UInt8(ascii: "\"")
                return bytes.count + 2
            }
            return true
        }
        guard !written else { return }
        writeInteger(UInt8(ascii: "\""))
        writeEscaped(string)
        writeInteger(UInt8(ascii: "\""))
    }

    private mutating func writeEscaped(_ string: String) {
        let hex: StaticString = "0123456789abcdef"
        func digit(_ value: UInt32) -> UInt8 { hex.utf8Start[Int(value & 0xF)] }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": writeStaticString("\\\"")
            case "\\": writeStaticString("\\\\")
            case "\n": writeStaticString("\\n")
            case "\r": writeStaticString("\\r")
            case "\t": writeStaticString("\\t")
            case "<", ">", "&", "\u{2028}", "\u{2029}", "\u{0}"..."\u{1F}":
                let value = scalar.value
                writeStaticString("\\u")
                writeInteger(digit(value >> 12))
                writeInteger(digit(value >> 8))
                writeInteger(digit(value >> 4))
                writeInteger(digit(value))
            default:
                writeBytes(scalar.utf8)
            }
        }
    }

    /// A whole number's digits, written in place rather than made into a string first.
    @usableFromInline mutating func writeWholeNumber(_ value: Int64) {
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                start -= 1
                digits[start] = UInt8(ascii: "-")
            }
            writeBytes(UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Whole numbers without a fraction, others in Swift's shortest round-trip form;
    /// non-finite numbers (never produced on purpose) as `null`, since JSON has no NaN.
    public mutating func writeJSONNumber(_ number: Double) {
        guard number.isFinite else {
            writeStaticString("null")
            return
        }
        if number == number.rounded(), abs(number) < 1e15 {
            writeWholeNumber(Int64(number))
        } else {
            writeString(number.description)
        }
    }
}
