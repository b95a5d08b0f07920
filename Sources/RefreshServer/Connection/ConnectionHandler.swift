import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

/// The application end of every HTTP/1.1 connection: it feeds what happens to a
/// ``ConnectionStateMachine`` and performs the actions it answers. What it keeps besides the
/// machine are handles on I/O: the deadline timer and the router's task. It reads no header
/// to decide anything: what admission found (route, CORS origin) comes in the actions.
///
/// The two requests on the gesture's path are answered here, on the event loop: a sample
/// goes from the socket through the engine to the streams' event loops without a task, and
/// an open event stream is this handler writing the log's shared chunks. Any other request
/// is answered by the router on a task, which writes back through ``RoutedResponseWriter``.
/// Every answer is written as bytes straight to the socket: the pipeline is NIO's request
/// decoder and this handler, nothing else.
///
/// NIO's decoder stops for good after a request that asks to upgrade (`Upgrade` with
/// `Connection: upgrade`), leaving what follows to another protocol. The server upgrades to
/// nothing: it answers such a request as if it had no `Upgrade`, and puts a fresh decoder in
/// the stopped one's place, which hands it the bytes it held. A client that asks for `h2c`
/// (`curl --http2`) so goes on in HTTP/1.1 on the same connection.
final class ConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    typealias Machine = ConnectionStateMachine<EventStream>

    private var machine: Machine
    private let routes: HotRoutes
    private var context: ChannelHandlerContext?
    /// The deadline the machine asked for and when it is due. One timer serves them all: it
    /// is moved only when a deadline becomes earlier, so a sample costs a clock read, not a
    /// timer.
    private var deadline: (value: Machine.Deadline, due: NIODeadline)?
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?
    /// The router's task while it answers, cancelled if the connection closes first.
    private var routing: Task<Void, Never>?
    /// The decoder in front of this handler, once it has been replaced; until then, the one
    /// the pipeline was built with.
    private var decoder: ByteToMessageHandler<HTTPRequestDecoder>?
    /// The head that arrived last stops the decoder at its end (``ConnectionStateMachine/decoderStops(after:)``).
    private var decoderStopsAtEnd = false

    init(routes: HotRoutes) {
        self.routes = routes
        let configuration = routes.configuration
        machine = Machine(limits: .init(maxBodyBytes: configuration.maxBodyBytes, maxHeadBytes: configuration.maxHeadBytes), policy: routes.policy)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { armDeadline(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        armDeadline(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        letGo()
        self.context = nil
    }

    // MARK: - Inputs

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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

    func channelReadComplete(context: ChannelHandlerContext) {
        perform(machine.readCompleted(), context: context)
        armDeadline(context: context)
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if case .read = machine.readRequested() { context.read() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
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

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if (event as? ChannelEvent) == .inputClosed {
            run(machine.inputClosed(), context: context)
        } else if event is ChannelShouldQuiesceEvent {
            run(machine.quiesce(), context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        run(machine.writabilityChanged(writable: context.channel.isWritable), context: context)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        letGo()
        context.fireChannelInactive()
    }

    /// The request decoder every connection starts with. `forwardBytes`: when it is replaced,
    /// the bytes it held after a request that stopped it go to its successor.
    static func makeDecoder(maxHeadBytes: Int) -> ByteToMessageHandler<HTTPRequestDecoder> {
        // The decoder refuses a head past the limit while it still arrives.
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = maxHeadBytes
        limits.maxHeaderFieldSize = maxHeadBytes
        return ByteToMessageHandler(
            HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, informationalResponseStrategy: .drop, limitConfiguration: limits))
    }

    /// A fresh decoder goes in front of this handler; the stopped one leaves the pipeline on
    /// the next tick, passing on what it held and what arrives meanwhile, in order.
    private func replaceDecoder(context: ChannelHandlerContext) {
        let pipeline = context.pipeline.syncOperations
        guard let stopped = decoder ?? (try? pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)) else { return }
        let fresh = Self.makeDecoder(maxHeadBytes: routes.configuration.maxHeadBytes)
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
        machine.channelClosed()  // drops an open stream: its session forgets it
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
            answerSamples(request, then: then, context: context)
        case .route(let request):
            route(request, context: context)
        case .openStream(let request):
            openStream(request, context: context)
        case .refuse(let error, let head, let cors, let then):
            write(routes.refusal(error, head), to: head, cors: cors, closes: then == .close, context: context)
            if then == .close { closeOutput(context: context) }
        case .writeEvents:
            var replay = ReplayCache()
            writeEvents(.news, replay: &replay, context: context)
        case .endStream(let stream, let then):
            var end = (try? stream.finish()) ?? nil ?? ByteBuffer()
            end.writeImmutableBuffer(ResponseHead.lastChunk)
            context.writeAndFlush(wrapOutboundOut(end), promise: nil)
            if then == .close { closeOutput(context: context) }
        case .closeOutput:
            closeOutput(context: context)
        case .closeNow:
            context.close(promise: nil)
        }
    }

    private func answerSamples(_ request: Machine.Request, then: Machine.Then, context: ChannelHandlerContext) {
        let cors = request.cors
        let connection = ResponseHead.Connection(closes: then == .close, request: request.head)
        if case .preflight(let allow) = request.route, let cors {
            routes.metrics.requestAnswered(route: RouteTable.pattern(request.head.uri, status: 204), status: 204)
            context.writeAndFlush(
                wrapOutboundOut(
                    ResponseHead.preflightAnswer(origin: cors, allow: allow, connection: connection, allocator: context.channel.allocator)),
                promise: nil)
            if then == .close { closeOutput(context: context) }
            return
        }
        guard case .samples(let session) = request.route else { return }
        switch routes.samples(request.head, session: session, body: request.body) {
        case .state(let state):
            context.writeAndFlush(
                wrapOutboundOut(ResponseHead.stateAnswer(state, connection: connection, cors: cors, allocator: context.channel.allocator)),
                promise: nil)
        case .refused(let payload):
            write(payload, to: request.head, cors: cors, closes: then == .close, context: context)
        }
        if then == .close { closeOutput(context: context) }
    }

    /// Writes a complete answer; whether the connection then closes is the caller's to do.
    private func write(_ payload: JSONPayload, to request: HTTPRequestHead?, cors: String?, closes: Bool, context: ChannelHandlerContext) {
        let bytes = ResponseHead.answer(
            payload, connection: .init(closes: closes, request: request), cors: cors,
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
        let configuration = routes.configuration
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
        routing = Task { [routes, head = request.head] in
            let response = await routes.route(head, body: body, channel: channel)
            await writer.send(response)
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
                status: head.status, fields: head.headerFields, connection: connection, cors: cors, into: &buffer)
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
        guard case .events(let id) = request.route else { return }
        let listener = StreamListener(handler: self, eventLoop: context.eventLoop)
        switch routes.openStream(request.head, session: id, cors: request.cors, listener: listener, channel: context.channel) {
        case .opened(let stream, let bytes):
            try? context.channel.syncOptions?.setOption(
                ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(routes.configuration.streamSendBufferBytes))
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

    /// On this event loop, from the session's wake-up.
    fileprivate func streamWoken(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        guard let context else { return }
        let action = machine.streamWoken(sessionEnded: reason == .sessionEnded)
        if case .writeEvents = action {
            writeEvents(reason, replay: &replay, context: context)
        } else {
            run(action, context: context)
        }
    }

    /// Writes what the stream has, batch by batch while the socket takes it; what is left
    /// waits in the session's log until the socket is writable again.
    private func writeEvents(_ reason: Wakeup.Reason, replay: inout ReplayCache, context: ChannelHandlerContext) {
        var reason = reason
        while true {
            let batch: EventStream.Batch?
            do {
                batch = try machine.withStream { stream in try stream.woken(reason, replay: &replay) } ?? nil
            } catch {
                return run(machine.streamFailed(), context: context)
            }
            if let batch {
                for part in batch.parts { context.write(wrapOutboundOut(part), promise: nil) }
                context.flush()
            }
            if let arrived = replay.takeSampleArrival() { routes.metrics.sampleWritten(arrived: arrived) }
            guard batch?.more == true else { return }
            reason = .news
            // The socket may have filled with this batch: then the stream waits for it.
            guard case .writeEvents = machine.streamWoken(sessionEnded: false) else { return armDeadline(context: context) }
        }
    }
}

/// How the router's answer, produced on a task, reaches the connection: each write hops to
/// the event loop and waits until written, so a large body cannot outrun a slow client. The
/// head waits for the first body buffer, so a small answer is one write. A body of unknown
/// length is sent chunked.
private struct RoutedResponseWriter: ResponseBodyWriter, Sendable {
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

    func send(_ response: Response) async {
        var writer = self
        var head = response.head
        let bodiless = headOnly || head.status.code == 204 || head.status.code == 304 || head.status.kind == .informational
        if head.status.code == 304 || head.status.code == 204 {
            // No body, and no length of one: a 304 may only repeat the 200's (RFC 9110 §8.6).
            head.headerFields[.contentLength] = nil
        }
        if head.headerFields[.contentLength] == nil, !bodiless {
            if let length = response.body.contentLength {
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
            try await response.body.write(writer)
            completely = true
        } catch {
            completely = false
        }
        let handler = self.handler
        eventLoop.execute { handler.value.routedResponseEnded(completely: completely) }
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        guard !headOnly, buffer.readableBytes > 0 else { return }
        pending.writeImmutableBuffer(framing == .chunked ? HTTPChunk.frame([buffer]) : buffer)
        // The head waits for the first body buffer: a small answer goes out in one write.
        if framing == .collected || (head != nil && pending.readableBytes < 1024) { return }
        try await flush()
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
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

/// How a session's log reaches a stream: the handler, only ever touched on its event loop.
private final class StreamListener: EventListener {
    let eventLoop: any EventLoop
    private let handler: NIOLoopBound<ConnectionHandler>

    init(handler: ConnectionHandler, eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.handler = NIOLoopBound(handler, eventLoop: eventLoop)
    }

    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        handler.value.streamWoken(reason, replay: &replay)
    }
}
