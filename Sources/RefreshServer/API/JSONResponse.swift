import HTTPTypes
import Hummingbird
import NIOCore
import RefreshHTTP
import RefreshJSON

/// A JSON response as bytes and headers, before it becomes a Hummingbird `Response` or is
/// written straight to a connection.
typealias JSONPayload = HTTPAnswer

enum JSONResponse {
    /// Bodies smaller than this are sent as they are: gzip would cost more than it saves.
    static let gzipThreshold = 1024

    /// `acceptsGzip` is asked only for a body worth compressing: reading `Accept-Encoding`
    /// costs more than a small answer.
    static func payload(
        _ status: HTTPResponse.Status, _ body: ByteBuffer, acceptsGzip: @autoclosure () -> Bool, headers extra: HTTPFields = [:]
    ) -> JSONPayload {
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        headers.append(contentsOf: extra)
        var body = body
        if body.readableBytes >= gzipThreshold {
            headers[.vary] = "Accept-Encoding"
            if acceptsGzip(), let compressed = Gzip.compress(body) {
                headers[.contentEncoding] = "gzip"
                body = compressed
            }
        }
        headers[.contentLength] = String(body.readableBytes)
        return JSONPayload(status: status, headers: headers, body: body)
    }

    static func payload(
        _ status: HTTPResponse.Status, acceptsGzip: @autoclosure () -> Bool, headers: HTTPFields = [:], _ write: (inout JSONWriter) -> Void
    ) -> JSONPayload {
        var json = JSONWriter(capacity: 256)
        write(&json)
        return payload(status, json.buffer, acceptsGzip: acceptsGzip(), headers: headers)
    }

    static func errorPayload(_ error: APIError, acceptsGzip: @autoclosure () -> Bool) -> JSONPayload {
        var headers: HTTPFields = [:]
        if let retryAfter = error.retryAfter { headers[.retryAfter] = String(retryAfter) }
        if let allow = error.allow { headers[.allow] = allow }
        if let challenge = error.wwwAuthenticate { headers[.wwwAuthenticate] = challenge }
        return payload(error.status, acceptsGzip: acceptsGzip(), headers: headers) { json in
            json.beginObject()
            json.field("error", error.code.rawValue)
            json.field("message", error.message)
            json.endObject()
        }
    }

    static func make(_ status: HTTPResponse.Status, _ body: ByteBuffer, request: Request, headers: HTTPFields = [:]) -> Response {
        Response(payload(status, body, acceptsGzip: Gzip.accepted(by: request.head), headers: headers))
    }

    static func make(_ status: HTTPResponse.Status, request: Request, headers: HTTPFields = [:], _ write: (inout JSONWriter) -> Void) -> Response {
        Response(payload(status, acceptsGzip: Gzip.accepted(by: request.head), headers: headers, write))
    }

    static func error(_ error: APIError, request: Request) -> Response {
        Response(errorPayload(error, acceptsGzip: Gzip.accepted(by: request.head)))
    }
}

extension Response {
    init(_ payload: JSONPayload) {
        self.init(status: payload.status, headers: payload.headers, body: ResponseBody(byteBuffer: payload.body))
    }
}
