import RefreshJSON
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Inputs the fuzz targets (Fuzz/) found a broken invariant with, each kept as a plain test;
/// the same inputs are in Fuzz/corpus/.
@Suite struct FuzzFindingTests {
    /// An offset carried `published` past the four-digit years: the item was taken and then
    /// answered with `00-1-12-31T23:00:00Z`, which no client (nor this server) reads back.
    @Test(arguments: ["0000-01-01T00:00:00+01:00", "0000-01-01T00:59:59.999+01:00", "9999-12-31T23:59:59-00:01"])
    func anItemTimeBeyondTheFourDigitYearsIsRefused(published: String) throws {
        #expect(Timestamp(rfc3339: published) == nil)
        let body = JSONValue.object(["title": .string("x"), "published": .string(published)])
        #expect(throws: APIError.self) { try ItemDecoding.decode(body, now: .now()) }
        do {
            _ = try ItemDecoding.decode(body, now: .now())
        } catch {
            #expect(error.status == .badRequest && error.code.rawValue == "invalid_value")
        }
    }

    @Test(arguments: ["0000-01-01T00:00:00Z", "0000-01-01T01:00:00+01:00", "9999-12-31T23:59:59.999Z", "9999-12-31T22:59:59-01:00"])
    func theFirstAndLastWritableInstantsRoundTrip(published: String) throws {
        let time = try #require(Timestamp(rfc3339: published))
        #expect(Timestamp(rfc3339: time.rfc3339) == time, "\(time.rfc3339)")
    }
}
