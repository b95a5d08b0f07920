import Hummingbird
import NIOCore
import RefreshJSON

enum RequestBodyReader {
    /// The body as JSON; `nil` when it is empty and `allowEmpty`. 413 past `limit` without
    /// reading further than the limit.
    static func json(_ request: Request, limit: Int, allowEmpty: Bool = false) async throws -> JSONValue? {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.bodyTooLarge(limit: limit)
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw APIError.bodyTooLarge(limit: limit)
        }
        if buffer.readableBytes == 0, allowEmpty { return nil }
        return try JSONValue.parseBody(Array(buffer.readableBytesView))
    }
}
