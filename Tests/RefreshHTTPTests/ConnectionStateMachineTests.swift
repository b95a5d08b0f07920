import NIOCore
import NIOHTTP1
import Synchronization
import Testing

@testable import RefreshHTTP

/// The machine alone, with plain values: the transitions a channel test reaches only by
/// timing (a stale deadline, a stream opened while the server stops, a full socket).
@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<Int>

    static func machine() -> Machine {
        Machine(limits: .init(maxBodyBytes: 64, maxHeadBytes: 1024), policy: RequestPolicy(HTTPConfiguration()), routing: TestRoute.routing)
    }

    static func head(_ uri: String, method: HTTPMethod = .GET, headers: HTTPHeaders = ["Host": "localhost"]) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers)
    }

    static let samplesHead = head(
        "/api/sessions/s/samples", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Content-Length": "2"])

    /// A request as admission hands it on: routed to `route`, with the table's match of its
    /// target (what the matcher's own tests hold).
    static func request(_ head: HTTPRequestHead, _ route: HTTPRoute, body: String? = nil, keepAlive: Bool = true) -> Machine.Request {
        var match = TestRoute.routing.route(head.method, head.uri)
        match.route = route
        return Machine.Request(head: head, match: match, body: body.map { ByteBuffer(string: $0) }, keepAlive: keepAlive, cors: nil)
    }

    /// Opens an event stream whose state is `stream`.
    static func streaming(_ stream: Int = 7) -> Machine {
        var machine = machine()
        _ = machine.headReceived(head("/api/sessions/s/events"))
        precondition(machine.endReceived() == .openStream(request(head("/api/sessions/s/events"), .stream(parameter: "s"))), "no stream asked for")
        _ = machine.streamOpened(stream)
        return machine
    }

    @Test func aStaleDeadlineIsIgnored() {
        var machine = Self.machine()
        let idle = machine.deadline
        #expect(idle?.kind == .idle)
        _ = machine.headReceived(Self.head("/healthz"))
        _ = machine.endReceived()
        _ = machine.routedResponseEnded(completely: true)
        // A new idle deadline: the first one's timer, firing late, changes nothing.
        #expect(machine.deadline != idle)
        #expect(machine.deadlinePassed(idle!) == .none, "a stale deadline acted")
        #expect(machine.deadlinePassed(machine.deadline!) == .closeOutput, "the idle deadline did not close")
    }

    @Test func bytesThatCompleteARequestDoNotStartTheRequestDeadline() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.samplesHead)
        _ = machine.bodyReceived(ByteBuffer(string: "{}"))
        #expect(
            machine.endReceived() == .answer(Self.request(Self.samplesHead, .answer(parameter: "s"), body: "{}"), then: .keepAlive),
            "not answered inline")
        _ = machine.readCompleted()
        #expect(machine.deadline?.kind == .idle)
        // The next read brings bytes but no request: a head has started.
        _ = machine.readCompleted()
        #expect(machine.deadline?.kind == .request)
    }

    @Test func partsThatArriveWhileTheRouterAnswersWaitAndAreTakenUpInOrder() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/one"))
        #expect(machine.endReceived() == .route(Self.request(Self.head("/one"), .router)), "not routed")
        _ = machine.headReceived(
            Self.head(
                "/api/sessions/s/samples", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Content-Length": "2"]))
        _ = machine.bodyReceived(ByteBuffer(string: "{}"))
        _ = machine.endReceived()
        _ = machine.headReceived(Self.head("/three"))
        _ = machine.endReceived()
        #expect(machine.readRequested() == .none, "read while an answer is pending")
        _ = machine.routedResponseEnded(completely: true)
        var taken: [String] = []
        while let next = machine.nextPending() {
            switch next {
            case .answer(let request, _): taken.append("answer \(request.head.uri)")
            case .route(let request): taken.append("route \(request.head.uri)")
            default: break
            }
        }
        #expect(taken == ["answer /api/sessions/s/samples", "route /three"])
        // The third is being answered: nothing more is read until it is.
        #expect(machine.readRequested() == .none, "read while an answer is pending")
        _ = machine.routedResponseEnded(completely: true)
        if let next = machine.nextPending() { Issue.record("\(next) was still waiting") }
        #expect(machine.readRequested() == .read, "no read once free")
    }

    @Test func anAnswerThatFailsHalfWayClosesAtOnce() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/one"))
        _ = machine.endReceived()
        #expect(machine.routedResponseEnded(completely: false) == .closeNow, "kept a broken connection")
    }

    @Test func aFullSocketMakesTheStreamWaitForWritability() {
        var machine = Self.streaming()
        _ = machine.writabilityChanged(writable: false)
        #expect(machine.streamWoken(ended: false) == .none, "wrote to a full socket")
        #expect(machine.writabilityChanged(writable: false) == .none, "wrote while still full")
        #expect(machine.writabilityChanged(writable: true) == .writeEvents, "did not resume")
        // Writable again and not waiting: a writability change alone writes nothing.
        #expect(machine.writabilityChanged(writable: true) == .none, "wrote twice")
        #expect(machine.stream == 7)
    }

    @Test func aStreamOpenedWhileTheServerStopsEndsAtOnce() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/api/sessions/s/events"))
        _ = machine.endReceived()
        _ = machine.quiesce()
        #expect(machine.streamOpened(3) == .endStream(3, then: .close), "the stream outlived the server")
        // Its end is written before the output closes; a client that never reads it is dropped.
        #expect(machine.deadline?.kind == .shutdown)
        _ = machine.outputClosed()
        #expect(machine.deadline?.kind == .linger)
    }

    @Test func aStalledReaderHoldsAStoppingServerUpOnlyForTheShutdownDeadline() {
        // The client stopped reading: the socket is full and the stream waits.
        var machine = Self.streaming()
        _ = machine.writabilityChanged(writable: false)
        _ = machine.streamWoken(ended: false)
        #expect(machine.deadline?.kind == .send)
        #expect(machine.quiesce() == .endStream(7, then: .close), "the stream did not end")
        // Its last chunk cannot go either: the send deadline (minutes) would keep the process alive.
        let deadline = machine.deadline
        #expect(deadline?.kind == .shutdown)
        #expect(machine.deadlinePassed(deadline!) == .closeNow, "not dropped")

        // A server that goes on serving still gives a slow client its send deadline.
        var serving = Self.machine()
        _ = serving.headReceived(Self.head("/bye", headers: ["Host": "localhost", "Connection": "close"]))
        _ = serving.endReceived()
        _ = serving.routedResponseEnded(completely: true)
        #expect(serving.deadline?.kind == .send)
    }

    @Test func garbageOnAStreamEndsItCleanlyWithoutASecondAnswer() {
        var machine = Self.streaming()
        #expect(machine.malformedReceived(.invalidVersion) == .endStream(7, then: .close), "not ended")
        #expect(machine.malformedReceived(.invalidVersion) == .none, "answered after the end")
    }

    @Test func theClientsCloseEndsTheLingerAndTheLingerDeadlineEndsItToo() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/bye", headers: ["Host": "localhost", "Connection": "close"]))
        _ = machine.endReceived()
        #expect(machine.routedResponseEnded(completely: true) == .closeOutput, "kept alive")
        _ = machine.outputClosed()
        let linger = machine.deadline
        #expect(linger?.kind == .linger)
        // Whatever the client still sends is dropped, not answered.
        #expect(machine.headReceived(Self.head("/late")) == .none, "answered after close")
        #expect(machine.deadlinePassed(linger!) == .closeNow, "lingered on")

        var other = Self.machine()
        _ = other.quiesce()
        // The client closes while the output still drains: once it has, nothing is left to linger for.
        #expect(other.inputClosed() == .none, "closed before the output drained")
        #expect(other.outputClosed() == .closeNow, "lingered after the client closed")
    }

    @Test func aRefusedBodyIsDroppedAndTheConnectionServesOn() {
        var machine = Self.machine()
        let post = Self.head(
            "/api/items", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Transfer-Encoding": "chunked"])
        _ = machine.headReceived(post)
        let refused = machine.bodyReceived(ByteBuffer(repeating: 1, count: 65))
        #expect(
            refused
                == .refuse(
                    .bodyTooLarge(limit: 64), head: post, cors: nil, then: .keepAlive,
                    match: RouteMatch(.router, routeIndex: 4, patternIndex: 4, isAPI: true)),
            "a body over the limit was kept")
        #expect(machine.bodyReceived(ByteBuffer(repeating: 1, count: 65)) == .none, "refused twice")
        _ = machine.endReceived()
        _ = machine.headReceived(Self.head("/next"))
        #expect(machine.endReceived() == .route(Self.request(Self.head("/next"), .router)), "the next request was not served")
    }

    @Test func quiescingWhileAHeadArrivesAnswersItThenCloses() {
        var machine = Self.machine()
        _ = machine.readCompleted()  // bytes of a head, no head yet
        #expect(machine.quiesce() == .none, "closed under a head that was arriving")
        _ = machine.headReceived(Self.samplesHead)
        _ = machine.bodyReceived(ByteBuffer(string: "{}"))
        #expect(
            machine.endReceived() == .answer(Self.request(Self.samplesHead, .answer(parameter: "s"), body: "{}"), then: .close),
            "not answered with a close")
    }

    @Test func aClientGoneBeforeItsStreamOpenedEndsTheStream() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/first"))
        _ = machine.endReceived()
        _ = machine.headReceived(Self.head("/api/sessions/s/events"))
        _ = machine.endReceived()
        _ = machine.inputClosed()
        _ = machine.routedResponseEnded(completely: true)
        var opened = false
        while let next = machine.nextPending() {
            if case .openStream = next { opened = true }
        }
        #expect(opened)
        #expect(machine.streamOpened(1) == .endStream(1, then: .close), "a stream outlived its client")
    }

    @Test func lingeringReadsAgainSoTheClientsCloseIsSeen() {
        var machine = Self.machine()
        _ = machine.quiesce()
        #expect(machine.outputClosed() == .read, "no read while lingering")
        #expect(machine.writabilityChanged(writable: true) == .read, "no read while lingering")
    }

    @Test func theSendDeadlineStartsAfreshWithEveryWriteOfAnAnswer() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/big"))
        _ = machine.endReceived()
        let first = machine.deadline
        #expect(first?.kind == .send)
        _ = machine.routedWriteCompleted()
        #expect(machine.deadline?.kind == .send)
        #expect(machine.deadline != first)
    }

    // MARK: - Upgrade, CONNECT, absolute targets

    @Test(arguments: [
        (HTTPMethod.GET, ["Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c"], true),
        (.GET, ["connection": "keep-alive,upgrade", "UPGRADE": "websocket"], true),
        (.POST, ["Connection": "upgrade", "Upgrade": "websocket", "Content-Length": "2"], true),
        (.CONNECT, [:], true),
        // llhttp goes on parsing unless both are there.
        (.GET, ["Upgrade": "h2c"], false),
        (.GET, ["Connection": "upgrade"], false),
        (.GET, ["Connection": "upgraded", "Upgrade": "h2c"], false),
        (.GET, [:], false),
    ])
    func theDecoderStopsAfterWhatLLHTTPTakesForAnUpgrade(method: HTTPMethod, fields: [String: String], stops: Bool) {
        var headers = HTTPHeaders([("Host", "localhost")])
        for (name, value) in fields { headers.add(name: name, value: value) }
        #expect(Machine.decoderStops(after: Self.head("/", method: method, headers: headers)) == stops)
    }

    @Test(arguments: [
        ("http://evil.example/healthz", "evil.example", "/healthz"),
        ("HTTPS://Name:8443?x=1", "Name:8443", "/?x=1"),
        ("http://localhost", "localhost", "/"),
        ("http://", "", "/"),
        ("http://a@b/c#d", "a@b", "/c#d"),
    ])
    func anAbsoluteTargetSplitsIntoAuthorityAndPath(uri: String, authority: String, origin: String) {
        #expect(Machine.AbsoluteTarget(uri) == Machine.AbsoluteTarget(authority: authority, origin: origin))
    }

    @Test(arguments: ["/healthz", "*", "example.com:443", "ftp://x/y"])
    func otherTargetsAreNotAbsolute(uri: String) {
        #expect(Machine.AbsoluteTarget(uri) == nil)
    }

    @Test func aConnectIsRefusedAndTheConnectionClosesAfterTheAnswer() {
        var machine = Self.machine()
        let connect = Self.head("example.com:443", method: .CONNECT)
        #expect(
            machine.headReceived(connect) == .refuse(.notAProxy, head: connect, cors: nil, then: .close), "a CONNECT was not refused with a close")
    }

    @Test func aRepeatedOriginIsRefusedWhateverTheMethod() {
        for method in [HTTPMethod.GET, .OPTIONS, .POST] {
            var machine = Self.machine()
            let headers: HTTPHeaders = ["Host": "localhost", "Origin": "http://localhost", "origin": "http://localhost"]
            let head = Self.head("/api/sessions", method: method, headers: headers)
            #expect(
                machine.headReceived(head) == .refuse(.repeatedOrigin, head: head, cors: nil, then: .keepAlive),
                "\(method) with two Origin fields was not refused")
        }
    }

    /// A connection asks for one target at every frame: its route is found once, and a
    /// request for another target, or the same one with another method, is routed afresh.
    @Test func admissionRoutesARepeatedTargetOnce() {
        let asked = Mutex<[String]>([])
        let counting = HTTPRouting { method, uri in
            asked.withLock { $0.append("\(method.rawValue) \(uri)") }
            return TestRoute.routing.route(method, uri)
        }
        var admission = RequestAdmission(
            limits: .init(maxBodyBytes: 64, maxHeadBytes: 1024), policy: RequestPolicy(HTTPConfiguration()), routing: counting)
        func route(_ head: HTTPRequestHead) -> HTTPRoute? {
            guard case .admitted(let admitted) = admission.admit(head) else { return nil }
            return admitted.route
        }
        #expect(route(Self.samplesHead) == .answer(parameter: "s"))
        #expect(route(Self.samplesHead) == .answer(parameter: "s"))
        let other = Self.head(
            "/api/sessions/t/samples", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Content-Length": "2"])
        #expect(route(other) == .answer(parameter: "t"))
        #expect(route(Self.head("/api/items")) == .router)
        let publish = Self.head(
            "/api/items", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Content-Length": "2"])
        #expect(route(publish) == .router)
        #expect(route(Self.head("/api/items", method: .DELETE)) == nil)
        #expect(route(Self.samplesHead) == .answer(parameter: "s"))
        // A stream's route is not kept: its connection would hold the target while it lasts.
        #expect(route(Self.head("/api/sessions/s/events")) == .stream(parameter: "s"))
        #expect(route(Self.head("/api/sessions/s/events")) == .stream(parameter: "s"))
        // Byte for byte, as routing reads it: a target canonically equal is another target.
        let kelvin = Self.head(
            "/api/sessions/\u{212A}/samples", method: .POST,
            headers: ["Host": "localhost", "Content-Type": "application/json", "Content-Length": "2"])
        let letter = Self.head(
            "/api/sessions/K/samples", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Content-Length": "2"])
        #expect(route(kelvin) == .answer(parameter: "\u{212A}"))
        #expect(route(letter) == .answer(parameter: "K"))
        #expect(
            asked.withLock { $0 } == [
                "POST /api/sessions/s/samples", "POST /api/sessions/t/samples", "GET /api/items", "POST /api/items", "DELETE /api/items",
                "POST /api/sessions/s/samples", "GET /api/sessions/s/events", "GET /api/sessions/s/events",
                "POST /api/sessions/\u{212A}/samples", "POST /api/sessions/K/samples",
            ])
    }

    /// Admission judges a head once: its verdict carries the route and the CORS origin, for
    /// an answer and for a refusal alike, so nothing after it reads the head's fields again.
    @Test func admissionsVerdictCarriesTheRouteAndTheCORSOrigin() {
        var configuration = HTTPConfiguration()
        configuration.corsOrigins = ["https://app.example"]
        var admission = RequestAdmission(
            limits: .init(maxBodyBytes: 64, maxHeadBytes: 1024), policy: RequestPolicy(configuration), routing: TestRoute.routing)
        let stream = Self.head("/api/sessions/s/events", headers: ["Host": "localhost", "Origin": "https://APP.example"])
        #expect(
            admission.admit(stream)
                == .admitted(
                    .init(
                        head: stream, match: RouteMatch(.stream(parameter: "s"), routeIndex: 1, patternIndex: 1, isAPI: true),
                        cors: "https://app.example", keepAlive: true, expectsContinue: false)))
        let stranger = Self.head("/api/sessions/s/events", headers: ["Host": "localhost", "Origin": "https://other.example"])
        #expect(
            admission.admit(stranger)
                == .admitted(
                    .init(
                        head: stranger, match: RouteMatch(.stream(parameter: "s"), routeIndex: 1, patternIndex: 1, isAPI: true), cors: nil,
                        keepAlive: true, expectsContinue: false)))
        let refused = Self.head("/api/items", method: .PUT, headers: ["Host": "localhost", "Origin": "https://app.example"])
        #expect(
            admission.admit(refused)
                == .refused(
                    .init(
                        error: .methodNotAllowed("PUT", allow: "GET, HEAD, POST"), head: refused, cors: "https://app.example", keepAlive: true,
                        match: RouteMatch(.methodNotAllowed(allow: "GET, HEAD, POST"), patternIndex: 3, isAPI: true))))
        var machine = Machine(
            limits: .init(maxBodyBytes: 64, maxHeadBytes: 1024), policy: RequestPolicy(configuration), routing: TestRoute.routing)
        let preflight = Self.head("/api/sessions", method: .OPTIONS, headers: ["Host": "localhost", "Origin": "https://app.example"])
        _ = machine.headReceived(preflight)
        #expect(
            machine.endReceived()
                == .answer(
                    Machine.Request(
                        head: preflight, match: RouteMatch(.preflight(allow: "POST"), patternIndex: 2, isAPI: true), body: nil, keepAlive: true,
                        cors: "https://app.example"),
                    then: .keepAlive))
    }

    @Test func theHostCheckReadsTheAuthorityOfAnAbsoluteTarget() {
        var machine = Self.machine()
        #expect(
            machine.headReceived(Self.head("http://evil.example/healthz"))
                == .refuse(.unknownHost, head: Self.head("/healthz"), cors: nil, then: .keepAlive),
            "a target on another host passed")
        var other = Self.machine()
        _ = other.headReceived(Self.head("http://localhost/api/sessions/s/events", headers: ["Host": "evil.example"]))
        #expect(
            other.endReceived()
                == .openStream(Self.request(Self.head("/api/sessions/s/events", headers: ["Host": "evil.example"]), .stream(parameter: "s"))),
            "the absolute target was not routed by its path")
    }
}

/// A route table in the shape of the server's API, of the three kinds the connection knows.
private enum TestRoute: ConnectionRouteKind {
    case answer
    case stream
    case router

    var disposition: RouteDisposition {
        switch self {
        case .answer: .answer(parameter: "id")
        case .stream: .stream(parameter: "id")
        case .router: .router
        }
    }

    static let routing = HTTPRouting(
        RouteMatcher<TestRoute>(
            api: "api", files: [.GET, .HEAD],
            routes: [
                .init(.POST, "/api/sessions/{id}/samples", .answer),
                .init(.GET, "/api/sessions/{id}/events", .stream),
                .init(.POST, "/api/sessions", .router),
                .init(.GET, "/api/items", .router),
                .init(.POST, "/api/items", .router),
            ]))
}
