import Hummingbird
import HTTPTypes
import NIOCore
import NIOHTTP1

/// The application end of every HTTP/1.1 connection: it feeds what happens to a
/// ``ConnectionStateMachine`` and performs the actions it answers. It decides nothing itself.
///
/// The two requests on the gesture's path are answered here, on the event loop: a sample
/// goes from the socket through the engine to the streams' event loops without a task, and
/// an open event stream is this handler writing the log's shared chunks. Any other request
/// is answered by the router on a task, which writes back through ``RoutedResponseWriter``.
/// Every answer is written as bytes straight to the socket: the pipeline is NIO's request
/// decoder and this handler, nothing else.
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

    init(routes: HotRoutes) {
        self.routes = routes
        let configuration = routes.configuration
        machine = Machine(limits: .init(maxBodyBytes: configuration.maxBodyBytes, maxHeadBytes: configuration.maxHeadBytes))
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
        case .head(let head): action = machine.headReceived(head)
        case .body(let buffer): action = machine.bodyReceived(buffer)
        case .end: action = machine.endReceived()
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
        if case .writeEvents = machine.writabilityChanged(writable: context.channel.isWritable) {
            var replay = ReplayCache()
            writeEvents(.news, replay: &replay, context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        letGo()
        context.fireChannelInactive()
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

    /// Performs an action, then takes up what waited while an answer was pending.
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
            guard case .samples(let session) = request.route else { return }
            write(routes.samples(request.head, session: session, body: request.body), then: then, context: context)
        case .route(let request):
            route(request, context: context)
        case .openStream(let request):
            openStream(request, context: context)
        case .refuse(let error, let head, let then):
            write(routes.refusal(error, head), then: then, context: context)
        case .writeEvents:
            var replay = ReplayCache()
            writeEvents(.news, replay: &replay, context: context)
        case .endStream(let stream):
            var trailer = (try? stream.finish()) ?? nil
            if trailer == nil { trailer = ResponseHead.lastChunk } else { trailer!.writeImmutableBuffer(ResponseHead.lastChunk) }
            context.write(wrapOutboundOut(trailer!), promise: nil)
            closeOutput(context: context)
        case .close:
            closeOutput(context: context)
        case .closeNow:
            context.close(promise: nil)
        }
    }

    private func write(_ payload: JSONPayload, then: Machine.Then, context: ChannelHandlerContext) {
        let bytes = ResponseHead.answer(payload, close: then == .close, allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
        if then == .close { closeOutput(context: context) }
    }

    /// Closes the output once everything written before has gone (closing it earlier would
    /// fail those writes), then keeps reading so the client's late bytes cause no reset; the
    /// linger deadline or the client's own close ends the connection.
    private func closeOutput(context: ChannelHandlerContext) {
        let drained = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)))
        drained.assumeIsolated().whenComplete { _ in
            context.close(mode: .output).assumeIsolated().whenFailure { _ in context.close(promise: nil) }
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
            case .linger: configuration.lingerTimeout
            }
        return .nanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    // MARK: - Routed requests

    private func route(_ request: Machine.Request, context: ChannelHandlerContext) {
        let writer = RoutedResponseWriter(
            handler: NIOLoopBound(self, eventLoop: context.eventLoop), eventLoop: context.eventLoop,
            isHead: request.head.method == .HEAD)
        let channel = context.channel
        let body = request.body ?? context.channel.allocator.buffer(capacity: 0)
        routing = Task { [routes, head = request.head] in
            let response = await routes.route(head, body: body, channel: channel)
            await writer.send(response)
        }
    }

    /// On this event loop: bytes of the router's answer, in order; the head is written here,
    /// where it is known whether the connection closes after it.
    fileprivate func writeRouted(head: HTTPResponse?, bytes: ByteBuffer) -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        var buffer = bytes
        if let head {
            buffer = context.channel.allocator.buffer(capacity: 256 + bytes.readableBytes)
            ResponseHead.write(status: head.status, fields: head.headerFields, close: machine.closesAfterAnswer, into: &buffer)
            buffer.writeImmutableBuffer(bytes)
        }
        return context.writeAndFlush(wrapOutboundOut(buffer))
    }

    /// On this event loop: the router's answer is written, or failed half-way.
    fileprivate func routedResponseEnded(completely: Bool) {
        routing = nil
        guard let context else { return }
        perform(machine.routedResponseEnded(completely: completely), context: context)
        // What a pipelining client sent meanwhile, in order, until it waits for an answer.
        while let next = machine.nextPending() { perform(next, context: context) }
        if case .read = machine.readRequested() { context.read() }
        armDeadline(context: context)
    }

    // MARK: - The event stream

    private func openStream(_ request: Machine.Request, context: ChannelHandlerContext) {
        guard case .events(let id) = request.route else { return }
        let head = request.head
        let configuration = routes.configuration
        do {
            let (session, lastEventID) = try routes.eventStreamRequest(head, session: id)
            guard let ticket = routes.streams.admit(routes.client(of: head, channel: context.channel)) else {
                write(EventStream.overloadAnswer(configuration), then: .close, context: context)
                perform(machine.streamRefused(then: .close), context: context)
                return
            }
            let listener = StreamListener(handler: self, eventLoop: context.eventLoop)
            guard let (stream, response, opening) = try EventStream.open(
                session: session, listener: listener, ticket: ticket, lastEventID: lastEventID,
                gzip: Gzip.accepted(by: head.headers), configuration: configuration)
            else { throw APIError.sessionNotFound(id) }
            try? context.channel.syncOptions?.setOption(
                ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(configuration.streamSendBufferBytes))
            var bytes = context.channel.allocator.buffer(capacity: 256 + opening.readableBytes)
            ResponseHead.write(status: response.status, fields: response.headerFields, close: false, into: &bytes)
            bytes.writeImmutableBuffer(opening)
            context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
            perform(machine.streamOpened(stream), context: context)
        } catch {
            let then: Machine.Then = machine.closesAfterAnswer ? .close : .keepAlive
            write(routes.refusal(error, head), then: then, context: context)
            perform(machine.streamRefused(then: then), context: context)
        }
    }

    /// On this event loop, from the session's wake-up.
    fileprivate func streamWoken(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        guard let context else { return }
        let action = machine.streamWoken(sessionEnded: reason == .sessionEnded, writable: context.channel.isWritable)
        if case .writeEvents = action {
            writeEvents(reason, replay: &replay, context: context)
        } else {
            run(action, context: context)
        }
    }

    private func writeEvents(_ reason: Wakeup.Reason, replay: inout ReplayCache, context: ChannelHandlerContext) {
        let chunk: ByteBuffer?
        do {
            chunk = try machine.withStream { stream in try stream.woken(reason, replay: &replay) } ?? nil
        } catch {
            return run(machine.streamFailed(), context: context)
        }
        if let chunk { context.writeAndFlush(wrapOutboundOut(chunk), promise: nil) }
    }
}

