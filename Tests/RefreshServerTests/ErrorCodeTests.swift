import Foundation
import Testing

@testable import RefreshServer

/// The error codes, declared once (``ErrorCode``), against the API's description and the
/// bodies the server writes.
@Suite struct ErrorCodeTests {
    /// The `enum` of `Error.error` in `Public/openapi.yaml`, in its order: the list under the
    /// `enum:` key that follows `    Error:` (items at twelve spaces of indent).
    static func describedCodes() throws -> [String] {
        var codes: [String] = []
        var inError = false
        var inList = false
        for line in try APIDocument.text().split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("    "), !line.hasPrefix("     ") { inError = line == "    Error:" }
            guard inError else { continue }
            if line == "          enum:" {
                inList = true
            } else if inList, line.hasPrefix("            - ") {
                codes.append(String(line.dropFirst("            - ".count)))
            } else if inList {
                break
            }
        }
        return codes
    }

    @Test func theAPIDescriptionListsEveryCodeOnceInTheTypesOrder() throws {
        let described = try Self.describedCodes()
        #expect(described.count >= 40)
        #expect(described == ErrorCode.allCases.map(\.rawValue))
    }

    /// The documented front answers some requests itself, in the same shape and with codes
    /// of the same list.
    @Test func theFrontsOwnAnswersUseListedCodes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var found = 0
        for file in ["deploy/nginx.conf", "scripts/cluster"] {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for part in text.components(separatedBy: #"{"error":""#).dropFirst() {
                let code = String(part.prefix { $0 != "\"" })
                #expect(ErrorCode(rawValue: code) != nil, "\(file) answers \(code), which ErrorCode does not list")
                found += 1
            }
        }
        #expect(found >= 8)
    }

    @Test func codesAreSnakeCaseAndEachIsSentWithAnErrorStatus() {
        for code in ErrorCode.allCases {
            #expect(code.rawValue.allSatisfy { $0.isLowercase || $0 == "_" }, "\(code.rawValue)")
            #expect((400..<600).contains(code.status.code), "\(code.rawValue): \(code.status)")
            #expect("\(code)" == code.rawValue, "logs write the code as the wire does")
        }
    }

    @Test func anErrorBodyCarriesTheCodeAsWrittenAndItsStatus() {
        let refusal = APIError(.tooManySessionsForClient, "Too many.")
        #expect(refusal.status == .tooManyRequests)
        let payload = JSONResponse.errorPayload(refusal, acceptsGzip: false)
        #expect(String(buffer: payload.body) == #"{"error":"too_many_sessions_for_client","message":"Too many."}"#)
        #expect(APIError(.httpError, "Gone.", status: .gone).status == .gone)
    }
}
