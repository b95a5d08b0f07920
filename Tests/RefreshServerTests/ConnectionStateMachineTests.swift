import NIOCore
import NIOHTTP1
import Testing

@testable import RefreshServer

/// The machine alone, with plain values: the transitions a channel test reaches only by
/// timing (a stale deadline, a stream opened while the server stops, a full socket).
@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<Int>

    static func machine() -> Machine {
        Machine(limits: .init(maxBodyBytes: 64, maxHeadBytes: 1024))
    }

    static func head(_ uri: String, method: HTTPMethod = .GET, headers: HTTPHeaders = ["Host": "localhost"]) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers)
    }

    /// Opens an event stream whose state is `stream`.
    static func streaming(_ stream: Int = 7) -> Machine {
        var machine = machine()
        _ = machine.headReceived(head("/api/sessions/s/events"))
        guard case .openStream = machine.endReceived() else { fatalError("no stream asked for") }
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
        guard case .none = machine.deadlinePassed(idle!) else {
            Issue.record("a stale deadline acted")
            return
        }
        guard case .closeOutput = machine.deadlinePassed(machine.deadline!) else {
            Issue.record("the idle deadline did not close")
            return
        }
    }

    @Test func bytesThatCompleteARequestDoNotStartTheRequestDeadline() {
        var machine = Self.machine()
        _ = machine.headReceived(
            Self.head(
                "/api/sessions/s/samples", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Content-Length": "2"]))
        _ = machine.bodyReceived(ByteBuffer(string: "{}"))
        guard case .answer = machine.endReceived() else {
            Issue.record("not answered inline")
            return
        }
        _ = machine.readCompleted()
        #expect(machine.deadline?.kind == .idle)
        // The next read brings bytes but no request: a head has started.
        _ = machine.readCompleted()
        #expect(machine.deadline?.kind == .request)
    }

    @Test func partsThatArriveWhileTheRouterAnswersWaitAndAreTakenUpInOrder() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/one"))
        guard case .route = machine.endReceived() else {
            Issue.record("not routed")
            return
        }
        _ = machine.headReceived(
            Self.head(
                "/api/sessions/s/samples", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Content-Length": "2"]))
        _ = machine.bodyReceived(ByteBuffer(string: "{}"))
        _ = machine.endReceived()
        _ = machine.headReceived(Self.head("/three"))
        _ = machine.endReceived()
        guard case .none = machine.readRequested(writable: true) else {
            Issue.record("read while an answer is pending")
            return
        }
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
        guard case .none = machine.readRequested(writable: true) else {
            Issue.record("read while an answer is pending")
            return
        }
        _ = machine.routedResponseEnded(completely: true)
        if let next = machine.nextPending() { Issue.record("\(next) was still waiting") }
        guard case .read = machine.readRequested(writable: true) else {
            Issue.record("no read once free")
            return
        }
    }

    @Test func anAnswerThatFailsHalfWayClosesAtOnce() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/one"))
        _ = machine.endReceived()
        guard case .closeNow = machine.routedResponseEnded(completely: false) else {
            Issue.record("kept a broken connection")
            return
        }
    }

    @Test func aFullSocketMakesTheStreamWaitForWritability() {
        var machine = Self.streaming()
        guard case .none = machine.streamWoken(sessionEnded: false, writable: false) else {
            Issue.record("wrote to a full socket")
            return
        }
        guard case .none = machine.writabilityChanged(writable: false) else {
            Issue.record("wrote while still full")
            return
        }
        guard case .writeEvents = machine.writabilityChanged(writable: true) else {
            Issue.record("did not resume")
            return
        }
        // Writable again and not waiting: a writability change alone writes nothing.
        guard case .none = machine.writabilityChanged(writable: true) else {
            Issue.record("wrote twice")
            return
        }
        #expect(machine.withStream { $0 } == 7)
    }

    @Test func aStreamOpenedWhileTheServerStopsEndsAtOnce() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/api/sessions/s/events"))
        _ = machine.endReceived()
        _ = machine.quiesce()
        guard case .endStream(let stream, then: .close) = machine.streamOpened(3) else {
            Issue.record("the stream outlived the server")
            return
        }
        #expect(stream == 3)
        // Its end is written before the output closes; a client that never reads it is dropped.
        #expect(machine.deadline?.kind == .shutdown)
        _ = machine.outputClosed()
        #expect(machine.deadline?.kind == .linger)
    }

    @Test func aStalledReaderHoldsAStoppingServerUpOnlyForTheShutdownDeadline() {
        // The client stopped reading: the socket is full and the stream waits.
        var machine = Self.streaming()
        _ = machine.streamWoken(sessionEnded: false, writable: false)
        #expect(machine.deadline?.kind == .send)
        guard case .endStream(_, then: .close) = machine.quiesce() else {
            Issue.record("the stream did not end")
            return
        }
        // Its last chunk cannot go either: the send deadline (minutes) would keep the process alive.
        let deadline = machine.deadline
        #expect(deadline?.kind == .shutdown)
        guard case .closeNow = machine.deadlinePassed(deadline!) else {
            Issue.record("not dropped")
            return
        }

        // A server that goes on serving still gives a slow client its send deadline.
        var serving = Self.machine()
        _ = serving.headReceived(Self.head("/bye", headers: ["Host": "localhost", "Connection": "close"]))
        _ = serving.endReceived()
        _ = serving.routedResponseEnded(completely: true)
        #expect(serving.deadline?.kind == .send)
    }

    @Test func garbageOnAStreamEndsItCleanlyWithoutASecondAnswer() {
        var machine = Self.streaming()
        guard case .endStream = machine.malformedReceived(.invalidVersion) else {
            Issue.record("not ended")
            return
        }
        guard case .none = machine.malformedReceived(.invalidVersion) else {
            Issue.record("answered after the end")
            return
        }
    }

    @Test func theClientsCloseEndsTheLingerAndTheLingerDeadlineEndsItToo() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head("/bye", headers: ["Host": "localhost", "Connection": "close"]))
        _ = machine.endReceived()
        guard case .closeOutput = machine.routedResponseEnded(completely: true) else {
            Issue.record("kept alive")
            return
        }
        _ = machine.outputClosed()
        let linger = machine.deadline
        #expect(linger?.kind == .linger)
        // Whatever the client still sends is dropped, not answered.
        guard case .none = machine.headReceived(Self.head("/late")) else {
            Issue.record("answered after close")
            return
        }
        guard case .closeNow = machine.deadlinePassed(linger!) else {
            Issue.record("lingered on")
            return
        }

        var other = Self.machine()
        _ = other.quiesce()
        // The client closes while the output still drains: once it has, nothing is left to linger for.
        guard case .none = other.inputClosed() else {
            Issue.record("closed before the output drained")
            return
        }
        guard case .closeNow = other.outputClosed() else {
            Issue.record("lingered after the client closed")
            return
        }
    }

    @Test func aRefusedBodyIsDroppedAndTheConnectionServesOn() {
        var machine = Self.machine()
        _ = machine.headReceived(
            Self.head(
                "/api/items", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Transfer-Encoding": "chunked"]))
        guard case .refuse(let error, _, .keepAlive) = machine.bodyReceived(ByteBuffer(repeating: 1, count: 65)) else {
            Issue.record("a body over the limit was kept")
            return
        }
        #expect(error.status == .contentTooLarge)
        guard case .none = machine.bodyReceived(ByteBuffer(repeating: 1, count: 65)) else {
            Issue.record("refused twice")
            return
        }
        _ = machine.endReceived()
        guard
            case .route = {
                _ = machine.headReceived(Self.head("/next"))
                return machine.endReceived()
            }()
        else {
            Issue.record("the next request was not served")
            return
        }
    }

    @Test func quiescingWhileAHeadArrivesAnswersItThenCloses() {
        var machine = Self.machine()
        _ = machine.readCompleted()  // bytes of a head, no head yet
        guard case .none = machine.quiesce() else {
            Issue.record("closed under a head that was arriving")
            return
        }
        _ = machine.headReceived(
            Self.head(
                "/api/sessions/s/samples", method: .POST, headers: ["Host": "localhost", "Content-Type": "application/json", "Content-Length": "2"]))
        _ = machine.bodyReceived(ByteBuffer(string: "{}"))
        guard case .answer(_, then: .close) = machine.endReceived() else {
            Issue.record("not answered with a close")
            return
        }
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
        guard case .endStream = machine.streamOpened(1) else {
            Issue.record("a stream outlived its client")
            return
        }
    }

    @Test func lingeringReadsAgainSoTheClientsCloseIsSeen() {
        var machine = Self.machine()
        _ = machine.quiesce()
        guard case .read = machine.outputClosed() else {
            Issue.record("no read while lingering")
            return
        }
        guard case .read = machine.writabilityChanged(writable: true) else {
            Issue.record("no read while lingering")
            return
        }
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
        guard case .refuse(let error, _, then: .close) = machine.headReceived(Self.head("example.com:443", method: .CONNECT)) else {
            Issue.record("a CONNECT was not refused with a close")
            return
        }
        #expect(error.status == .methodNotAllowed)
        #expect(error.allow == nil)
    }

    @Test func aRepeatedOriginIsRefusedWhateverTheMethod() {
        for method in [HTTPMethod.GET, .OPTIONS, .POST] {
            var machine = Self.machine()
            let headers: HTTPHeaders = ["Host": "localhost", "Origin": "http://localhost", "origin": "http://localhost"]
            guard case .refuse(let error, _, then: .keepAlive) = machine.headReceived(Self.head("/api/sessions", method: method, headers: headers))
            else {
                Issue.record("\(method) with two Origin fields was not refused")
                continue
            }
            #expect(error.code == "bad_origin")
        }
    }

    @Test func theHostCheckReadsTheAuthorityOfAnAbsoluteTarget() {
        var machine = Self.machine()
        guard case .refuse(let error, _, _) = machine.headReceived(Self.head("http://evil.example/healthz")) else {
            Issue.record("a target on another host passed")
            return
        }
        #expect(error.code == "unknown_host")
        var other = Self.machine()
        _ = other.headReceived(Self.head("http://localhost/api/sessions/s/events", headers: ["Host": "evil.example"]))
        guard case .openStream(let request) = other.endReceived() else {
            Issue.record("the absolute target was not routed by its path")
            return
        }
        #expect(request.head.uri == "/api/sessions/s/events")
    }
}
