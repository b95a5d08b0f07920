import HTTPTypes
import NIOHTTP1

extension AccessControl.Carrier {
    /// A routed request's fields.
    init(_ fields: HTTPFields) {
        self.init(authorization: fields[.authorization], cookies: fields[values: .cookie])
    }

    /// A request head the connection answers itself (the event stream). Several
    /// `Authorization` fields are read as one, joined as a router joins them (and so as no
    /// token), not by the first.
    init(_ headers: HTTPHeaders) {
        let authorization = headers["authorization"]
        self.init(authorization: authorization.isEmpty ? nil : authorization.joined(separator: ", "), cookies: headers["cookie"])
    }
}
