import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// The application end of every HTTP connection. It answers the ``HotRoutes`` itself, on
/// the event loop: a sample goes from the socket through the engine to the streams' event
/// loops without a task, and an open event stream is this handler writing the log's shared
/// chunks. Any other request is collected and answered by the router on a task of its own,
/// which writes back through ``RoutedResponseWriter``.
///
/// One request is answered at a time, in order: what a pipelining client sends meanwhile
/// waits in `waiting`.
final class SessionConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Between requests.
        case idle
        /// Collecting a samples POST body.
        case readingSamples(HTTPRequest, session: String, body: ByteBuffer)
        /// Collecting the body of a request for the router.
        case readingRouted(HTTPRequest, body: ByteBuffer)
        /// The router is answering; nothing else is read until it has. `endWritten` once its
        /// response is complete on the wire.
        case routing(keepAlive: Bool, endWritten: Bool)
        /// Dropping the rest of a request already answered (413).
        case discarding
        /// Streaming events: nothing more is read from this connection. `waitsForWritability`
        /// when the connection was full: it writes again once it drains.
        case streaming(EventStream, waitsForWritability: Bool)
    }

    private let routes: HotRoutes
    private var state = State.idle
    private var context: ChannelHandlerContext?
    /// The HTTP encoder's context: what is written from it goes straight to the socket. An
    /// event stream's body is written there, as chunks framed once for all streams.
    private var socket: ChannelHandlerContext?
    /// Parts that arrived while a request was being answered, in order. Rarely used (only
    /// by pipelining clients), so an array: an empty one costs nothing per connection.
    private var waiting: [HTTPRequestPart] = []
    /// The server is stopping, or the client said it sends nothing more: close once idle.
    private var closeWhenIdle = false

    /// More pipelined parts than this behind an unanswered request close the connection.
    private static let maxWaitingParts = 256

    init(routes: HotRoutes) {
        self.routes = routes
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        socket = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopStreaming()
        self.context = nil
        socket = nil
    }

    // MARK: - Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if waiting.isEmpty, !isBusy {
            handle(part, context: context)
        } else if waiting.count < Self.maxWaitingParts {
            waiting.append(part)
        } else {
            context.close(promise: nil)
        }
    }

    private var isBusy: Bool {
        if case .routing = state { return true }
        return false
    }

    private func handle(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        let limit = routes.configuration.maxBodyBytes
        switch (state, part) {
        case (.idle, .head(let head)):
            if let length = head.headerFields[.contentLength].flatMap(Int.init), length > limit {
                refuseBody(head, context: context)
                return
            }
            let empty = context.channel.allocator.buffer(capacity: 0)
            switch routes.match(head) {
            case .samples(let session): state = .readingSamples(head, session: session, body: empty)
            case .events(let session): openStream(head, session: session, context: context)
            case nil: state = .readingRouted(head, body: empty)
            }
        case (.readingSamples(let head, let session, var body), .body(var chunk)):
            state = .idle  // `body` is then the buffer's only owner while it grows
            guard body.readableBytes + chunk.readableBytes <= limit else { return refuseBody(head, context: context) }
            body.writeBuffer(&chunk)
            state = .readingSamples(head, session: session, body: body)
        case (.readingRouted(let head, var body), .body(var chunk)):
            state = .idle
            guard body.readableBytes + chunk.readableBytes <= limit else { return refuseBody(head, context: context) }
            body.writeBuffer(&chunk)
            state = .readingRouted(head, body: body)
        case (.readingSamples(let head, let session, let body), .end):
            state = .idle
            respond(routes.samples(head, session: session, body: body), to: head, context: context)
        case (.readingRouted(let head, let body), .end):
            route(head, body: body, context: context)
        case (.discarding, .end):
            state = .idle
            closeIfAsked(context: context)
        case (.discarding, _), (.streaming, _), (.idle, _), (.routing, _), (.readingSamples, .head), (.readingRouted, .head):
            break
        }
    }

    /// 413 at once, without keeping the rest, which is read and dropped.
    private func refuseBody(_ head: HTTPRequest, context: ChannelHandlerContext) {
        let payload = routes.refusal(APIError.bodyTooLarge(limit: routes.configuration.maxBodyBytes), head)
        state = .discarding
        if Self.wantsClose(head) { closeWhenIdle = true }
        write(payload, close: closeWhenIdle, context: context)
    }

    private func respond(_ payload: JSONPayload, to head: HTTPRequest, context: ChannelHandlerContext) {
        let close = closeWhenIdle || Self.wantsClose(head)
        write(payload, close: close, context: context)
        if close { context.close(promise: nil) }
    }

    private func write(_ payload: JSONPayload, close: Bool, context: ChannelHandlerContext) {
        var headers = payload.headers
        headers.stampServer()
        if close { headers[.connection] = "close" }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: payload.status, headerFields: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(payload.body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    private static func wantsClose(_ head: HTTPRequest) -> Bool {
        head.headerFields[.connection]?.lowercased() == "close"
    }

    // MARK: - Routed requests

    private func route(_ head: HTTPRequest, body: ByteBuffer, context: ChannelHandlerContext) {
        state = .routing(keepAlive: !Self.wantsClose(head), endWritten: false)
        let writer = RoutedResponseWriter(handler: NIOLoopBound(self, eventLoop: context.eventLoop), eventLoop: context.eventLoop)
        let channel = context.channel
        Task { [routes] in
            let response = await routes.route(head, body: body, channel: channel)
            await writer.send(response)
        }
    }

    /// On this event loop: parts of the router's response, in order.
    fileprivate func writeRouted(_ parts: [HTTPResponsePart]) -> EventLoopFuture<Void>? {
        guard case .routing(let keepAlive, var endWritten) = state, let context else { return nil }
        var written: EventLoopFuture<Void>?
        for part in parts {
            var part = part
            if case .head(var head) = part, !keepAlive || closeWhenIdle {
                head.headerFields[.connection] = "close"
                part = .head(head)
            }
            if case .end = part { endWritten = true }
            written = context.write(wrapOutboundOut(part))
        }
        state = .routing(keepAlive: keepAlive, endWritten: endWritten)
        context.flush()
        return written
    }

    /// On this event loop: the router's response is complete, or it failed half-way (and
    /// the connection, its framing lost, is closed).
    fileprivate func routedResponseEnded(completely: Bool) {
        guard case .routing(let keepAlive, let endWritten) = state, let context else { return }
        state = .idle
        guard completely, endWritten, keepAlive else {
            context.close(promise: nil)
            return
        }
        if closeIfAsked(context: context) { return }
        while !waiting.isEmpty, !isBusy {
            handle(waiting.removeFirst(), context: context)
        }
    }

    // MARK: - The event stream

    private func openStream(_ head: HTTPRequest, session id: String, context: ChannelHandlerContext) {
        do {
            guard let socket else { throw APIError(.internalServerError, "internal_error", "No HTTP encoder in the pipeline.") }
            let (session, lastEventID) = try routes.eventStreamRequest(head, session: id)
            let listener = StreamListener(handler: self, eventLoop: context.eventLoop)
            guard let (stream, response, opening) = try EventStream.open(
                session: session, listener: listener, lastEventID: lastEventID,
                gzip: Gzip.accepted(by: head), configuration: routes.configuration)
            else { throw APIError.sessionNotFound(id) }
            state = .streaming(stream, waitsForWritability: false)
            try? context.channel.syncOptions?.setOption(
                ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(routes.configuration.streamSendBufferBytes))
            var headers = response.headerFields
            headers.stampServer()
            context.write(wrapOutboundOut(.head(HTTPResponse(status: response.status, headerFields: headers))), promise: nil)
            socket.writeAndFlush(NIOAny(opening), promise: nil)
        } catch {
            respond(routes.refusal(error, head), to: head, context: context)
        }
    }

    /// On this event loop, from the session's wake-up.
    fileprivate func streamWoken(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        guard case .streaming(var stream, _) = state, let context else { return }
        if reason == .sessionEnded {
            endStream(close: closeWhenIdle, context: context)
            return
        }
        guard context.channel.isWritable else {
            // A slow reader: its events wait in the log, where newer states replace older ones.
            state = .streaming(stream, waitsForWritability: true)
            return
        }
        do {
            let chunk = try stream.woken(reason, replay: &replay)
            state = .streaming(stream, waitsForWritability: false)
            if let chunk { socket?.writeAndFlush(NIOAny(chunk), promise: nil) }
        } catch {
            endStream(close: true, context: context)
        }
    }

    /// Ends the response cleanly: the gzip trailer, the last chunk.
    private func endStream(close: Bool, context: ChannelHandlerContext) {
        guard case .streaming(let stream, _) = state else { return }
        stopStreaming()
        if let trailer = try? stream.finish() { socket?.write(NIOAny(trailer), promise: nil) }
        let ended = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if close { ended.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }

    private func stopStreaming() {
        guard case .streaming(let stream, _) = state else { return }
        state = .idle
        stream.session.unsubscribe(stream.listener, now: .now)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if case .streaming(_, waitsForWritability: true) = state, context.channel.isWritable {
            var replay = ReplayCache()
            streamWoken(.news, replay: &replay)
        }
        context.fireChannelWritabilityChanged()
    }

    // MARK: - Connection events

    func channelInactive(context: ChannelHandlerContext) {
        stopStreaming()
        waiting.removeAll()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        let inputClosed = (event as? ChannelEvent) == .inputClosed
        guard inputClosed || event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        // Finish what runs, then close: a stream ends now, an answer in progress completes.
        closeWhenIdle = true
        switch state {
        case .streaming:
            endStream(close: true, context: context)
        case .readingSamples, .readingRouted, .discarding:
            // Half a request: its rest never comes once the client has closed its side;
            // otherwise it is answered, then the connection closes.
            if inputClosed { context.close(promise: nil) }
        default:
            closeIfAsked(context: context)
        }
    }

    /// Closes an idle connection that was asked to close; answers whether it did.
    @discardableResult
    private func closeIfAsked(context: ChannelHandlerContext) -> Bool {
        guard closeWhenIdle, case .idle = state else { return false }
        context.close(promise: nil)
        return true
    }
}

/// How the router's answer, produced on a task, reaches the connection: each write hops to
/// the event loop and waits until written, so a large body cannot outrun a slow client.
/// The head waits for the first body buffer, so a small response is one write.
private struct RoutedResponseWriter: ResponseBodyWriter, Sendable {
    let handler: NIOLoopBound<SessionConnectionHandler>
    let eventLoop: any EventLoop
    private var pending: [HTTPResponsePart] = []

    init(handler: NIOLoopBound<SessionConnectionHandler>, eventLoop: any EventLoop) {
        self.handler = handler
        self.eventLoop = eventLoop
    }

    func send(_ response: Response) async {
        var writer = self
        writer.pending = [.head(response.head)]
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
        if pending.count == 1, case .head = pending[0] {
            pending.append(.body(buffer))
            return
        }
        pending.append(.body(buffer))
        try await flush()
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        pending.append(.end(trailingHeaders))
        try await flush()
    }

    private mutating func flush() async throws {
        let parts = pending
        pending = []
        let handler = self.handler
        try await eventLoop.flatSubmit {
            handler.value.writeRouted(parts) ?? handler.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }.get()
    }
}

/// How a session's log reaches a stream: the handler, only ever touched on its event loop.
private final class StreamListener: EventListener {
    let eventLoop: any EventLoop
    private let handler: NIOLoopBound<SessionConnectionHandler>

    init(handler: SessionConnectionHandler, eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.handler = NIOLoopBound(handler, eventLoop: eventLoop)
    }

    func wake(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        handler.value.streamWoken(reason, replay: &replay)
    }
}
