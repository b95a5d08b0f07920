import HTTPTypes
import NIOCore

/// A complete answer as its status, fields and body bytes, written straight to a connection.
package struct HTTPAnswer: Sendable {
    package var status: HTTPResponse.Status
    package var headers: HTTPFields
    package var body: ByteBuffer

    package init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
