import HTTPTypes
import NIOCore
import NIOHTTP1

/// An HTTP/1.1 response head written straight into bytes. The connection writes whole
/// answers as one buffer to the socket: no response encoder in the pipeline, no
/// conversion between header types on the way.
package enum ResponseHead {
    /// What the `Connection` field says.
    package enum Connection {
        /// Nothing: HTTP/1.1 keeps a connection alive unless told otherwise.
        case none
        /// The connection closes after this answer.
        case close
        /// An HTTP/1.0 client asked to keep the connection alive, and it is.
        case keepAlive

        package init(closes: Bool, request: HTTPRequestHead?) {
            if closes {
                self = .close
            } else if let request, request.version.major == 1, request.version.minor == 0 {
                self = .keepAlive
            } else {
                self = .none
            }
        }

        /// The field's line, after the line before it (no line break at the end).
        package func write(into buffer: inout ByteBuffer) {
            switch self {
            case .none: break
            case .close: buffer.writeStaticString("\r\nConnection: close")
            case .keepAlive: buffer.writeStaticString("\r\nConnection: keep-alive")
            }
        }
    }

    /// Writes the status line, `fields`, `Server`, `Date`, `X-Content-Type-Options` and the
    /// `Connection` field; then the blank line. `cors`: the request's `--cors-origin`, which
    /// the answer then names in `Access-Control-Allow-Origin`; `variesByOrigin`: whether the
    /// server has any (``RequestPolicy/variesByOrigin``).
    package static func write(
        status: HTTPResponse.Status, fields: HTTPFields, connection: Connection, cors: String?, variesByOrigin: Bool,
        into buffer: inout ByteBuffer
    ) {
        buffer.writeStaticString("HTTP/1.1 ")
        buffer.writeString(String(status.code))
        buffer.writeStaticString(" ")
        buffer.writeString(status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        for field in fields where field.name != .connection && field.name != .server && field.name != .date && field.name != contentTypeOptions {
            buffer.writeString(field.name.rawName)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
        writeCORS(cors, variesByOrigin: variesByOrigin, into: &buffer)
        buffer.writeStaticString("X-Content-Type-Options: nosniff\r\nServer: refresh-server\r\nDate: ")
        buffer.writeString(HTTPDate.now())
        connection.write(into: &buffer)
        buffer.writeStaticString("\r\n\r\n")
    }

    /// A complete answer with a body of known length: one buffer, one write. The answer to a
    /// `HEAD` request has the head only, with the length the body would have.
    package static func answer(
        _ payload: HTTPAnswer, connection: Connection, cors: String?, variesByOrigin: Bool, headOnly: Bool, allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 160 + payload.body.readableBytes)
        write(status: payload.status, fields: payload.headers, connection: connection, cors: cors, variesByOrigin: variesByOrigin, into: &buffer)
        if !headOnly { buffer.writeImmutableBuffer(payload.body) }
        return buffer
    }

    /// The answer to a CORS preflight from a `--cors-origin`: the methods the path has, the
    /// headers a page may send, and how long the browser may keep this answer.
    package static func preflightAnswer(origin: String, allow: String, connection: Connection, allocator: ByteBufferAllocator) -> ByteBuffer {
        var fields = HTTPFields()
        fields[.accessControlAllowMethods] = allow
        fields[.accessControlAllowHeaders] = RequestPolicy.allowedHeaders
        fields[.accessControlMaxAge] = RequestPolicy.preflightMaxAge
        fields[.cacheControl] = "no-store"
        var buffer = allocator.buffer(capacity: 400)
        write(status: .noContent, fields: fields, connection: connection, cors: origin, variesByOrigin: true, into: &buffer)
        return buffer
    }

    /// `Access-Control-Allow-Origin` for a `--cors-origin`, and `Vary: Origin`: the answer
    /// differs by the asking page. `Access-Control-Allow-Credentials` lets that page send the
    /// `ptr_token` cookie, which an `EventSource` on another origin can carry in no other way;
    /// a browser drops a credentialed answer without it. `origin` is always one listed
    /// origin, never `*` (the setting refuses it), which browsers would not take with
    /// credentials anyway.
    ///
    /// A server with any `--cors-origin` says `Vary: Origin` on every answer, naming an origin
    /// or not: a shared cache must not give the copy made for a request without `Origin` (so
    /// without CORS fields) to a page of a listed origin, which would then be refused it.
    package static func writeCORS(_ origin: String?, variesByOrigin: Bool, into buffer: inout ByteBuffer) {
        guard let origin else {
            if variesByOrigin { buffer.writeStaticString("Vary: Origin\r\n") }
            return
        }
        buffer.writeStaticString("Access-Control-Allow-Origin: ")
        buffer.writeString(origin)
        buffer.writeStaticString(
            "\r\nAccess-Control-Allow-Credentials: true\r\nAccess-Control-Expose-Headers: Retry-After\r\nVary: Origin\r\n")
    }

    private static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!

    /// The interim answer a client sending `Expect: 100-continue` waits for.
    package static let continueResponse = ByteBuffer(string: "HTTP/1.1 100 Continue\r\n\r\n")

    /// The last chunk of a chunked body, with no trailers.
    package static let lastChunk = ByteBuffer(string: "0\r\n\r\n")
}
