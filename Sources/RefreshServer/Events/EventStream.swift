import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

/// One `text/event-stream` response: the catch-up, then every new event of the session as
/// its doorbell rings, a keepalive comment when woken with nothing to send. It ends when
/// the client goes away (noticed at once, not at the next write), the session ends or the
/// server shuts down.
struct EventStream: Sendable {
    let session: Session
    let configuration: ServerConfiguration

    func response(request: Request, lastEventID: UInt64?) -> Response {
        let gzip = Gzip.accepted(by: request.head)
        var headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8",
            .cacheControl: "no-store",
            .accelBuffering: "no",
            .vary: "Accept-Encoding",
        ]
        if gzip { headers[.contentEncoding] = "gzip" }
        let retry = configuration.reconnectDelayMilliseconds
        // A wake with nothing new is the keepalive tick, or a late ring for events already
        // sent; only the first, on a stream quiet for a while, deserves a comment.
        let quietEnough = configuration.keepaliveInterval / 2
        let body = ResponseBody { [session] writer in
            let (doorbell, ringer) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            guard let subscription = session.subscribe(lastEventID: lastEventID, doorbell: ringer, now: .now) else {
                try await writer.finish(nil)
                return
            }
            defer { session.unsubscribe(subscription.doorbell, now: .now) }
            let encoder = try gzip ? GzipStream() : nil
            var lastWrite = ContinuousClock.now
            func send(_ buffers: [ByteBuffer]) async throws {
                lastWrite = .now
                // The common case, one event: its shared frame goes out as it is, uncopied.
                var joined: ByteBuffer
                if buffers.count == 1 {
                    joined = buffers[0]
                } else {
                    joined = ByteBufferAllocator().buffer(capacity: buffers.reduce(0) { $0 + $1.readableBytes })
                    for var buffer in buffers { joined.writeBuffer(&buffer) }
                }
                try await writer.write(encoder.map { try $0.compress(joined) } ?? joined)
            }
            let opening = ByteBuffer(string: "retry: \(retry)\n\n")
            try await send([opening] + subscription.initial.map(\.frame))
            var cursor = subscription.cursor
            do {
                try await withGracefulShutdownHandler {
                    try await request.body.consumeWithCancellationOnInboundClose { _ in
                        for await _ in doorbell {
                            let (events, next) = session.events(after: cursor)
                            cursor = next
                            if !events.isEmpty {
                                try await send(events.map(\.frame))
                            } else if ContinuousClock.now - lastWrite >= quietEnough {
                                try await send([Self.keepalive])
                            }
                        }
                    }
                } onGracefulShutdown: {
                    ringer.finish()
                }
                if let encoder { try await writer.write(try encoder.finish()) }
                try await writer.finish(nil)
            } catch {
                // The client left: nothing more can be written to it.
            }
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    static let keepalive = ByteBuffer(string: ": keepalive\n\n")
}
