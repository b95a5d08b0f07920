import NIOCore
import NIOHTTP1

/// Everything one HTTP/1.1 connection knows, as one state with inputs named after what
/// happened and actions its handler performs. It does no I/O and reads no clock: deadlines
/// arrive as inputs (`deadlinePassed`), so every transition is a plain-value test.
///
/// The design follows from three promises.
///
/// - **Answers in request order, and backpressure instead of a queue.** One request is
///   answered at a time. While the router answers one, reads are withheld, so a pipelining
///   client cannot make the server buffer without bound: what the last read had already
///   brought waits in `backlog` (at most one read's worth) and is taken up, in order, once
///   the answer is written. A request the parser refuses is answered after the answers of the
///   requests before it, then the connection closes.
/// - **Every connection ends.** An idle keep-alive connection has a deadline, and so has a
///   request from its first byte to its last: a stalled head is closed, a stalled body is
///   answered `408` and closed. A connection is closed in stages, as RFC 9112 §9.6 asks: its output first, after
///   the last answer; then what the client still sends is read and dropped until it closes its
///   side or a short linger deadline passes, so the client reads the answer instead of a reset.
/// - **Stopping loses nothing that was asked.** When the server quiesces, the request being
///   read or answered is answered with `Connection: close`; an event stream ends cleanly; an
///   idle connection closes its output at once.
///
/// `Stream` is what an open event stream keeps (its place in the session's log); the machine
/// only holds it.
struct ConnectionStateMachine<Stream> {
    struct Limits: Sendable {
        var maxBodyBytes: Int
        var maxHeadBytes: Int
    }

    /// A request with its head checked and its route chosen.
    struct Request {
        var head: HTTPRequestHead
        var route: RouteTable.Route
        var body: ByteBuffer?
        /// Whether the connection serves another request after this one's answer.
        var keepAlive: Bool
    }

    /// What the connection does after an answer.
    enum Then: Equatable {
        case keepAlive
        case close
    }

    enum Action {
        case none
        /// Ask the socket for more bytes.
        case read
        /// `100 Continue`: the client waits for it before sending the body.
        case sendContinue
        /// Answer `samples` now, on this event loop.
        case answer(Request, then: Then)
        /// Hand the request to the router; ``routedResponseEnded(completely:)`` follows.
        case route(Request)
        /// Open the event stream: ``streamOpened(_:)``, or ``streamRefused(_:then:)`` with an
        /// answer already written, follows.
        case openStream(Request)
        /// Write the JSON error; `head` is the refused request's, when it got that far.
        case refuse(APIError, head: HTTPRequestHead?, then: Then)
        /// Write what the stream has to send.
        case writeEvents
        /// End the stream's response cleanly (gzip trailer, last chunk), then close; the
        /// stream is the handler's to finish and let go of.
        case endStream(Stream)
        /// Close the output once what was written has gone; keep reading to drop what comes.
        case close
        /// Close at once.
        case closeNow
    }

    /// Which deadline runs, and for which request: a new value means a new timer.
    struct Deadline: Equatable {
        enum Kind: Equatable {
            /// No request for a while on a kept-alive connection.
            case idle
            /// A request has started arriving and must be complete by then.
            case request
            /// The output is closed; the client has this long to close its side.
            case linger
        }

        var kind: Kind
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

    private enum State {
        /// Between requests.
        case idle(Idle)
        /// A head arrived; its body is being collected.
        case receiving(Request)
        /// The request was refused before its end: the rest of its body is read and dropped.
        case discarding(keepAlive: Bool)
        /// The router is answering; reads are withheld until it has.
        case answering(keepAlive: Bool)
        /// An event stream owns the output. `waitsForWritability`: the socket was full, and
        /// the stream writes again once it drains (its events wait in the session's log).
        case streaming(Stream, waitsForWritability: Bool)
        /// A stream was asked for and is being opened.
        case openingStream(keepAlive: Bool)
        /// The output is closed or closing: input is read and dropped.
        case closing
        case closed
    }

    private var state = State.idle(.waiting)
    /// Parts that arrived while the router answered, in order; only a pipelining client
    /// fills it, and only with what one read brought.
    private var backlog = CircularBuffer<Part>()
    /// Bumped whenever a deadline starts afresh.
    private var epoch = 0
    let limits: Limits

