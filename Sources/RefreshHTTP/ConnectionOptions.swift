import NIOHTTP1

/// What a request's `Connection` fields say, as NIO's decoder (llhttp) reads them, which
/// also reads `Proxy-Connection` as one: a proxy that forwards that field and pools its
/// connection to this server would otherwise have the next user's request refused by a
/// decoder that stopped after "close" while this server answered as if kept alive.
///
/// Each reading leans the safe way where llhttp's is in doubt. `close` is found loosely (a
/// token with spaces or tabs inside still counts): closing a connection the decoder would
/// keep costs a reconnect, keeping one it stopped costs the next request. `keep-alive` and
/// `upgrade` are found strictly (tokens between commas, spaces around them, no tab, nothing
/// but token bytes): an HTTP/1.0 connection wrongly kept has its next request refused, and
/// a decoder wrongly taken for stopped would be replaced while it still parses.
/// `ConnectionOptionsTests` holds these readings to the decoder's.
package struct ConnectionOptions: Equatable, Sendable {
    package var close = false
    package var keepAlive = false
    package var upgrade = false

    package init() {}

    /// The options of every `Connection` and `Proxy-Connection` field of `headers`.
    package init(_ headers: HTTPHeaders) {
        for (name, value) in headers where Self.isConnectionField(name) { read(value) }
    }

    /// Whether the field named `name` is one llhttp reads as `Connection`.
    package static func isConnectionField(_ name: String) -> Bool {
        switch name.utf8.count {
        case 10: RequestPolicy.equalIgnoringCase(name, "connection")
        case 16: RequestPolicy.equalIgnoringCase(name, "proxy-connection")
        default: false
        }
    }

    /// Adds what one field's value lists.
    package mutating func read(_ value: String) {
        let bytes = value.utf8
        var strict = true
        var strictTokens: [Substring.UTF8View] = []
        for token in Substring(value).utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            let loose = token.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
            if RequestPolicy.equalIgnoringCase(loose, "close".utf8) { close = true }
            let trimmed = token.drop { $0 == UInt8(ascii: " ") }.reversed().drop { $0 == UInt8(ascii: " ") }.reversed()
            if !trimmed.allSatisfy(\.isTokenByte) { strict = false }
            strictTokens.append(token)
        }
        guard strict, !bytes.contains(UInt8(ascii: "\t")) else { return }
        for token in strictTokens {
            let trimmed = token.drop { $0 == UInt8(ascii: " ") }.reversed().drop { $0 == UInt8(ascii: " ") }.reversed()
            if RequestPolicy.equalIgnoringCase(trimmed, "keep-alive".utf8) { keepAlive = true }
            if RequestPolicy.equalIgnoringCase(trimmed, "upgrade".utf8) { upgrade = true }
        }
    }

    /// Whether a request of `version` with these options lets the connection serve another:
    /// HTTP/1.1 unless it says `close`, HTTP/1.0 only when it says `keep-alive` (and not `close`).
    package func keepsAlive(_ version: HTTPVersion) -> Bool {
        let http11 = version.major == 1 && version.minor >= 1
        return http11 ? !close : keepAlive && !close
    }
}
