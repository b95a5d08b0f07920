import HTTPTypes
import Hummingbird
import Logging
import Testing

@testable import RefreshFeed
@testable import RefreshServer

/// Every failure is answered by one rule, whether the connection, a hot route or a routed
/// handler met it: the refusal it is, logged once, or a 500 that says nothing of the cause.
@Suite struct ErrorAnsweringTests {
    private struct Broken: Error, CustomStringConvertible {
        var description: String { "the disk caught fire" }
    }

    private func answer(_ error: any Error) -> (APIError, [LogCapture.Record]) {
        let capture = LogCapture()
        let logger = Logger(label: "test") { _ in capture }
        let answer = APIError.answering(
            error, method: "POST", path: "/api/sessions/s-1/refresh", session: "s-1", requestID: "req-1", logger: logger)
        return (answer, capture.records)
    }

    @Test func eachKindOfFailureIsTheRefusalItIs() {
        let cases: [(any Error, ErrorCode, Int)] = [
            (APIError.sessionNotFound("s-1"), .sessionNotFound, 404),
            (HTTPError(.notFound), .notFound, 404),
            (HTTPError(.contentTooLarge), .bodyTooLarge, 413),
            (HTTPError(.methodNotAllowed), .methodNotAllowed, 405),
            (HTTPError(.badRequest, message: "no"), .httpError, 400),
            (InvalidFeedItem(id: "a", field: .title, violation: .empty), .invalidValue, 400),
            (FeedStoreUnavailable("PostgreSQL is gone"), .storeUnavailable, 503),
        ]
        for (error, code, status) in cases {
            let (answer, records) = answer(error)
            #expect(answer.code == code, "\(error)")
            #expect(Int(answer.status.code) == status, "\(error)")
            #expect(records.count == 1, "one line per refusal")
            #expect(records.first?.message.hasPrefix("refused POST /api/sessions/s-1/refresh: \(status)") == true)
            #expect(records.first?.metadata["request"] == "req-1")
            #expect(records.first?.metadata["session"] == "s-1")
        }
        #expect(answer(FeedStoreUnavailable("x")).0.retryAfter == 5)
    }

    @Test func anythingElseIsTheServersFaultAndToldAsNothingMore() {
        let (answer, records) = answer(Broken())
        #expect(answer.code == .internalError)
        #expect(answer.status == .internalServerError)
        #expect(!answer.message.contains("fire"))
        #expect(records.count == 1)
        #expect(records.first?.message.contains("the disk caught fire") == true)
    }
}