    init(limits: Limits) {
        self.limits = limits
    }

    // MARK: - What the handler asks

    /// The deadline that should be running now, if any.
    var deadline: Deadline? {
        switch state {
        case .idle(.waiting), .idle(.answeredInThisRead): Deadline(kind: .idle, epoch: epoch)
        case .idle(.headStarted), .receiving, .discarding: Deadline(kind: .request, epoch: epoch)
        case .closing: Deadline(kind: .linger, epoch: epoch)
        case .answering, .streaming, .openingStream, .closed: nil
        }
    }

    /// Whether the answer being written is the connection's last (it says `Connection: close`).
    var closesAfterAnswer: Bool {
        switch state {
        case .answering(let keepAlive), .openingStream(let keepAlive): !keepAlive
        case .receiving(let request): !request.keepAlive
        case .idle, .discarding, .streaming: false
        case .closing, .closed: true
        }
    }

    var isStreaming: Bool {
        if case .streaming = state { return true }
        return false
    }

    /// Runs `body` on the open stream's state; `nil` when no stream is open.
    mutating func withStream<Result>(_ body: (inout Stream) throws -> Result) rethrows -> Result? {
        guard case .streaming(var stream, let waits) = state else { return nil }
        state = .closed  // the stream has one owner while it changes
        defer { state = .streaming(stream, waitsForWritability: waits) }
        return try body(&stream)
    }

    // MARK: - Inputs from the decoder

    mutating func headReceived(_ head: HTTPRequestHead) -> Action {
        receive(.head(head))
    }

    mutating func bodyReceived(_ buffer: ByteBuffer) -> Action {
        receive(.body(buffer))
    }

    mutating func endReceived() -> Action {
        receive(.end)
    }

    /// The parser refused the bytes: the request cannot be framed, so the connection closes.
    mutating func malformedReceived(_ error: HTTPParserError) -> Action {
        receive(.malformed(error))
    }

    /// The client closed its side of the connection.
    mutating func inputClosed() -> Action {
        receive(.inputClosed)
    }

    /// A read from the socket ended (whether or not it completed a request).
    mutating func readCompleted() -> Action {
        switch state {
        case .idle(.waiting) where backlog.isEmpty:
            // Bytes came and no request was completed: a head has started.
            state = .idle(.headStarted)
            epoch += 1
        case .idle(.answeredInThisRead):
            state = .idle(.waiting)
        default:
            break
        }
        return .none
    }

    /// The channel wants to read: allowed unless an answer is pending.
    mutating func readRequested() -> Action {
        switch state {
        case .answering, .closed: .none
        default: backlog.isEmpty ? .read : .none
        }
    }

    // MARK: - Inputs from the answering side

    /// The router's answer is written (`completely`), or failed half-way, its framing lost.
    mutating func routedResponseEnded(completely: Bool) -> Action {
        guard case .answering(let keepAlive) = state else { return .none }
        guard completely else {
            state = .closed
            return .closeNow
        }
        guard keepAlive else { return closeAfterAnswer() }
        state = .idle(.waiting)
        epoch += 1
        return .none
    }

    /// The next part that waited while an answer was pending, taken up; `nil` once none
    /// waits, or the connection is busy again (then the rest waits for the next answer).
    mutating func nextPending() -> Action? {
        switch state {
        case .answering, .openingStream, .streaming, .closing, .closed: return nil
        case .idle, .receiving, .discarding: break
        }
        guard let part = backlog.popFirst() else { return nil }
        return process(part)
    }

    mutating func streamOpened(_ stream: Stream) -> Action {
        guard case .openingStream(let keepAlive) = state else { return .none }
        state = .streaming(stream, waitsForWritability: false)
        // A server that started stopping while the stream opened ends it at once.
        return keepAlive ? .none : endStream()
    }

    /// The stream was refused with an answer already written (404, or the overload answer
    /// that ends by itself).
    mutating func streamRefused(then: Then) -> Action {
        guard case .openingStream(let keepAlive) = state else { return .none }
        guard keepAlive, then == .keepAlive else { return closeAfterAnswer() }
        state = .idle(.answeredInThisRead)
        epoch += 1
        return .none
    }