/// How the router's answer, produced on a task, reaches the connection: each write hops to
/// the event loop and waits until written, so a large body cannot outrun a slow client. The
/// head waits for the first body buffer, so a small answer is one write. A body of unknown
/// length is sent chunked.
private struct RoutedResponseWriter: ResponseBodyWriter, Sendable {
    let handler: NIOLoopBound<ConnectionHandler>
    let eventLoop: any EventLoop
    let isHead: Bool
    private var head: HTTPResponse?
    private var pending = ByteBuffer()
    private var chunked = false

    init(handler: NIOLoopBound<ConnectionHandler>, eventLoop: any EventLoop, isHead: Bool) {
        self.handler = handler
        self.eventLoop = eventLoop
        self.isHead = isHead
    }

    func send(_ response: Response) async {
        var writer = self
        var head = response.head
        let bodiless = isHead || head.status.code == 204 || head.status.code == 304 || head.status.kind == .informational
        if head.headerFields[.contentLength] == nil, !bodiless {
            if let length = response.body.contentLength {
                head.headerFields[.contentLength] = String(length)
            } else {
                head.headerFields[.transferEncoding] = "chunked"
                writer.chunked = true
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
        guard !isHead, buffer.readableBytes > 0 else { return }
        pending.writeImmutableBuffer(chunked ? HTTPChunk.frame([buffer]) : buffer)
        // The head waits for the first body buffer: a small answer goes out in one write.
        if head != nil, pending.readableBytes < 1024 { return }
        try await flush()
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        if chunked { pending.writeImmutableBuffer(ResponseHead.lastChunk) }
        try await flush()
    }

    private mutating func flush() async throws {
        let (head, bytes) = (self.head, pending)
        self.head = nil
        pending = ByteBuffer()
        let handler = self.handler
        try await eventLoop.flatSubmit {
            handler.value.writeRouted(head: head, bytes: bytes) ?? handler.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
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
