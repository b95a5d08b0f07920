/// A point in time as milliseconds since 1970-01-01T00:00:00Z, read from and written as
/// RFC 3339. Hand-rolled so parsing and formatting need no locale, no formatter object and
/// no lock.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// Now, on the wall clock (the only clock that means anything to a feed reader).
    public static func now() -> Self {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Self(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }

    /// Parses `2026-11-22T08:00:00Z`, `2026-11-22t08:00:00.5+01:00` and the like.
    public init?(rfc3339 text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for _ in 0..<digits {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                index += 1
            }
            return value
        }
        func skip(_ allowed: String) -> Bool {
            guard index < bytes.count, allowed.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), skip("-"), let month = number(2), skip("-"), let day = number(2),
            skip("Tt "), let hour = number(2), skip(":"), let minute = number(2), skip(":"), let second = number(2),
            (1...12).contains(month), (1...Self.daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var millisecond = 0
        if skip(".") {
            var scale = 100
            var digits = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                millisecond += Int(bytes[index] - UInt8(ascii: "0")) * scale
                scale /= 10
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
        }
        var offsetMinutes = 0
        if skip("Zz") {
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHour = number(2), skip(":"), let offsetMinute = number(2), offsetHour < 24, offsetMinute < 60 else {
                return nil
            }
            offsetMinutes = sign * (offsetHour * 60 + offsetMinute)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = Self.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offsetMinutes * 60)
        // An offset can carry a time at either end of the four-digit years past them
        // (`0000-01-01T00:00:00+01:00`); such an instant has no RFC 3339 form to answer with.
        guard Self.writable.contains(seconds * 1000 + Int64(millisecond)) else { return nil }
        milliseconds = seconds * 1000 + Int64(millisecond)
    }

    /// The instants ``rfc3339`` can write: 0000-01-01T00:00:00Z through 9999-12-31T23:59:59.999Z.
    static let writable: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// `2026-11-22T08:00:00Z`, with milliseconds only when there are some.
    public var rfc3339: String {
        let totalSeconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let millisecond = Int(milliseconds - totalSeconds * 1000)
        let days = totalSeconds >= 0 ? totalSeconds / 86_400 : (totalSeconds - 86_399) / 86_400
        let secondOfDay = Int(totalSeconds - days * 86_400)
        let (year, month, day) = Self.civil(fromDays: Int(days))
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        var text =
            "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
        if millisecond != 0 { text += ".\(pad(millisecond, 3))" }
        return text + "Z"
    }

    public var description: String { rfc3339 }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Howard Hinnant's `days_from_civil`.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Howard Hinnant's `civil_from_days`.
    private static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
