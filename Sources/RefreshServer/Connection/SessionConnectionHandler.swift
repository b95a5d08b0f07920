import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Sits in every HTTP connection's pipeline in front of Hummingbird and answers the
/// ``HotRoutes`` itself, on the event loop: a sample goes from the socket through the
/// engine to the streams' event loops without a task, and an open event stream is this
/// handler writing the log's shared frames, not a task per stream.
///
/// Everything else is passed on to Hummingbird's router. Responses keep request order:
/// a hot request that arrives while Hummingbird still owes a response waits for it.
final class SessionConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Between requests (Hummingbird may still be answering ones it was passed).
        case idle
        /// Passing the current request's parts to Hummingbird.
        case forwarding
        /// Collecting a samples POST body.
        case readingSamples(HTTPRequest, session: String, body: ByteBuffer)
        /// Dropping the rest of a request already answered (413).
        case discarding
        /// Streaming events: nothing more is read from this connection.
        case streaming(EventStream)
    }

    private let routes: HotRoutes
    private var state = State.idle
    private var context: ChannelHandlerContext?
    /// The HTTP encoder's context: what is written from it goes straight to the socket. An
    /// event stream's body is written there, as chunks framed once for all streams.
    private var socket: ChannelHandlerContext?
    /// Responses Hummingbird still owes for requests passed to it.
    private var responsesOwed = 0
    /// Parts that must wait until Hummingbird has answered, in arrival order. Rarely used
    /// (only by pipelining clients), so an array: an empty one costs nothing per connection.
    private var waiting: [HTTPRequestPart] = []
    /// The server is stopping: end what runs, then close.
    private var quiescing = false
    /// A stream found the connection full; it writes again once the connection drains.
    private var streamWaitsForWritability = false

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
        if waiting.isEmpty, !mustWait(part) {
            handle(part, context: context)
            return
        }
        guard waiting.count < Self.maxWaitingParts else {
            context.close(promise: nil)
            return
        }
        waiting.append(part)
    }

    /// A hot request's answer must not overtake the response Hummingbird is writing.
    private func mustWait(_ part: HTTPRequestPart) -> Bool {
        guard responsesOwed > 0, case .idle = state, case .head(let head) = part else { return false }
        return routes.match(head) != nil
    }

    private func handleWaitingParts(context: ChannelHandlerContext) {
        while let part = waiting.first, !mustWait(part) {
            waiting.removeFirst()
            handle(part, context: context)
        }
    }

    private func handle(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch (state, part) {
        case (.idle, .head(let head)):
            switch routes.match(head) {
            case .samples(let session):
                if let length = head.headerFields[.contentLength].flatMap(Int.init), length > routes.configuration.maxBodyBytes {
                    refuseBody(head, context: context)
                } else {
                    state = .readingSamples(head, session: session, body: context.channel.allocator.buffer(capacity: 0))
                }
            case .events(let session):
                openStream(head, session: session, context: context)
            case nil:
                responsesOwed += 1
                state = .forwarding
                context.fireChannelRead(wrapInboundOut(part))
            }
        case (.forwarding, _):
            if case .end = part { state = .idle }
            context.fireChannelRead(wrapInboundOut(part))
        case (.readingSamples(let head, let session, var body), .body(var chunk)):
            state = .idle  // let `body` be the buffer's only owner while it grows
            guard body.readableBytes + chunk.readableBytes <= routes.configuration.maxBodyBytes else {
                refuseBody(head, context: context)
                return
            }
            body.writeBuffer(&chunk)
            state = .readingSamples(head, session: session, body: body)
        case (.readingSamples(let head, let session, let body), .end):
            state = .idle
            respond(routes.samples(head, session: session, body: body), to: head, context: context)
        case (.discarding, .end):
            state = .idle
        case (.discarding, _), (.streaming, _), (.idle, _), (.readingSamples, .head):
            break
        }
    }

    /// 413 at once, without keeping the rest, which is read and dropped.
    private func refuseBody(_ head: HTTPRequest, context: ChannelHandlerContext) {
        state = .discarding
        respond(routes.refusal(APIError.bodyTooLarge(limit: routes.configuration.maxBodyBytes), head), to: head, context: context)
    }

    private func respond(_ payload: JSONPayload, to head: HTTPRequest, context: ChannelHandlerContext) {
        let close = quiescing || head.headerFields[.connection]?.lowercased() == "close"
        write(payload, close: close, context: context)
        if close { context.close(promise: nil) }
    }

    private func write(_ payload: JSONPayload, close: Bool, context: ChannelHandlerContext) {
        var headers = payload.headers
        headers[.server] = "refresh-server"
        if close { headers[.connection] = "close" }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: payload.status, headerFields: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(payload.body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
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
            state = .streaming(stream)
            var headers = response.headerFields
            headers[.server] = "refresh-server"
            context.write(wrapOutboundOut(.head(HTTPResponse(status: response.status, headerFields: headers))), promise: nil)
            socket.writeAndFlush(NIOAny(opening), promise: nil)
        } catch {
            respond(routes.refusal(error, head), to: head, context: context)
        }
    }

    /// On this event loop, from the session's wake-up.
    fileprivate func streamWoken(_ reason: Wakeup.Reason, replay: inout ReplayCache) {
        guard case .streaming(var stream) = state, let context else { return }
        if reason == .sessionEnded {
            endStream(close: quiescing, context: context)
            return
        }
        guard context.channel.isWritable else {
            // A slow reader: its events wait in the log, where newer states replace older ones.
            streamWaitsForWritability = true
            return
        }
        do {
            let chunk = try stream.woken(reason, replay: &replay)
            state = .streaming(stream)
            if let chunk { socket?.writeAndFlush(NIOAny(chunk), promise: nil) }
        } catch {
            endStream(close: true, context: context)
        }
    }

    /// Ends the response cleanly: the gzip trailer, the last chunk.
    private func endStream(close: Bool, context: ChannelHandlerContext) {
        guard case .streaming(let stream) = state else { return }
        stopStreaming()
        if let trailer = try? stream.finish() { socket?.write(NIOAny(trailer), promise: nil) }
        let ended = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if close { ended.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }

    private func stopStreaming() {
        guard case .streaming(let stream) = state else { return }
        state = .idle
        streamWaitsForWritability = false
        stream.session.unsubscribe(stream.listener, now: .now)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if streamWaitsForWritability, context.channel.isWritable {
            streamWaitsForWritability = false
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
        switch (event, state) {
        case (is ChannelShouldQuiesceEvent, .streaming):
            quiescing = true
            endStream(close: true, context: context)
        case (is ChannelShouldQuiesceEvent, .readingSamples):
            // Answered, then closed.
            quiescing = true
        case (let event as ChannelEvent, .streaming) where event == .inputClosed:
            // The client hung up its side: it reads nothing more either.
            endStream(close: true, context: context)
        default:
            if event is ChannelShouldQuiesceEvent { quiescing = true }
            context.fireUserInboundEventTriggered(event)
        }
    }

    // MARK: - Hummingbird's responses

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        if case .end = unwrapOutboundIn(data) {
            responsesOwed = max(0, responsesOwed - 1)
            if responsesOwed == 0, !waiting.isEmpty { handleWaitingParts(context: context) }
        }
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
