import RefreshEngine
import RefreshJSON
import Testing

@testable import RefreshServer

/// The cold JSON bodies (`POST /api/sessions`, `POST /api/items`) decode through their
/// types' `Codable` conformances, made strict by `JSONValueDecoder`: these pin what that
/// strictness answers, field path and all.
@Suite struct DecodingTests {
    private func body(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    private func refusal(_ text: String, items: Bool = false) throws -> APIError? {
        let value = try body(text)
        do {
            if items { _ = try ItemDecoding.decode(value, now: .now()) } else { _ = try ConfigDecoding.decode(value) }
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        // (body, code, message)
        (#"{"presett":"default"}"#, "invalid_value", "presett is not a known field."),
        (#"{"config":{"top":{"treshold":90}}}"#, "invalid_value", "config.top.treshold is not a known field."),
        (#"{"config":{"top":{"labels":{"pul":"x"}}}}"#, "invalid_value", "config.top.labels.pul is not a known field."),
        (#"{"config":{"top":{"trigger":"later"}}}"#, "invalid_value", #"config.top.trigger must be one of "release", "cross"."#),
        (#"{"preset":"android"}"#, "invalid_value", #"preset must be one of "default", "swiftui-lab", "ios15", "uikit-bottom"."#),
        (#"{"config":{"top":{"threshold":"90"}}}"#, "invalid_type", "config.top.threshold must be a number, not a string."),
        (#"{"config":{"rotation":1}}"#, "invalid_type", "config.rotation must be true or false, not a number."),
        (#"{"config":[]}"#, "invalid_type", "config must be an object, not an array."),
        (#"[]"#, "invalid_type", "the body must be an object, not an array."),
        (
            #"{"config":{"top":{"threshold":1e999}}}"#, "out_of_range",
            "config.top.threshold must be a finite number from 1 to 100000."
        ),
        // Its arrow turned by NaN: 0.4 × 5e-324 is 0.
        (#"{"config":{"top":{"threshold":5e-324}}}"#, "out_of_range", "config.top.threshold must be a finite number from 1 to 100000."),
        (
            #"{"resume":{"head":9007199254740992,"oldest":"a"}}"#, "out_of_range",
            "resume.head must be from -9007199254740991 to 9007199254740991 (2^53 − 1): a JSON number beyond is not exact."
        ),
        (#"{"resume":{"head":1.5,"oldest":"a"}}"#, "invalid_value", "resume.head must be a whole number."),
    ])
    func sessionBodiesAreRefusedWithTheirField(text: String, code: String, message: String) throws {
        let error = try #require(try refusal(text))
        #expect(error.code.rawValue == code)
        #expect(error.message == message)
    }

    @Test func nullMeansNotGiven() throws {
        let config = try ConfigDecoding.decode(try body(#"{"preset":null,"config":{"top":null,"news":null,"rotation":false}}"#))
        #expect(config.top == Preset.standard.config.top)
        #expect(config.news == Preset.standard.config.news)
        #expect(config.rotation == false)
        #expect(try ResumeDecoding.decode(try body(#"{"resume":null}"#)) == nil)
        #expect(try ConfigDecoding.decode(nil) == Preset.standard.config)
    }

    @Test func overridesReachTheConfig() throws {
        let config = try ConfigDecoding.decode(
            try body(
                #"{"preset":"ios15","config":{"top":{"threshold":120,"trigger":"release","labels":{"pull":"Pull"}},"news":"live","rubberBand":{"maxPull":300}}}"#
            ))
        #expect(config.top.threshold == 120)
        #expect(config.top.trigger == .release)
        #expect(config.top.labels.pull == "Pull")
        #expect(config.news == .live)
        #expect(config.rubberBand.maxPull == 300)
        #expect(config.baseline == Preset.iOS15.config.baseline)
    }

    @Test(arguments: [
        (#"{"title":"a","colour":"red"}"#, "invalid_value", "colour is not a known field."),
        (#"{"items":[{"title":"a"},{"title":"b","extra":1}]}"#, "invalid_value", "items[1].extra is not a known field."),
        (#"{"items":[{"title":"a"},{"title":7}]}"#, "invalid_type", "items[1].title must be a string, not a number."),
        (#"{"items":[{"title":"a"},{}]}"#, "missing_field", "items[1].title is required (a string)."),
        (#"{"items":[{"title":"a"},{"title":"  "}]}"#, "invalid_value", "items[1].title must not be empty."),
        (#"{"items":{"title":"a"}}"#, "invalid_type", "items must be an array, not an object."),
        (#"{"items":[]}"#, "invalid_value", "items must not be empty."),
        (#"{"items":["a"]}"#, "invalid_type", "items[0] must be an object, not a string."),
        (#"{"title":"a","published":"yesterday"}"#, "invalid_value", "published must be an RFC 3339 time such as 2026-11-22T08:00:00Z."),
    ])
    func itemsAreRefusedWithTheirField(text: String, code: String, message: String) throws {
        let error = try #require(try refusal(text, items: true))
        #expect(error.code.rawValue == code)
        #expect(error.message == message)
    }

    /// The samples route reads by hand, but by the same rule.
    @Test(arguments: [
        (#"{"seq":1,"y":0,"dy":3}"#, "dy is not a known field."),
        (#"{"samples":[{"seq":1,"y":0},{"seq":2,"y":0,"edge":"top"}]}"#, "samples[1].edge is not a known field."),
        (#"{"samples":[{"seq":1,"y":0}],"session":"x"}"#, "session is not a known field."),
    ])
    func samplesRefuseUnknownMembersToo(text: String, message: String) throws {
        let parsed = try body(text)
        let error = try #require(throws: APIError.self) { try SampleDecoding.decode(parsed, maxCount: 64) }
        #expect(error.code.rawValue == "invalid_value")
        #expect(error.message == message)
        let known = try SampleDecoding.decode(
            try body(#"{"seq":1,"t":2,"y":-3,"phase":"release","contentHeight":900,"viewportHeight":600}"#), maxCount: 64)
        #expect(known.count == 1)
    }

    /// A `seq` past 2^53 − 1 cannot be told from its neighbours once read as a JSON number:
    /// refused as out of range, saying why, not as "not a whole number".
    @Test(arguments: [
        ("9007199254740992", "out_of_range", "seq must be from -9007199254740991 to 9007199254740991 (2^53 − 1): a JSON number beyond is not exact."),
        ("1e17", "out_of_range", "seq must be from -9007199254740991 to 9007199254740991 (2^53 − 1): a JSON number beyond is not exact."),
        ("1.5", "invalid_value", "seq must be a whole number."),
    ])
    func aSeqBeyondWhatJSONCarriesExactlyIsRefusedSayingWhy(seq: String, code: String, message: String) throws {
        let error = try #require(throws: APIError.self) { try SampleDecoding.decode(try body(#"{"seq":\#(seq),"y":0}"#), maxCount: 64) }
        #expect(error.code.rawValue == code)
        #expect(error.message == message)
        let largest = try SampleDecoding.decode(try body(#"{"seq":9007199254740991,"y":0}"#), maxCount: 64)
        #expect(largest.first?.seq == 9_007_199_254_740_991)
    }

    /// Text a page shows is trimmed; an id is kept byte for byte (ids are compared by their
    /// bytes, so `" a "` is not `"a"`).
    @Test func itemsDecodeTextTrimmedIDsAsGivenNullsAsAbsent() throws {
        let items = try ItemDecoding.decode(
            try body(#"{"items":[{"id":" a ","title":" One ","summary":null,"published":"2026-11-22T08:00:00Z"},{"title":"Two"}]}"#),
            now: .now())
        #expect(items.map(\.id).first == " a ")
        #expect(items.map(\.title) == ["One", "Two"])
        #expect(items[0].summary == nil)
        #expect(items[1].id.hasPrefix("item-"))
    }
}
