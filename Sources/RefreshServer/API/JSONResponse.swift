import HTTPTypes
import Hummingbird
import NIOCore

enum JSONResponse {
    /// Bodies smaller than this are sent as they are: gzip would cost more than it saves.
    static let gzipThreshold = 1024

    static func make(_ status: HTTPResponse.Status, _ body: ByteBuffer, request: Request, headers extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        headers.append(contentsOf: extra)
        var body = body
        if body.readableBytes >= gzipThreshold {
            headers[.vary] = "Accept-Encoding"
            if Gzip.accepted(by: request.head), let compressed = Gzip.compress(body) {
                headers[.contentEncoding] = "gzip"
                body = compressed
            }
        }
        headers[.contentLength] = String(body.readableBytes)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    static func make(_ status: HTTPResponse.Status, request: Request, headers: HTTPFields = [:], _ write: (inout JSONWriter) -> Void) -> Response {
        var json = JSONWriter(capacity: 256)
        write(&json)
        return make(status, json.buffer, request: request, headers: headers)
    }

    static func error(_ error: APIError, request: Request) -> Response {
        var headers: HTTPFields = [:]
        if let retryAfter = error.retryAfter { headers[.retryAfter] = String(retryAfter) }
        return make(error.status, request: request, headers: headers) { json in
            json.beginObject()
            json.field("error", error.code)
            json.field("message", error.message)
            json.endObject()
        }
    }
}
