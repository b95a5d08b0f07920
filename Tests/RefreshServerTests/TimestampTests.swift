import Testing

@testable import RefreshFeed

@Suite struct TimestampTests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", Int64(0)),
        ("2026-11-22T08:00:00Z", Int64(1_795_334_400_000)),
        ("2026-11-22T09:00:00+01:00", Int64(1_795_334_400_000)),
        ("2026-11-22t08:00:00.250z", Int64(1_795_334_400_250)),
        ("2000-02-29T12:00:00-05:30", Int64(951_845_400_000)),
        ("1969-12-31T23:59:59.5Z", Int64(-500)),
    ])
    func parsesRFC3339(text: String, milliseconds: Int64) {
        #expect(Timestamp(rfc3339: text)?.milliseconds == milliseconds)
    }

    @Test(arguments: ["2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-22", "2026-11-22T08:00:00", "yesterday", "2026-11-22T25:00:00Z", ""])
    func refusesOthers(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test func formatsRoundTrip() {
        for milliseconds: Int64 in [0, 1_795_334_400_000, 1_795_334_400_250, -500, 951_845_400_000] {
            let text = Timestamp(milliseconds: milliseconds).rfc3339
            #expect(Timestamp(rfc3339: text)?.milliseconds == milliseconds, "\(text)")
        }
        #expect(Timestamp(milliseconds: 1_795_334_400_000).rfc3339 == "2026-11-22T08:00:00Z")
        #expect(Timestamp(milliseconds: 1_795_334_400_250).rfc3339 == "2026-11-22T08:00:00.250Z")
    }
}
