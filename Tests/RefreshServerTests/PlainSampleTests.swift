import RefreshEngine
import RefreshJSON
import Testing

@testable import RefreshServer

/// The samples route reads a plain sample in one pass and leaves every other body to the
/// full decoder: the one pass must accept only what the decoder accepts, as the same sample.
@Suite struct PlainSampleTests {
    private func plain(_ text: String) -> ValidSample? {
        Array(text.utf8).withUnsafeBytes { SampleDecoding.plainSample($0) }
    }

    /// What the full decoder makes of `text`: its samples, or `nil` when it refuses the body.
    private func full(_ text: String) -> [ValidSample]? {
        try? SampleDecoding.decode(JSONValue.parseBody(Array(text.utf8)), maxCount: 100)
    }

    @Test(arguments: [
        #"{"seq":1,"y":-30}"#,
        #"{"seq":12,"y":-30.5,"phase":"drag"}"#,
        #"{"seq":2,"t":1234.5,"y":0,"phase":"release","contentHeight":4000,"viewportHeight":800}"#,
        #" { "y" : 1e2 , "seq" : 9007199254740991 , "phase" : "scroll" } "#,
        "{\n\t\"seq\": 0,\r\n\"y\": -0.0\n}",
        #"{"seq":3,"y":5E-3,"t":0.25}"#,
        #"{"seq":1e2,"y":-30}"#,  // a whole number, however written
    ])
    func aPlainSampleIsReadInOnePassAsTheDecoderReadsIt(_ body: String) throws {
        let sample = try #require(plain(body))
        #expect(full(body) == [sample])
    }

    @Test(arguments: [
        #"{"samples":[{"seq":1,"y":-30}]}"#,  // a batch
        #"{"seq":1,"y":-30,"seq":2}"#,  // a duplicate
        #"{"seq":1,"y":-30,"x":1}"#,  // an unknown member
        #"{"seq":1,"y":null}"#, #"{"seq":1,"y":-30,"phase":null}"#,
        #"{"seq":1.5,"y":-30}"#, #"{"seq":9007199254740993,"y":-30}"#,
        #"{"seq":1,"y":1e999}"#, #"{"seq":1,"y":NaN}"#, #"{"seq":1,"y":-Infinity}"#,
        #"{"seq":01,"y":1}"#, #"{"seq":1,"y":1.}"#, #"{"seq":1,"y":.5}"#, #"{"seq":1,"y":+1}"#, #"{"seq":1,"y":1e}"#,
        #"{"seq":1,"y":"1"}"#, #"{"seq":1,"y":-30,"phase":"dr\u0061g"}"#, #"{"s\u0065q":1,"y":-30}"#,
        #"{"seq":1,"y":-30,"phase":"fling"}"#,
        #"{"seq":1}"#, #"{"y":1}"#, "{}", "", "[]", #"{"seq":1,"y":-30"#, #"{"seq":1,"y":-30}x"#, #"{"seq":1,"y":-30,}"#,
        #"{"seq":-1,"y":-30}"#, #"{"seq":1,"y":-30,"viewportHeight":-1}"#,
    ])
    func anythingElseIsLeftToTheDecoder(_ body: String) {
        #expect(plain(body) == nil)
    }

    /// Bodies made from the members a sample has, with values and spacing drawn at random
    /// (numbers of every shape JSON allows and some it does not, `null`, strings, repeats,
    /// strangers): whenever the one pass reads a sample, the decoder reads the same one.
    @Test func whateverTheOnePassReadsTheDecoderReadsAlike() {
        var random = SplitMix(seed: 0x5EED_5A3B_1E00)
        let members = ["seq", "t", "y", "phase", "contentHeight", "viewportHeight", "x", "samples"]
        let numbers = [
            "0", "-0", "1", "-30", "12.5", "-0.25", "1e3", "2E-2", "1e999", "-1e999", "9007199254740991", "9007199254740992",
            "01", "1.", ".5", "+1", "NaN", "Infinity", "1e", "4000", "800", "-1",
        ]
        let others = ["null", #""drag""#, #""release""#, #""scroll""#, #""other""#, "true", "[]", "{}", #""1""#]
        let spaces = ["", "", "", " ", "\n", "\t", "\r\n"]
        var read = 0
        for _ in 0..<20_000 {
            // Mostly the two members a sample needs, then any others.
            var parts: [String] = []
            for index in 0..<(2 + random.next(below: 5)) {
                let member = index < 2 && random.next(below: 8) > 0 ? ["seq", "y"][index] : members[random.next(below: members.count)]
                let value = random.next(below: 4) == 0 ? others[random.next(below: others.count)] : numbers[random.next(below: numbers.count)]
                let space = { spaces[random.next(below: spaces.count)] }
                parts.append("\(space())\"\(member)\"\(space()):\(space())\(value)\(space())")
            }
            let body = "{" + parts.joined(separator: ",") + "}"
            guard let sample = plain(body) else { continue }
            read += 1
            #expect(full(body) == [sample], "\(body)")
        }
        #expect(read > 100, "the bodies drawn include plain samples")
    }

    /// A position of few digits is converted without the text conversion: to the same
    /// `Double`, bit for bit (the sign of a zero too), as the text conversion makes, for
    /// decimals of every length up to where it hands over and a little past it.
    @Test func aShortDecimalIsTheSameDoubleTheTextConversionMakes() throws {
        var random = SplitMix(seed: 0xDEC1_0A11)
        for _ in 0..<50_000 {
            let integerDigits = 1 + random.next(below: 6)
            let fractionDigits = random.next(below: 14)
            var text = random.next(below: 2) == 0 ? "-" : ""
            text += String(1 + random.next(below: 9)) + (1..<integerDigits).map { _ in String(random.next(below: 10)) }.joined()
            if random.next(below: 6) == 0 { text = text.hasPrefix("-") ? "-0" : "0" }
            if fractionDigits > 0 { text += "." + (0..<fractionDigits).map { _ in String(random.next(below: 10)) }.joined() }
            let sample = try #require(plain(#"{"seq":1,"y":\#(text)}"#), "\(text)")
            let expected = try #require(Double(text))
            #expect(sample.sample.y.bitPattern == expected.bitPattern, "\(text)")
        }
        for text in ["-0", "-0.0", "0.1", "0.3", "2.675", "1.005", "123456.789012345", "999999.999999999", "0.000000000000001", "1.0000000000000001"]
        {
            let sample = try #require(plain(#"{"seq":1,"y":\#(text)}"#), "\(text)")
            #expect(sample.sample.y.bitPattern == Double(text)!.bitPattern, "\(text)")
        }
    }
}

/// A small seeded generator, so a failure names a body that comes back on every run.
private struct SplitMix {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next(below bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
