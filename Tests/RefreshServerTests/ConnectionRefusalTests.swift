import NIOHTTP1
import Testing

@testable import RefreshHTTP
@testable import RefreshServer

/// How the server words the refusals the connection decides by itself.
@Suite struct ConnectionRefusalTests {
    @Test func eachRefusalIsAnsweredWithItsError() {
        #expect(APIError.bodyTooLarge(limit: 64).status == .contentTooLarge)
        #expect(APIError(HTTPRefusal.bodyTooLarge(limit: 64)) == .bodyTooLarge(limit: 64))
        #expect(APIError.notAProxy.status == .methodNotAllowed)
        #expect(APIError.notAProxy.allow == nil)
        #expect(APIError(HTTPRefusal.notAProxy) == .notAProxy)
        #expect(APIError.repeatedOrigin.code.rawValue == "bad_origin")
        #expect(APIError(HTTPRefusal.repeatedOrigin) == .repeatedOrigin)
        #expect(APIError.unknownHost.code.rawValue == "unknown_host")
        #expect(APIError(HTTPRefusal.unknownHost) == .unknownHost)
        #expect(APIError(HTTPRefusal.methodNotAllowed("PUT", allow: "GET, HEAD")).allow == "GET, HEAD")
        #expect(APIError(HTTPRefusal.malformed(.invalidVersion)).code.rawValue == "malformed_request")
    }
}
