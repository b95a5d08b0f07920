import NIOCore
import NIOHTTP1

/// Everything one HTTP/1.1 connection knows, as one state with inputs named after what
/// happened and actions its handler performs. It does no I/O and reads no clock: deadlines
/// arrive as inputs (`deadlinePassed`), so every transition is a plain-value test.
///
/// The design follows from four promises.
///
/// - **Answers in request order, and backpressure instead of a queue.** One request is
///   answered at a time. While the router answers one, reads are withheld, and so are they
///   while the socket holds answers the client has not read: a pipelining client cannot make
///   the server buffer without bound. What the last read had already brought waits in
///   `backlog` (at most one read's worth) and is taken up, in order, once the answer is
///   written. A request the parser refuses is answered after the answers of the requests
///   before it, then the connection closes.
/// - **Every connection ends.** An idle kept-alive connection has a deadline; so has a
///   request, from its first byte to its last (a stalled head is closed, a stalled body
///   answered `408`); so has an answer or a stream the client stops reading. A connection is
///   closed in stages, as RFC 9112 §9.6 asks: its output once the last answer has gone, then
///   what the client still sends is read and dropped until it closes its side or a short
///   linger deadline passes, so the client reads the answer instead of a reset.
/// - **Stopping loses nothing that was asked.** Quiescing is a lifecycle of its own, not a
///   client's `Connection: close`: the request being read or answered is answered with
///   `Connection: close`; an event stream ends cleanly; an idle connection closes its output.
/// - **A stream is an answer that does not end.** A client asking to close after the answer
///   still gets its stream; it ends when what it follows does, or the server stops.
///
/// `Stream` is what an open stream keeps (the application's object for it); the machine
/// only holds it, and lets go of it when the stream ends or the connection closes. A head is
/// judged once, by ``RequestAdmission``: its verdict (the route, the CORS origin) travels in
/// the actions, so the handler never reads a header to decide.
package struct ConnectionStateMachine<Stream> {
    package typealias Limits = ConnectionLimits
    package typealias AbsoluteTarget = RequestTarget

    package typealias Request = ConnectionRequest

    /// What the connection does after an answer.
    package enum Then: Equatable {
        case keepAlive
        case close
    }

    package enum Action {
        case none
        /// Ask the socket for more bytes.
        case read
        /// `100 Continue`: the client waits for it before sending the body.
        case sendContinue
        /// Answer an ``HTTPRoute/answer(parameter:)`` (or a CORS preflight) now, on this event
        /// loop; then, on `.close`, close the output.
        case answer(Request, then: Then)
        /// Hand the request to the router; ``routedResponseEnded(completely:)`` follows.
        case route(Request)
        /// Open the event stream: ``streamOpened(_:)``, or ``streamRefused(then:)`` with an
        /// answer already written, follows.
        case openStream(Request)
        /// Write the JSON error (`head` is the refused request's, when it got that far, `cors`
        /// its `--cors-origin`, and `match` its route, when that was found); then, on
        /// `.close`, close the output.
        case refuse(HTTPRefusal, head: HTTPRequestHead?, cors: String?, then: Then, match: RouteMatch? = nil)
        /// Write what the stream has to send.
        case writeEvents
        /// End the stream's response cleanly (gzip trailer, last chunk), then, on `.close`,
        /// close the output; the stream is the handler's to finish and let go of.
        case endStream(Stream, then: Then)
        /// Close the output once what was written has gone; ``outputClosed()`` follows.
        case closeOutput
        /// Close at once, dropping what was not sent.
        case closeNow
    }

    /// Which deadline runs, and for which request: a new value means a new timer.
    package struct Deadline: Equatable {
        package enum Kind: Equatable {
            /// No request for a while on a kept-alive connection.
            case idle
            /// A request has started arriving and must be complete by then.
            case request
            /// An answer or a stream waits for a client that does not read.
            case send
            /// The output is closed; the client has this long to close its side.
            case linger
            /// The server is stopping and the last bytes (a stream's end, an answer) wait
            /// for a client that does not read: they have this long, not the send deadline,
            /// so one stalled reader cannot hold the exit up.
            case shutdown
        }

        package var kind: Kind
        fileprivate var epoch: Int
    }

    /// One thing the decoder reported, kept while an answer is pending.
    private enum Part {
        case head(HTTPRequestHead)
        case body(ByteBuffer)
        case end
        case malformed(HTTPParserError)
        case inputClosed
    }

    private enum Idle {
        /// Nothing of a next request has arrived.
        case waiting
        /// A request was answered during the read in progress: what else that read brought
        /// is not known to be the start of a request.
        case answeredInThisRead
        /// Bytes of a request head arrived: the request deadline runs.
        case headStarted
    }

    private enum Closing {
        /// The output closes once what was written has gone. `inputClosed`: the client has
        /// closed its side already, so nothing is left to linger for.
        case draining(inputClosed: Bool)
        /// The output is closed; what the client sends is dropped until it closes too.
        case lingering
    }

    private enum State {
        /// Between requests.
        case idle(Idle)
        /// A head arrived; its body is being collected.
        case receiving(Request)
        /// The request was refused before its end: the rest of its body is read and dropped.
        case discarding(keepAlive: Bool)
        /// The router is answering; reads are withheld until it has.
        case answering(keepAlive: Bool)
        /// A stream was asked for and is being opened.
        case openingStream(keepAlive: Bool)
        /// An event stream owns the output. `keepAlive`: its request lets the connection serve
        /// another once the stream ends with what it follows. `waitsForWritability`: the socket
        /// was full, and the stream writes again once it drains (its events wait in the
        /// session's log).
        case streaming(Stream, keepAlive: Bool, waitsForWritability: Bool)
        case closing(Closing)
        case closed
    }

    private enum Lifecycle {
        case serving
        /// The server is stopping: no answer keeps the connection alive.
        case quiescing
    }

    private var state = State.idle(.waiting)
    private var lifecycle = Lifecycle.serving
    /// The socket takes more bytes now (the channel's writability, as last reported).
    private var writable = true
    /// The channel asked for a read that was withheld: it is owed one once reads go on.
    private var readPending = false
    /// Parts that arrived while the router answered, in order; only a pipelining client
    /// fills it, and only with what one read brought.
    private var backlog = CircularBuffer<Part>()
    /// Bumped whenever a deadline starts afresh.
    private var epoch = 0
    /// Whether the bytes read so far end inside a request whose head the decoder holds but
    /// has not reported (it says nothing until a head is whole), as of the last read.
    private var requestStarted = false
    /// The judge of every head.
    package private(set) var admission: RequestAdmission
    package var limits: Limits { admission.limits }

    package init(limits: Limits, policy: RequestPolicy, routing: HTTPRouting) {
        admission = RequestAdmission(limits: limits, policy: policy, routing: routing)
    }

    // MARK: - What the handler asks

    /// The deadline that should be running now, if any.
    package var deadline: Deadline? {
        let kind: Deadline.Kind? =
            switch state {
            case .idle(.waiting), .idle(.answeredInThisRead): .idle
            case .idle(.headStarted), .receiving, .discarding: .request
            case .closing(.draining) where lifecycle == .quiescing: .shutdown
            case .answering, .streaming(_, _, waitsForWritability: true), .closing(.draining): .send
            case .closing(.lingering): .linger
            case .openingStream, .streaming, .closed: nil
            }
        return kind.map { Deadline(kind: $0, epoch: epoch) }
    }

    /// Whether the answer being written is the connection's last (it says `Connection: close`).
    package var closesAfterAnswer: Bool {
        if case .quiescing = lifecycle { return true }
        switch state {
        case .answering(let keepAlive), .openingStream(let keepAlive), .discarding(let keepAlive): return !keepAlive
        case .receiving(let request): return !request.keepAlive
        case .idle, .streaming: return false
        case .closing, .closed: return true
        }
    }

    /// The open stream, if any.
    package var stream: Stream? {
        if case .streaming(let stream, _, _) = state { stream } else { nil }
    }

    /// Whether a stream's bytes may be written now: a stream is open and the socket took all
    /// it was given.
    package var streamTakesBytes: Bool {
        if case .streaming(_, _, waitsForWritability: false) = state { writable } else { false }
    }

    // MARK: - Inputs from the decoder

    package mutating func headReceived(_ head: HTTPRequestHead) -> Action {
        receive(.head(head))
    }

    package mutating func bodyReceived(_ buffer: ByteBuffer) -> Action {
        receive(.body(buffer))
    }

    package mutating func endReceived() -> Action {
        receive(.end)
    }

    /// The parser refused the bytes: the request cannot be framed, so the connection closes.
    package mutating func malformedReceived(_ error: HTTPParserError) -> Action {
        receive(.malformed(error))
    }

    /// The client closed its side of the connection.
    package mutating func inputClosed() -> Action {
        receive(.inputClosed)
    }

    /// A read from the socket ended (whether or not it completed a request).
    /// `requestStarted`: the bytes read so far end inside a request (``RequestBoundaries``).
    package mutating func readCompleted(requestStarted: Bool = false) -> Action {
        self.requestStarted = requestStarted
        switch state {
        case .idle(.waiting) where backlog.isEmpty:
            // Bytes came and no request was completed: a head has started.
            state = .idle(.headStarted)
            epoch += 1
        case .idle(.answeredInThisRead):
            // What else the read brought after the request it completed is a head started,
            // held to the head's deadline like any other.
            state = .idle(requestStarted ? .headStarted : .waiting)
            if requestStarted { epoch += 1 }
        default:
            break
        }
        return .none
    }

    /// The channel wants to read. Not while an answer is pending, nor while the socket
    /// holds answers the client has not read (a stream reads on, to see its client leave):
    /// then the read is owed, and given once reads go on (``readIfOwed()``).
    package mutating func readRequested() -> Action {
        if mayRead {
            readPending = false
            return .read
        }
        if case .closed = state { return .none }
        readPending = true
        return .none
    }

    /// The read the channel asked for and was refused, now that reads go on.
    package mutating func readIfOwed() -> Action {
        guard readPending, mayRead else { return .none }
        readPending = false
        return .read
    }

    private var mayRead: Bool {
        switch state {
        case .answering, .openingStream, .closed: false
        case .streaming, .closing: true
        case .idle, .receiving, .discarding: backlog.isEmpty && writable
        }
    }

    /// The socket took (or stopped taking) what was written.
    package mutating func writabilityChanged(writable: Bool) -> Action {
        self.writable = writable
        guard writable else { return .none }
        switch state {
        case .streaming(let stream, let keepAlive, waitsForWritability: true):
            state = .streaming(stream, keepAlive: keepAlive, waitsForWritability: false)
            return .writeEvents
        case .idle, .receiving, .discarding:
            // A read withheld while answers waited in the socket.
            return readIfOwed()
        case .closing:
            // Reads withheld while answers waited: the client's close must still be seen.
            readPending = false
            return .read
        case .answering, .openingStream, .streaming, .closed:
            return .none
        }
    }

    // MARK: - Inputs from the answering side

    /// A write of the router's answer reached the socket: the client reads, so the send
    /// deadline starts afresh.
    package mutating func routedWriteCompleted() -> Action {
        if case .answering = state { epoch += 1 }
        return .none
    }

    /// The router's answer is written (`completely`), or failed half-way, its framing lost.
    package mutating func routedResponseEnded(completely: Bool) -> Action {
        guard case .answering(let keepAlive) = state else { return .none }
        guard completely else {
            state = .closed
            return .closeNow
        }
        guard keepAlive, case .serving = lifecycle else { return closeAfterAnswer() }
        state = idleAfterAnswer
        epoch += 1
        return .none
    }

    /// Between requests after an answer: a request the reads already started is waited for
    /// on its head's deadline, not the idle one.
    private var idleAfterAnswer: State {
        .idle(requestStarted ? .headStarted : .waiting)
    }

    /// The next part that waited while an answer was pending, taken up; `nil` once none
    /// waits, or the connection is busy again (then the rest waits for the next answer).
    package mutating func nextPending() -> Action? {
        switch state {
        case .answering, .openingStream, .streaming, .closing, .closed: return nil
        case .idle, .receiving, .discarding: break
        }
        guard let part = backlog.popFirst() else { return nil }
        return process(part)
    }

    package mutating func streamOpened(_ stream: Stream) -> Action {
        guard case .openingStream(let keepAlive) = state else {
            return .none
        }
        state = .streaming(stream, keepAlive: keepAlive, waitsForWritability: false)
        // Nothing can follow a response that does not end: what a client sent after the
        // stream's request is dropped, and reads go on, to see the client leave; a client
        // that has left already, or sent garbage, ends the stream at once.
        let gone = backlog.contains {
            switch $0 {
            case .inputClosed, .malformed: true
            case .head, .body, .end: false
            }
        }
        backlog.removeAll()
        if gone { return endStream() }
        // A server that started stopping while the stream opened ends it at once.
        if case .quiescing = lifecycle { return endStream() }
        return .none
    }

    /// The stream was refused with an answer already written (404, or the overload answer
    /// that ends by itself and says `Connection: close`).
    package mutating func streamRefused(then: Then) -> Action {
        guard case .openingStream(let keepAlive) = state else { return .none }
        guard keepAlive, then == .keepAlive, case .serving = lifecycle else { return closeAfterAnswer() }
        state = .idle(.answeredInThisRead)
        epoch += 1
        return .none
    }

    /// The application has bytes for the stream (or what it follows ended); they are written if
    /// the socket takes more now. Every stream of a session runs this on every wake-up, so the state (and the
    /// stream in it) is rewritten only when the wait for writability begins or ends.
    package mutating func streamWoken(ended: Bool) -> Action {
        guard case .streaming(_, let keepAlive, let waiting) = state else {
            return .none
        }
        if ended { return endStream(keepingAlive: keepAlive) }
        if writable == waiting, case .streaming(let stream, _, _) = state {
            state = .streaming(stream, keepAlive: keepAlive, waitsForWritability: !writable)
            if !writable { epoch += 1 }
        }
        return writable ? .writeEvents : .none
    }

    /// Writing the stream failed: it cannot go on.
    package mutating func streamFailed() -> Action {
        guard case .streaming = state else { return .none }
        state = .closed
        return .closeNow
    }

    /// The output is closed: linger, unless the client has closed its side already.
    package mutating func outputClosed() -> Action {
        guard case .closing(.draining(let inputClosed)) = state else { return .none }
        guard !inputClosed else {
            state = .closed
            return .closeNow
        }
        state = .closing(.lingering)
        epoch += 1
        // Reads may have been withheld while answers waited: the client's close must be seen.
        return .read
    }

    // MARK: - Inputs from the server and the clock

    /// The server is stopping: answer what was read, with `Connection: close`, then close.
    package mutating func quiesce() -> Action {
        guard case .serving = lifecycle else { return .none }
        lifecycle = .quiescing
        backlog.removeAll()
        switch state {
        case .idle(.headStarted):
            // A head is arriving: it is answered, with `Connection: close`, or its deadline passes.
            return .none
        case .idle:
            return closeAfterAnswer()
        case .streaming:
            return endStream()
        case .receiving, .discarding, .answering, .openingStream, .closing, .closed:
            // The answer in progress says `Connection: close`, and the connection closes after it.
            return .none
        }
    }

    package mutating func deadlinePassed(_ passed: Deadline) -> Action {
        guard passed == deadline else { return .none }
        switch state {
        case .idle(.waiting), .idle(.answeredInThisRead), .discarding:
            return closeAfterAnswer()
        case .idle(.headStarted):
            // Part of a head and then nothing: most likely a client holding connections
            // open on purpose. Nothing was asked, so nothing is answered (as nginx does).
            state = .closed
            backlog.removeAll()
            return .closeNow
        case .receiving(let request):
            return refuse(.requestTimeout, head: request.head, cors: request.cors, then: .close, match: request.match)
        case .answering, .streaming, .closing:
            // A client that does not read, or does not close: its unsent bytes are dropped.
            state = .closed
            backlog.removeAll()
            return .closeNow
        case .openingStream, .closed:
            return .none
        }
    }

    /// The channel closed, whatever the reason.
    package mutating func channelClosed() {
        state = .closed
        backlog.removeAll()
    }

    // MARK: - Requests

    private mutating func receive(_ part: Part) -> Action {
        switch state {
        case .answering, .openingStream:
            backlog.append(part)
            return .none
        default:
            // Parts taken up from the backlog go first.
            guard backlog.isEmpty else {
                backlog.append(part)
                return .none
            }
            return process(part)
        }
    }

    private mutating func process(_ part: Part) -> Action {
        switch (state, part) {
        case (.closing(.draining), .inputClosed):
            state = .closing(.draining(inputClosed: true))
            return .none
        case (.closing(.lingering), .inputClosed):
            state = .closed
            return .closeNow
        case (.closing, _), (.closed, _):
            return .none

        case (.streaming, .inputClosed), (.streaming, .malformed):
            return endStream()
        case (.streaming, _):
            // An event stream's response never ends by itself: nothing can follow it.
            return .none
        case (.discarding, .malformed):
            // The refusal is written already; a second answer would answer nothing asked.
            return closeAfterAnswer()

        case (_, .malformed(let error)):
            let request: Request? = if case .receiving(let request) = state { request } else { nil }
            return refuse(.malformed(error), head: request?.head, cors: request?.cors, then: .close, match: request?.match)

        case (.idle(let idle), .head(let head)):
            // The request deadline runs from the head's first byte; a head that came whole
            // in one read starts it now.
            if idle != .headStarted { epoch += 1 }
            return headReceived(checking: head)
        case (.idle, .inputClosed):
            return closeAfterAnswer()
        case (.idle, .body), (.idle, .end):
            // The decoder never sends these outside a request.
            return .none

        case (.receiving(var request), .body(var chunk)):
            var body = request.body ?? ByteBuffer()
            request.body = nil
            state = .receiving(request)  // `body` is then the buffer's only owner while it grows
            guard body.readableBytes + chunk.readableBytes <= limits.maxBodyBytes else {
                return refuse(
                    .bodyTooLarge(limit: limits.maxBodyBytes), head: request.head, cors: request.cors, then: request.keepAlive ? .keepAlive : .close,
                    match: request.match)
            }
            body.writeBuffer(&chunk)
            request.body = body
            state = .receiving(request)
            return .none
        case (.receiving(let request), .end):
            return requestComplete(request)
        case (.receiving, .inputClosed):
            // The decoder reports a request cut short as malformed first; this is its end.
            return closeAfterAnswer()
        case (.receiving, .head):
            return .none

        case (.discarding(let keepAlive), .end):
            guard keepAlive, case .serving = lifecycle else { return closeAfterAnswer() }
            state = .idle(.answeredInThisRead)
            epoch += 1
            return .none
        case (.discarding, .inputClosed):
            return closeAfterAnswer()
        case (.discarding, _):
            return .none

        case (.answering, _), (.openingStream, _):
            // `receive` keeps these in the backlog.
            return .none
        }
    }

    private mutating func headReceived(checking head: HTTPRequestHead) -> Action {
        switch admission.admit(head) {
        case .refused(let refused):
            return refuse(
                refused.error, head: refused.head, cors: refused.cors, then: refused.keepAlive ? .keepAlive : .close, match: refused.match)
        case .admitted(let admitted):
            state = .receiving(Request(head: admitted.head, match: admitted.match, body: nil, keepAlive: admitted.keepAlive, cors: admitted.cors))
            return admitted.expectsContinue ? .sendContinue : .none
        }
    }

    private mutating func requestComplete(_ request: Request) -> Action {
        let keepAlive = request.keepAlive && lifecycle == .serving
        switch request.route {
        case .answer, .preflight:
            if keepAlive {
                state = .idle(.answeredInThisRead)
                epoch += 1
            } else {
                enterClosing()
            }
            return .answer(request, then: keepAlive ? .keepAlive : .close)
        case .stream:
            state = .openingStream(keepAlive: keepAlive)
            return .openStream(request)
        case .router, .methodNotAllowed:
            state = .answering(keepAlive: keepAlive)
            epoch += 1
            return .route(request)
        }
    }

    /// Refuses the request: after the answer the connection either discards the rest of the
    /// request and serves the next, or closes. The request's deadline keeps running.
    private mutating func refuse(_ error: HTTPRefusal, head: HTTPRequestHead?, cors: String?, then: Then, match: RouteMatch? = nil) -> Action {
        switch (then, state, lifecycle) {
        case (.keepAlive, .receiving, .serving), (.keepAlive, .idle, .serving):
            state = .discarding(keepAlive: true)
            return .refuse(error, head: head, cors: cors, then: .keepAlive, match: match)
        default:
            enterClosing()
            return .refuse(error, head: head, cors: cors, then: .close, match: match)
        }
    }

    private mutating func closeAfterAnswer() -> Action {
        enterClosing()
        return .closeOutput
    }

    /// Ends the stream; `keepingAlive` (what it follows ended, its client and the server go on)
    /// the connection then serves the next request, otherwise it closes.
    private mutating func endStream(keepingAlive: Bool = false) -> Action {
        guard case .streaming(let stream, _, _) = state else { return .none }
        guard keepingAlive, case .serving = lifecycle else {
            enterClosing()
            return .endStream(stream, then: .close)
        }
        state = idleAfterAnswer
        epoch += 1
        return .endStream(stream, then: .keepAlive)
    }

    private mutating func enterClosing() {
        state = .closing(.draining(inputClosed: false))
        backlog.removeAll()
        epoch += 1
    }
}

