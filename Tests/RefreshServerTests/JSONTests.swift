import Foundation
import NIOCore
import RefreshJSON
import Testing

@Suite struct JSONTests {
    @Test(arguments: [
        (#"{"a":[1,-2.5e3,true,false,null,"x\"\\\/\n\u00e9\ud83d\ude00"]}"#, true),
        ("  {}  ", true),
        ("{\"a\":01}", false),
        ("{\"a\":1,}", false),
        ("{'a':1}", false),
        ("{\"a\":\"\u{01}\"}", false),
        (#"{"a":"\ud800"}"#, false),
        ("[1] x", false),
        ("-", false),
        ("1.", false),
    ])
    func parsesOnlyValidJSON(text: String, valid: Bool) {
        let parsed = try? JSONParser.parse(Array(text.utf8))
        #expect((parsed != nil) == valid, "\(text)")
    }

    @Test func decodesStringsAndNumbers() throws {
        let value = try JSONParser.parse(Array(#"{"s":"é\u00e9\ud83d\ude00","n":-0.5,"big":1e400}"#.utf8))
        guard case .object(let members) = value else { throw TestFailure("not an object") }
        #expect(members["s"] == .string("éé😀"))
        #expect(members["n"] == .number(-0.5))
        #expect(members["big"] == .number(.infinity))
    }

    @Test func refusesDeepNesting() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array(deep.utf8)) }
    }

    @Test func writesEscapedStringsAndCompactNumbers() {
        var json = JSONWriter()
        json.beginObject()
        json.field("text", "a\"b\\c\n<script>&\u{2028}\u{1}")
        json.field("whole", 80.0)
        json.field("fraction", 0.5)
        json.field("nan", Double.nan)
        json.field("none", nil as String?)
        json.endObject()
        #expect(
            String(buffer: json.buffer)
                == #"{"text":"a\"b\\c\n\u003cscript\u003e\u0026\u2028\u0001","whole":80,"fraction":0.5,"nan":null,"none":null}"#)
        let roundTrip = try? JSONSerialization.jsonObject(with: Data(json.buffer.readableBytesView)) as? [String: Any]
        #expect(roundTrip?["text"] as? String == "a\"b\\c\n<script>&\u{2028}\u{1}")
    }

    /// Strings with nothing to escape go out quoted as they are, however long, empty or
    /// beyond ASCII; members and array elements are separated alike.
    @Test func writesCleanStringsAsTheyAre() {
        let long = String(repeating: "Pull to refresh, ", count: 20)
        var json = JSONWriter()
        json.beginObject()
        json.field("empty", "")
        json.field("long", long)
        json.field("accents", "Relâchez pour actualiser · 更新")
        json.field("ellipsis", "Refreshing…")
        json.key("list")
        json.beginArray()
        json.value("a")
        json.value(2)
        json.value("")
        json.endArray()
        json.endObject()
        #expect(
            String(buffer: json.buffer)
                == #"{"empty":"","long":"\#(long)","accents":"Relâchez pour actualiser · 更新","ellipsis":"Refreshing…","list":["a",2,""]}"#)
    }

    /// A whole `Double` is written with the digits `String(Int64(value))` has, at the edges of
    /// the range written so (below 10¹⁵) and of each digit count; beyond it, as Swift writes it.
    @Test func writesWholeDoublesAsIntegers() {
        var values: [Double] = [0, -0.0, 1, -1, 9, 10, -10, 99, 100, 1e15 - 1, -(1e15 - 1), 1e15, 12345678.0]
        values += (1...14).flatMap { digits in [pow(10, Double(digits)), pow(10, Double(digits)) - 1, -pow(10, Double(digits))] }
        for value in values {
            var buffer = ByteBuffer()
            buffer.writeJSONNumber(value)
            let expected = abs(value) < 1e15 ? String(Int64(value)) : value.description
            #expect(String(buffer: buffer) == expected, "\(value)")
        }
    }

    /// Integers as `String(value)` writes them, at both ends of their range, and a key of
    /// one character like any other.
    @Test func writesIntegersAndShortKeys() {
        var json = JSONWriter()
        json.beginObject()
        json.field("t", 12)
        json.field("seq", -3)
        json.field("max", Int.max)
        json.field("min", Int.min)
        json.field("y", -42.0)
        json.endObject()
        #expect(String(buffer: json.buffer) == #"{"t":12,"seq":-3,"max":9223372036854775807,"min":-9223372036854775808,"y":-42}"#)
    }
}
