import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import RefreshEngine
import Testing

@testable import RefreshFeed
@testable import RefreshHTTP
@testable import RefreshServer

@Suite struct HotRouteTests {
    let routes: HotRoutes = {
        var configuration = ServerConfiguration()
        configuration.maxStreams = 10
        configuration.maxStreamsPerClient = 10
        return ServerParts.forTest(configuration: configuration).application { _, _, _ in Response(status: .ok) }
    }()

    func head(_ method: HTTPMethod, _ path: String) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: ["Host": "localhost"])
    }

    @Test func onlySamplesPostsAndEventStreamsAreHot() {
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc/samples") == .samples(session: "abc"))
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc/samples?debug=1") == .samples(session: "abc"))
        #expect(RouteTable.route(.GET, uri: "/api/sessions/abc/events?lastEventId=4") == .events(session: "abc"))
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc") == .methodNotAllowed(allow: "GET, HEAD, DELETE"))
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc/samples/more") == .router)
        #expect(RouteTable.route(.POST, uri: "/api/sessions") == .router)
        #expect(RouteTable.route(.GET, uri: "/static/api/sessions/abc/events") == .router)
        #expect(RouteTable.route(.DELETE, uri: "/api/sessions/abc/refresh") == .router)
    }

    @Test func aMethodAPathDoesNotHaveIsRefusedWithTheOnesItHas() {
        #expect(RouteTable.route(.GET, uri: "/api/sessions/abc/samples") == .methodNotAllowed(allow: "POST"))
        #expect(RouteTable.route(.POST, uri: "/api/sessions/abc/events") == .methodNotAllowed(allow: "GET, HEAD"))
        // HEAD wherever GET is: the stream's head, answered where the stream would be.
        #expect(RouteTable.route(.HEAD, uri: "/api/sessions/abc/events") == .events(session: "abc"))
        #expect(RouteTable.route(.PUT, uri: "/api/items") == .methodNotAllowed(allow: "GET, HEAD, POST"))
        #expect(RouteTable.route(.GET, uri: "/api/sessions") == .methodNotAllowed(allow: "POST"))
        #expect(RouteTable.route(.PATCH, uri: "/api/sessions/abc/refresh") == .methodNotAllowed(allow: "POST, DELETE"))
        #expect(RouteTable.route(.DELETE, uri: "/index.html") == .methodNotAllowed(allow: "GET, HEAD"))
        #expect(RouteTable.route(.POST, uri: "/healthz") == .methodNotAllowed(allow: "GET, HEAD"))
        // An API path that does not exist is the router's 404, whatever the method.
        #expect(RouteTable.route(.PUT, uri: "/api/nothing") == .router)
    }

    @Test func aResumePointComesFromTheHeaderOrTheQuery() throws {
        let session = try routes.sessions.create(config: Preset.standard.config, client: "test")
        var request = head(.GET, "/api/sessions/\(session.id)/events?lastEventId=7")
        #expect(try routes.eventStreamRequest(request, session: session.id).lastEventID == 7)
        request.headers.replaceOrAdd(name: "Last-Event-ID", value: " 9 ")
        #expect(try routes.eventStreamRequest(request, session: session.id).lastEventID == 9)
        request.headers.replaceOrAdd(name: "Last-Event-ID", value: "nine")
        #expect(throws: APIError.self) { try routes.eventStreamRequest(request, session: session.id) }
        #expect(throws: APIError.sessionNotFound("gone")) { try routes.eventStreamRequest(head(.GET, "/"), session: "gone") }
    }

    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_795_356_000) == "Sun, 22 Nov 2026 14:00:00 GMT")
    }
}
