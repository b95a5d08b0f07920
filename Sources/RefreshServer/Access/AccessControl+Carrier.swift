import HTTPTypes
import NIOHTTP1

extension AccessControl.Carrier {
    /// A routed request's fields.
    init(_ fields: HTTPFields) {
        self.init(authorization: fields[.authorization], cookies: fields[values: .cookie])
    }

    /// A request head the connection answers itself (the event stream).
    init(_ headers: HTTPHeaders) {
        self.init(authorization: headers.first(name: "authorization"), cookies: headers["cookie"])
    }
}
