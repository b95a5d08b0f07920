import HTTPTypes
import NIOCore
import NIOHTTP1

/// The end of every HTTP/1.1 connection: it feeds what happens to a
/// ``ConnectionStateMachine`` and performs the actions it answers, asking the
/// ``HTTPApplication`` what to say. What it keeps besides the machine are handles on I/O: the
/// deadline timer and the router's task. It reads no header to decide anything: what
/// admission found (route, CORS origin) comes in the actions.
///
/// Requests routed to be answered at once are answered here, on the event loop, without a
/// task, and an open stream writes its batches through a ``StreamWriter`` whenever the
/// machine says the socket takes them. Any other request is answered by the application's
/// router on a task, which writes back through ``RoutedResponseWriter``.
///
/// The handler is not generic over its application: NIO calls a handler through its
/// protocol, so a generic one would run unspecialised, looking up its application's types
/// at every sample. The application is an existential and the stream an object
/// (``HTTPStream``), and this file is compiled once, for every application.
/// Every answer is written as bytes straight to the socket: the pipeline is the
/// ``PlainRequestReader``, which hands this handler the plainest requests (a sample's `POST`)
/// itself, the decoder's three parts at once (``plainRequestRead(_:body:)``), then NIO's
/// request decoder once a request is not plain, and this handler, nothing else.
///
/// NIO's decoder stops for good after a request that asks to upgrade (`Upgrade` with
/// `Connection: upgrade`), leaving what follows to another protocol. The server upgrades to
/// nothing: it answers such a request as if it had no `Upgrade`, and puts a fresh decoder in
/// the stopped one's place, which hands it the bytes it held. A client that asks for `h2c`
/// (`curl --http2`) so goes on in HTTP/1.1 on the same connection.
package final class ConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPServerRequestPart
    package typealias OutboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer
    package typealias Machine = ConnectionStateMachine<any HTTPStream>

    private var machine: Machine
    private let application: any HTTPApplication
    private let configuration: HTTPConfiguration
    /// Whether answers say `Vary: Origin` (``RequestPolicy/variesByOrigin``).
    private let variesByOrigin: Bool
    private var context: ChannelHandlerContext?
    /// The deadline the machine asked for and when it is due. One timer serves them all: it
    /// is moved only when a deadline becomes earlier, so a sample costs a clock read, not a
    /// timer.
    private var deadline: (value: Machine.Deadline, due: NIODeadline)?
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?
    /// The router's task while it answers, cancelled if the connection closes first.
    private var routing: Task<Void, Never>?
    /// The stream opened on this connection, until it is released (``HTTPStream/released()``):
    /// when its response ends, or when the connection closes, whichever comes first.
    private var opened: (any HTTPStream)?
    /// The decoder in front of this handler, once it has been replaced; until then, the one
    /// the pipeline holds.
    private var decoder: ByteToMessageHandler<HTTPRequestDecoder>?
    /// The head that arrived last stops the decoder at its end (``ConnectionStateMachine/decoderStops(after:)``).
    private var decoderStopsAtEnd = false
    /// Whether the bytes read so far end inside a request, as the reader in front of the
    /// decoder follows them (``RequestBoundaries``); set before each read completes.
    var requestStarted = false

    package init(application: any HTTPApplication) {
        self.application = application
        configuration = application.http
        variesByOrigin = application.policy.variesByOrigin
        machine = Machine(limits: configuration.limits, policy: application.policy, routing: application.routing)
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { armDeadline(context: context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        armDeadline(context: context)
        context.fireChannelActive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        letGo()
        self.context = nil
    }

    // MARK: - Inputs

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let action: Machine.Action
        switch unwrapInboundIn(data) {
        case .head(let head):
            decoderStopsAtEnd = Machine.decoderStops(after: head)
            action = machine.headReceived(head)
        case .body(let buffer):
            action = machine.bodyReceived(buffer)
        case .end:
            if decoderStopsAtEnd {
                decoderStopsAtEnd = false
                replaceDecoder(context: context)
            }
            action = machine.endReceived()
        }
        // The deadline is looked at once the read is complete: a request that arrives and
        // is answered within one read never moves the timer.
        perform(action, context: context)
    }

    /// A request the ``PlainRequestReader`` in front of the decoder read whole: the three
    /// parts the decoder would have given, at once. A plain request never stops the decoder
    /// (it has no `Upgrade` and is no `CONNECT`).
    func plainRequestRead(_ head: HTTPRequestHead, body: ByteBuffer?) {
        guard let context else { return }
        perform(machine.headReceived(head), context: context)
        if let body { perform(machine.bodyReceived(body), context: context) }
        perform(machine.endReceived(), context: context)
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        perform(machine.readCompleted(requestStarted: requestStarted), context: context)
        armDeadline(context: context)
        context.fireChannelReadComplete()
    }

    package func read(context: ChannelHandlerContext) {
        if case .read = machine.readRequested() { context.read() }
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case let error as HTTPParserError:
            run(machine.malformedReceived(error), context: context)
        case is ByteToMessageDecoderError:
            // Bytes after a request the parser refused: the connection is closing anyway.
            break
        default:
            // The socket failed (reset, broken pipe): nothing more can be written.
            machine.channelClosed()
            context.close(promise: nil)
        }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if (event as? ChannelEvent) == .inputClosed {
            run(machine.inputClosed(), context: context)
        } else if event is ChannelShouldQuiesceEvent {
            run(machine.quiesce(), context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        run(machine.writabilityChanged(writable: context.channel.isWritable), context: context)
        context.fireChannelWritabilityChanged()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        letGo()
        context.fireChannelInactive()
    }

    /// A fresh decoder goes in front of this handler; the stopped one leaves the pipeline on
    /// the next tick, passing on what it held and what arrives meanwhile, in order.
    private func replaceDecoder(context: ChannelHandlerContext) {
        let pipeline = context.pipeline.syncOperations
        guard let stopped = decoder ?? (try? pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)) else { return }
        let fresh = HTTPServer.makeDecoder(maxHeadBytes: configuration.maxHeadBytes)
        do {
            try pipeline.addHandler(fresh, position: .before(self))
        } catch {
            // The pipeline is being torn down: nothing more will be read.
            return
        }
        decoder = fresh
        pipeline.removeHandler(stopped, promise: nil)
    }

    private func letGo() {
        machine.channelClosed()
        releaseStream()
        routing?.cancel()
        routing = nil
        timer?.task.cancel()
        timer = nil
        deadline = nil
    }

    // MARK: - Actions

    /// Performs an action, then looks at the deadline the machine now wants.
    private func run(_ action: Machine.Action, context: ChannelHandlerContext) {
        perform(action, context: context)
        armDeadline(context: context)
    }

    private func perform(_ action: Machine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .read:
            context.read()
        case .sendContinue:
            context.writeAndFlush(wrapOutboundOut(ResponseHead.continueResponse), promise: nil)
        case .answer(let request, let then):
            answerAtOnce(request, then: then, context: context)
        case .route(let request):
            route(request, context: context)
        case .openStream(let request):
            openStream(request, context: context)
        case .refuse(let error, let head, let cors, let then, let match):
            write(application.refusal(error, head: head, match: match), to: head, cors: cors, closes: then == .close, context: context)
            if then == .close { closeOutput(context: context) }
        case .writeEvents:
            machine.stream?.socketDrained()
        case .endStream(let stream, let then):
            var end = stream.finish() ?? ByteBuffer()
            releaseStream()
            end.writeImmutableBuffer(ResponseHead.lastChunk)
            context.writeAndFlush(wrapOutboundOut(end), promise: nil)
            if then == .close { closeOutput(context: context) }
        case .closeOutput:
            closeOutput(context: context)
        case .closeNow:
            context.close(promise: nil)
        }
    }

    private func answerAtOnce(_ request: Machine.Request, then: Machine.Then, context: ChannelHandlerContext) {
        let connection = ResponseHead.Connection(closes: then == .close, request: request.head)
        if case .preflight(let allow) = request.route, let cors = request.cors {
            application.preflightAnswered(request)
            context.writeAndFlush(
                wrapOutboundOut(
                    ResponseHead.preflightAnswer(origin: cors, allow: allow, connection: connection, allocator: context.channel.allocator)),
                promise: nil)
            if then == .close { closeOutput(context: context) }
            return
        }
        guard case .answer(let parameter) = request.route else { return }
        context.writeAndFlush(
            wrapOutboundOut(application.answer(request, parameter: parameter, connection: connection, allocator: context.channel.allocator)),
            promise: nil)
        if then == .close { closeOutput(context: context) }
    }

    /// Writes a complete answer; whether the connection then closes is the caller's to do.
    private func write(_ payload: HTTPAnswer, to request: HTTPRequestHead?, cors: String?, closes: Bool, context: ChannelHandlerContext) {
        let bytes = ResponseHead.answer(
            payload, connection: .init(closes: closes, request: request), cors: cors, variesByOrigin: variesByOrigin,
            headOnly: request?.method == .HEAD, allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
    }

    /// Closes the output once everything written before has gone; the machine then lingers
    /// until the client closes too, or the linger deadline passes. The close waits for an
    /// empty write to be flushed first: NIO turns closing the output of a connection whose
    /// client has closed its side into a full close, which would drop what is still queued.
    private func closeOutput(context: ChannelHandlerContext) {
        let closed = context.eventLoop.makePromise(of: Void.self)
        let drained = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)))
        drained.assumeIsolated().whenComplete { _ in context.close(mode: .output, promise: closed) }
        closed.futureResult.assumeIsolated().whenComplete { [self] result in
            if case .failure = result {
                // The output could not close on its own (already closed, or unsupported): all of it.
                context.close(promise: nil)
            } else {
                run(machine.outputClosed(), context: context)
            }
        }
    }

    private func armDeadline(context: ChannelHandlerContext) {
        guard let wanted = machine.deadline else {
            deadline = nil
            return
        }
        if wanted == deadline?.value { return }
        let due = context.eventLoop.now + timeout(wanted.kind)
        deadline = (wanted, due)
        if let timer, timer.at <= due { return }
        schedule(at: due, context: context)
    }

    private func schedule(at due: NIODeadline, context: ChannelHandlerContext) {
        timer?.task.cancel()
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: due) { [self] in
            timer = nil
            guard let deadline else { return }
            guard deadline.due <= context.eventLoop.now else { return schedule(at: deadline.due, context: context) }
            self.deadline = nil
            run(machine.deadlinePassed(deadline.value), context: context)
        }
        timer = (task, due)
    }

    private func timeout(_ kind: Machine.Deadline.Kind) -> TimeAmount {
        let duration: Duration =
            switch kind {
            case .idle: configuration.idleTimeout
            case .request: configuration.requestHeadTimeout
            case .send: configuration.sendTimeout
            case .linger: configuration.lingerTimeout
            case .shutdown: configuration.shutdownDrainTimeout
            }
        return .nanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    // MARK: - Routed requests

    private func route(_ request: Machine.Request, context: ChannelHandlerContext) {
        let writer = RoutedResponseWriter(
            handler: NIOLoopBound(self, eventLoop: context.eventLoop), eventLoop: context.eventLoop, request: request.head, cors: request.cors)
        let channel = context.channel
        let body = request.body ?? context.channel.allocator.buffer(capacity: 0)
        routing = Task { [application] in
            await application.respond(to: request, body: body, channel: channel, writer: writer)
        }
    }

    /// On this event loop: bytes of the router's answer, in order; the head is written here,
    /// where it is known whether the connection closes after it.
    fileprivate func writeRouted(head: HTTPResponse?, for request: HTTPRequestHead, cors: String?, bytes: ByteBuffer) -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        var buffer = bytes
        if let head {
            buffer = context.channel.allocator.buffer(capacity: 256 + bytes.readableBytes)
            let connection = ResponseHead.Connection(closes: machine.closesAfterAnswer, request: request)
            ResponseHead.write(
                status: head.status, fields: head.headerFields, connection: connection, cors: cors,
                variesByOrigin: variesByOrigin, into: &buffer)
            buffer.writeImmutableBuffer(bytes)
        }
        let written = context.writeAndFlush(wrapOutboundOut(buffer))
        written.assumeIsolated().whenSuccess { [self] in run(machine.routedWriteCompleted(), context: context) }
        return written
    }

    /// On this event loop: the router's answer is written, or failed half-way.
    fileprivate func routedResponseEnded(completely: Bool) {
        routing = nil
        guard let context else { return }
        perform(machine.routedResponseEnded(completely: completely), context: context)
        // What a pipelining client sent meanwhile, in order, until it waits for an answer.
        while let next = machine.nextPending() { perform(next, context: context) }
        run(machine.readIfOwed(), context: context)
    }

    // MARK: - The event stream

    private func openStream(_ request: Machine.Request, context: ChannelHandlerContext) {
        guard case .stream(let parameter) = request.route else { return }
        let writer = StreamWriter(handler: NIOLoopBound(self, eventLoop: context.eventLoop))
        switch application.openStream(request, parameter: parameter, writer: writer, channel: context.channel) {
        case .opened(let stream, let bytes):
            opened = stream
            try? context.channel.syncOptions?.setOption(
                ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(configuration.streamSendBufferBytes))
            context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
            perform(machine.streamOpened(stream), context: context)
        case .overloaded(let answer):
            write(answer, to: request.head, cors: request.cors, closes: true, context: context)
            perform(machine.streamRefused(then: .close), context: context)
        case .refused(let answer), .headOnly(let answer):
            write(answer, to: request.head, cors: request.cors, closes: machine.closesAfterAnswer, context: context)
            perform(machine.streamRefused(then: .keepAlive), context: context)
        }
    }

    /// The application forgets the stream: its response ended, or the connection is gone.
    private func releaseStream() {
        guard let stream = opened else { return }
        opened = nil
        stream.released()
    }

    /// On this event loop, from the stream's ``StreamWriter``: whether the socket takes a
    /// batch now; if not, the stream is told when it does, and the send deadline runs meanwhile.
    /// Only the open stream is answered: one that has ended is told no.
    func streamMayWrite(_ stream: any HTTPStream) -> Bool {
        guard let context, machine.stream === stream else { return false }
        let action = machine.streamWoken(ended: false)
        if case .writeEvents = action { return true }
        run(action, context: context)
        return false
    }

    /// On this event loop: one batch of the open stream, in one write. The machine must have
    /// said the socket takes it (``streamMayWrite(_:)``): bytes at any other time would land
    /// in a full socket with no deadline running, or in the next response.
    func writeStream(_ parts: [ByteBuffer], of stream: any HTTPStream) {
        guard let context, machine.stream === stream, machine.streamTakesBytes else {
            assertionFailure("a stream wrote without being told it may")
            return
        }
        if parts.count == 1 { return context.writeAndFlush(wrapOutboundOut(parts[0]), promise: nil) }
        for part in parts { context.write(wrapOutboundOut(part), promise: nil) }
        context.flush()
    }

    /// On this event loop: what the open stream follows ended (or it could not make its bytes).
    func streamEnded(_ stream: any HTTPStream, failed: Bool) {
        guard let context, machine.stream === stream else { return }
        run(failed ? machine.streamFailed() : machine.streamWoken(ended: true), context: context)
    }
}