    /// The session has events to send (or ended). `writable`: the socket takes more now.
    mutating func streamWoken(sessionEnded: Bool, writable: Bool) -> Action {
        guard case .streaming(let stream, _) = state else { return .none }
        if sessionEnded { return endStream() }
        guard writable else {
            state = .streaming(stream, waitsForWritability: true)
            return .none
        }
        state = .streaming(stream, waitsForWritability: false)
        return .writeEvents
    }

    mutating func writabilityChanged(writable: Bool) -> Action {
        guard writable, case .streaming(let stream, waitsForWritability: true) = state else { return .none }
        state = .streaming(stream, waitsForWritability: false)
        return .writeEvents
    }

    /// Writing the stream failed: it cannot go on.
    mutating func streamFailed() -> Action {
        guard case .streaming = state else { return .none }
        state = .closed
        return .closeNow
    }

    // MARK: - Inputs from the server and the clock

    /// The server is stopping: answer what was read, with `Connection: close`, then close.
    mutating func quiesce() -> Action {
        backlog.removeAll()
        switch state {
        case .idle:
            return closeAfterAnswer()
        case .receiving(var request):
            request.keepAlive = false
            state = .receiving(request)
        case .discarding:
            state = .discarding(keepAlive: false)
        case .answering:
            state = .answering(keepAlive: false)
        case .openingStream:
            state = .openingStream(keepAlive: false)
        case .streaming:
            return endStream()
        case .closing, .closed:
            break
        }
        return .none
    }

    mutating func deadlinePassed(_ passed: Deadline) -> Action {
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
            return refuse(.requestTimeout, head: request.head, then: .close)
        case .closing:
            state = .closed
            return .closeNow
        case .answering, .streaming, .openingStream, .closed:
            return .none
        }
    }

    /// The channel closed, whatever the reason.
    mutating func channelClosed() {
        state = .closed
        backlog.removeAll()
    }

    // MARK: - Requests

    private mutating func receive(_ part: Part) -> Action {
        switch state {
        case .answering:
            backlog.append(part)
            return .none
        case .openingStream:
            // Opening a stream is synchronous: nothing can arrive meanwhile but by a bug.
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
        case (.closing, .inputClosed):
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
            let head: HTTPRequestHead? = if case .receiving(let request) = state { request.head } else { nil }
            return refuse(.malformed(error), head: head, then: .close)

        case (.idle, .head(let head)):
            epoch += 1
            return headReceived(checking: head)
        case (.idle, .inputClosed):
            state = .closed
            return .closeNow
        case (.idle, .body), (.idle, .end):
            // The decoder never sends these outside a request.
            return .none

        case (.receiving(var request), .body(var chunk)):
            var body = request.body ?? ByteBuffer()
            request.body = nil
            state = .receiving(request)  // `body` is then the buffer's only owner while it grows
            guard body.readableBytes + chunk.readableBytes <= limits.maxBodyBytes else {
                return refuse(.bodyTooLarge(limit: limits.maxBodyBytes), head: request.head, then: request.keepAlive ? .keepAlive : .close)
            }
            body.writeBuffer(&chunk)
            request.body = body
            state = .receiving(request)
            return .none
        case (.receiving(let request), .end):
            return requestComplete(request)
        case (.receiving, .inputClosed):
            // The decoder reports a request cut short as malformed first; this is its end.
            state = .closed
            return .closeNow
        case (.receiving, .head):
            return .none

        case (.discarding(let keepAlive), .end):
            guard keepAlive else { return closeAfterAnswer() }
            state = .idle(.answeredInThisRead)
            epoch += 1
            return .none
        case (.discarding, .inputClosed):
            state = .closed
            return .closeNow
        case (.discarding, _):
            return .none

        case (.answering, _), (.openingStream, _):
            // `receive` keeps these in the backlog.
            return .none
        }
    }