extension ConnectionStateMachine {
    /// Whether NIO's decoder stops parsing after this request's end, taking what follows for
    /// another protocol's bytes: it does so, as llhttp decides, after a `CONNECT` and after a
    /// request with an `Upgrade` that is not blank and a `Connection` (or `Proxy-Connection`,
    /// which llhttp reads as one) that lists `upgrade`. The server upgrades to nothing, so such
    /// a request is answered as if it had no `Upgrade`, and the connection needs a fresh
    /// decoder for what comes next.
    ///
    /// Where llhttp's reading of a `Connection` is in doubt, this says no: a decoder wrongly
    /// taken for stopped would be replaced while it still parses the read, whose next request
    /// would then reach the fresh decoder as parts, not bytes. A stopped decoder taken for
    /// running only leaves the connection to its idle deadline. `DecoderStopTests` holds this
    /// to the decoder.
    package static func decoderStops(after head: HTTPRequestHead) -> Bool {
        if head.method == .CONNECT { return true }
        // Every request comes through here: most have no `Upgrade`, found by comparing the
        // names of its length only, with no allocation.
        let upgrades = head.headers.contains { name, value in
            name.utf8.count == 7 && RequestPolicy.equalIgnoringCase(name, "upgrade")
                && value.utf8.contains { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
        }
        guard upgrades else { return false }
        return ConnectionOptions(head.headers).upgrade
    }
}

/// A request target in absolute form (`http://name:port/path?query`), split into the
/// authority the request is for and the origin form that is routed.
package struct RequestTarget: Equatable {
    package var authority: String
    package var origin: String
}

extension RequestTarget {
    /// `nil` for the origin form (`/path`), the asterisk form and anything else that is not
    /// an `http` or `https` URI.
    package init?(_ uri: String) {
        let bytes = uri.utf8
        guard let first = bytes.first, first != UInt8(ascii: "/"), first != UInt8(ascii: "*") else { return nil }
        let rest: Substring
        if uri.count >= 7, RequestPolicy.equalIgnoringCase(String(uri.prefix(7)), "http://") {
            rest = uri.dropFirst(7)
        } else if uri.count >= 8, RequestPolicy.equalIgnoringCase(String(uri.prefix(8)), "https://") {
            rest = uri.dropFirst(8)
        } else {
            return nil
        }
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        authority = String(rest[..<end])
        let tail = rest[end...]
        origin = tail.first == "/" ? String(tail) : "/" + tail
    }
}

/// Actions compare as values wherever the stream does: the machine's tests say what they
/// expect as one `==`.
extension ConnectionStateMachine.Action: Equatable where Stream: Equatable {}

/// A request with its head checked and its route chosen.
package struct ConnectionRequest: Equatable, Sendable {
    package var head: HTTPRequestHead
    /// Its route, as admission found it: who answers, and which route of the table it is.
    package var match: RouteMatch
    package var body: ByteBuffer?
    /// The client lets the connection serve another request after this one's answer.
    package var keepAlive: Bool
    /// The `--cors-origin` the request comes from, as admission found it.
    package var cors: String?

    /// Who answers.
    package var route: HTTPRoute { match.route }

    package init(head: HTTPRequestHead, match: RouteMatch, body: ByteBuffer?, keepAlive: Bool, cors: String?) {
        self.head = head
        self.match = match
        self.body = body
        self.keepAlive = keepAlive
        self.cors = cors
    }
}