/// How the router's answer, produced on a task, reaches the connection: each write hops to
/// the event loop and waits until written, so a large body cannot outrun a slow client. The
/// head waits for the first body buffer, so a small answer is one write. A body of unknown
/// length is sent chunked.
package struct RoutedResponseWriter: Sendable {
    let handler: NIOLoopBound<ConnectionHandler>
    let eventLoop: any EventLoop
    let request: HTTPRequestHead
    /// The request's `--cors-origin`, as admission found it.
    let cors: String?
    private var head: HTTPResponse?
    private var pending = ByteBuffer()
    private var framing = Framing.length

    private enum Framing {
        /// The head says the length; bytes go as they are.
        case length
        /// Each buffer is a chunk.
        case chunked
        /// HTTP/1.0 knows no chunks: the body is collected and its length said at the end.
        case collected
    }

    init(handler: NIOLoopBound<ConnectionHandler>, eventLoop: any EventLoop, request: HTTPRequestHead, cors: String?) {
        self.handler = handler
        self.eventLoop = eventLoop
        self.request = request
        self.cors = cors
    }

    private var headOnly: Bool { request.method == .HEAD }

    /// Sends the answer: `head`, then the body `write` writes through the writer it is
    /// given (`length`: the body's, when known before it is written).
    package func send(_ head: HTTPResponse, length: Int?, body write: (Self) async throws -> Void) async {
        var writer = self
        var head = head
        let bodiless = headOnly || head.status.code == 204 || head.status.code == 304 || head.status.kind == .informational
        if head.status.code == 304 || head.status.code == 204 {
            // No body, and no length of one: a 304 may only repeat the 200's (RFC 9110 §8.6).
            head.headerFields[.contentLength] = nil
        }
        if head.headerFields[.contentLength] == nil, !bodiless {
            if let length {
                head.headerFields[.contentLength] = String(length)
            } else if request.version.minor == 0 {
                writer.framing = .collected
            } else {
                head.headerFields[.transferEncoding] = "chunked"
                writer.framing = .chunked
            }
        }
        writer.head = head
        let completely: Bool
        do {
            try await write(writer)
            completely = true
        } catch {
            completely = false
        }
        let handler = self.handler
        eventLoop.execute { handler.value.routedResponseEnded(completely: completely) }
    }

    package mutating func write(_ buffer: ByteBuffer) async throws {
        guard !headOnly, buffer.readableBytes > 0 else { return }
        pending.writeImmutableBuffer(framing == .chunked ? HTTPChunk.frame([buffer]) : buffer)
        // The head waits for the first body buffer: a small answer goes out in one write.
        if framing == .collected || (head != nil && pending.readableBytes < 1024) { return }
        try await flush()
    }

    package consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        switch framing {
        case .chunked: pending.writeImmutableBuffer(ResponseHead.lastChunk)
        case .collected:
            let length = pending.readableBytes
            head?.headerFields[.contentLength] = String(length)
        case .length: break
        }
        try await flush()
    }

    private mutating func flush() async throws {
        let (head, bytes, request, cors) = (self.head, pending, self.request, self.cors)
        self.head = nil
        pending = ByteBuffer()
        let handler = self.handler
        try await eventLoop.flatSubmit {
            handler.value.writeRouted(head: head, for: request, cors: cors, bytes: bytes)
                ?? handler.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }.get()
    }
}
