import Testing

@testable import RefreshFeed

@Suite struct FeedNameTests {
    @Test(arguments: ["main", "user:42", "team.eng", "a", "0", "Z~x@y-z.w", "9-", "a:b@c.d~e-f", "a_b"])
    func acceptsLettersDigitsAndTheAllowedPunctuation(name: String) {
        #expect(FeedName(name)?.rawValue == name)
    }

    @Test(arguments: [
        "", ".main", "_a", "-a", ":a", "@a", "~a", "a b", "a/b", "a?b", "a%20", "a\nb", "a\u{0}", "café", "ｍａｉｎ", "naïve", "١٢",
        "main\u{301}",
    ])
    func refusesEverythingElse(name: String) {
        #expect(FeedName(name) == nil)
    }

    @Test func theLengthStopsAt128() {
        #expect(FeedName(String(repeating: "a", count: 128)) != nil)
        #expect(FeedName(String(repeating: "a", count: 129)) == nil)
        #expect(FeedName("a" + String(repeating: "-", count: 127)) != nil)
    }

    @Test func namesAreCaseSensitiveAndMainIsTheDefault() {
        #expect(FeedName("Main") != FeedName.main)
        #expect(FeedName("main") == FeedName.main)
        #expect(FeedName.main.description == "main")
    }
}