    private mutating func headReceived(checking head: HTTPRequestHead) -> Action {
        let keepAlive = head.isKeepAlive
        let then: Then = keepAlive ? .keepAlive : .close
        if let refusal = Self.check(head, limits: limits) {
            // A head whose framing cannot be trusted closes the connection after the answer.
            return refuse(refusal.error, head: head, then: refusal.framingIntact ? then : .close)
        }
        let route = RouteTable.route(head.method, uri: head.uri)
        if case .methodNotAllowed(let allow) = route {
            return refuse(.methodNotAllowed(head.method.rawValue, allow: allow), head: head, then: then)
        }
        let expectsContinue = head.version.minor >= 1 && head.headers.first(name: "expect") != nil
        if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > limits.maxBodyBytes {
            // A client waiting for `100 Continue` has not sent the body: closing is cheaper
            // than waiting to see whether it sends it anyway.
            return refuse(.bodyTooLarge(limit: limits.maxBodyBytes), head: head, then: expectsContinue ? .close : then)
        }
        state = .receiving(Request(head: head, route: route, body: nil, keepAlive: keepAlive))
        return expectsContinue ? .sendContinue : .none
    }

    private mutating func requestComplete(_ request: Request) -> Action {
        switch request.route {
        case .samples:
            if request.keepAlive {
                state = .idle(.answeredInThisRead)
                epoch += 1
            } else {
                state = .closing
                epoch += 1
            }
            return .answer(request, then: request.keepAlive ? .keepAlive : .close)
        case .events:
            state = .openingStream(keepAlive: request.keepAlive)
            return .openStream(request)
        case .router, .methodNotAllowed:
            state = .answering(keepAlive: request.keepAlive)
            return .route(request)
        }
    }

    /// Refuses the request: after the answer the connection either discards the rest of the
    /// request and serves the next, or closes.
    private mutating func refuse(_ error: APIError, head: HTTPRequestHead?, then: Then) -> Action {
        let after: Then
        switch (then, state) {
        case (.keepAlive, .receiving), (.keepAlive, .idle):
            state = .discarding(keepAlive: true)
            after = .keepAlive
        case (.keepAlive, _), (.close, _):
            state = .closing
            backlog.removeAll()
            after = .close
        }
        epoch += 1
        return .refuse(error, head: head, then: after)
    }

    private mutating func closeAfterAnswer() -> Action {
        state = .closing
        backlog.removeAll()
        epoch += 1
        return .close
    }

    private mutating func endStream() -> Action {
        guard case .streaming(let stream, _) = state else { return .none }
        state = .closing
        backlog.removeAll()
        epoch += 1
        return .endStream(stream)
    }

    // MARK: - Head checks (RFC 9112)

    private struct Refusal {
        var error: APIError
        /// Whether the body can still be told from the next request.
        var framingIntact: Bool
    }

    /// One pass over the header fields: a samples POST comes through here at every frame.
    private static func check(_ head: HTTPRequestHead, limits: Limits) -> Refusal? {
        var size = head.uri.utf8.count + 16
        var hosts = 0
        var lengths = 0
        var codings: [String] = []
        var expectation: String?
        for (name, value) in head.headers {
            size += name.utf8.count + value.utf8.count + 4
            switch name.utf8.count {
            case 4 where name.lowercased() == "host": hosts += 1
            case 6 where name.lowercased() == "expect": expectation = value
            case 14 where name.lowercased() == "content-length": lengths += 1
            case 17 where name.lowercased() == "transfer-encoding": codings.append(value)
            default: break
            }
        }
        if size > limits.maxHeadBytes {
            return Refusal(error: .headTooLarge(limit: limits.maxHeadBytes), framingIntact: false)
        }
        let http11 = head.version.minor >= 1
        if hosts > 1 || (hosts == 0 && http11) {
            return Refusal(error: .badHost(count: hosts), framingIntact: true)
        }
        if !codings.isEmpty {
            guard lengths == 0 else { return Refusal(error: .conflictingFraming, framingIntact: false) }
            let list = codings.flatMap { $0.split(separator: ",") }.map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() }
            guard list == ["chunked"] else {
                return Refusal(error: .unsupportedTransferCoding(codings.joined(separator: ", ")), framingIntact: false)
            }
        }
        if http11, let expectation, expectation.lowercased() != "100-continue" {
            return Refusal(error: .unsupportedExpectation(expectation), framingIntact: true)
        }
        return nil
    }
}
