import NIOHTTP1

/// Which requests the server answers at all, and which may change what it holds: the rules
/// that keep a web page the user happens to visit from using a server on the user's own
/// machine or network.
///
/// - **Host.** A DNS-rebinding page reaches the server under the attacker's name, so only the
///   names the server is configured for are answered: `localhost`, the listening address (any
///   IP literal when listening on a wildcard; `127.0.0.1` and `::1` when listening on
///   `localhost`) and each `--public-host`; anything else `421`.
/// - **Origin.** A state-changing API request (`POST`, `PUT`, `PATCH`, `DELETE` on `/api/`)
///   from a browser says where it comes from. It is taken only from the server's own origin
///   or one given by `--cors-origin`; any other `Origin` (`null` included), or
///   `Sec-Fetch-Site: cross-site` without an allowed one, is `403`. A request with neither
///   header is a program's (curl, a native app, a test), and is served.
/// - **Content type.** A body is JSON and says so: a cross-site form or a `text/plain`
///   `fetch` needs no preflight, `application/json` does. Anything else `415`.
///
/// The checks run on the header values the connection has already picked out of the head, as
/// byte comparisons: a sample POST, at every frame of a gesture, pays a few of them and no
/// allocation.
package struct RequestPolicy: Sendable {
    /// Host names answered, lower-case, IPv6 without brackets.
    private let hosts: [String]
    /// Listening on a wildcard address: any IP literal is one of the server's names.
    private let anyAddress: Bool
    /// The origins given by `--cors-origin`, as browsers write them (`https://app.example`).
    package let corsOrigins: [String]

    /// Whether an answer may differ by the request's `Origin`: with any `--cors-origin`, every
    /// one does (``ResponseHead/writeCORS(_:variesByOrigin:into:)``).
    package var variesByOrigin: Bool { !corsOrigins.isEmpty }

    package init(_ configuration: HTTPConfiguration) {
        let listening = Self.bare(configuration.host.lowercased())
        anyAddress = listening == "0.0.0.0" || listening == "::"
        var hosts = ["localhost"]
        if listening == "localhost" {
            // The name resolves to a loopback address, and a client may well ask for it by number.
            hosts += ["127.0.0.1", "::1"]
        } else if !anyAddress {
            hosts.append(listening)
        }
        for name in configuration.publicHosts {
            let name = Self.bare(name.lowercased())
            if !hosts.contains(name) { hosts.append(name) }
        }
        self.hosts = hosts
        corsOrigins = configuration.corsOrigins.map { Self.normalizedOrigin($0) }
    }

    /// `[::1]` as `::1`; anything else as it is.
    private static func bare(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// An origin as a browser sends it: scheme and host lower-case, no trailing slash.
    package static func normalizedOrigin(_ origin: String) -> String {
        var origin = origin.lowercased()
        while origin.hasSuffix("/") { origin.removeLast() }
        return origin
    }

    /// A request the origin and content-type rules hold: a method that changes state, on the
    /// API (as the route table tells it).
    package static func changesState(_ method: HTTPMethod, onAPI: Bool) -> Bool {
        switch method {
        case .POST, .PUT, .PATCH, .DELETE: onAPI
        default: false
        }
    }

    // MARK: - Host

    /// Whether a `Host` value (`name`, `name:port`, `[v6]:port`) names this server. The port
    /// is not compared: a front may forward its own.
    package func allowsHost(_ value: String) -> Bool {
        let name = Self.hostPart(of: value.utf8[...])
        if name.isEmpty { return false }
        for host in hosts where Self.equalIgnoringCase(name, host.utf8[...]) { return true }
        return anyAddress && Self.isIPLiteral(name)
    }

    /// The host of an authority, without port and brackets.
    private static func hostPart(of authority: Substring.UTF8View) -> Substring.UTF8View {
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return authority[authority.endIndex...] }
            return authority[authority.index(after: authority.startIndex)..<close]
        }
        guard let colon = authority.firstIndex(of: UInt8(ascii: ":")) else { return authority }
        return authority[..<colon]
    }

    /// The port an authority names, if it names one.
    private static func portPart(of authority: Substring.UTF8View) -> Substring.UTF8View? {
        var rest = authority
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            rest = authority[authority.index(after: close)...]
        }
        guard let colon = rest.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let port = rest[rest.index(after: colon)...]
        return port.isEmpty ? nil : port
    }

    /// Dotted IPv4, or IPv6 (hex digits, colons, an IPv4 tail).
    private static func isIPLiteral(_ name: Substring.UTF8View) -> Bool {
        if name.contains(UInt8(ascii: ":")) {
            return name.allSatisfy { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") || isHexDigit($0) }
        }
        var parts = 0
        var digits = 0
        for byte in name {
            if byte == UInt8(ascii: ".") {
                guard digits > 0 else { return false }
                parts += 1
                digits = 0
            } else if (48...57).contains(byte), digits < 3 {
                digits += 1
            } else {
                return false
            }
        }
        return parts == 3 && digits > 0
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
    }

    /// ASCII case-insensitive equality, without lowercasing (so without allocating) either.
    package static func equalIgnoringCase(_ a: String, _ b: String) -> Bool {
        equalIgnoringCase(a.utf8[...], b.utf8[...])
    }

    /// ASCII letters compared without their case, every other byte as it is.
    package static func equalIgnoringCase(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        // A header's name and value are native strings: their bytes are compared in place,
        // not through a string view's index one byte at a time.
        let inPlace = a.withContiguousStorageIfAvailable { a in b.withContiguousStorageIfAvailable { b in equalBytesIgnoringCase(a, b) } }
        if let inPlace, let inPlace { return inPlace }
        return a.count == b.count && zip(a, b).allSatisfy { lower($0) == lower($1) }
    }

    private static func equalBytesIgnoringCase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for index in a.indices where a[index] != b[index] && lower(a[index]) != lower(b[index]) { return false }
        return true
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        (65...90).contains(byte) ? byte + 32 : byte
    }

    // MARK: - Origin

    /// The `--cors-origin` entry an `Origin` value is, if any.
    package func corsOrigin(_ origin: String?) -> String? {
        guard !corsOrigins.isEmpty, let origin else { return nil }
        return corsOrigins.first { Self.equalIgnoringCase($0.utf8[...], origin.utf8[...]) }
    }

    /// Whether a state-changing request may go on, from its `Origin`, `Sec-Fetch-Site` and
    /// `Host` values: its own origin, a `--cors-origin`, or no browser's word at all.
    package func allowsOrigin(_ origin: String?, fetchSite: String?, host: String?) -> Bool {
        guard let origin else {
            guard let fetchSite else { return true }
            return !Self.equalIgnoringCase(fetchSite.utf8[...], "cross-site".utf8[...])
        }
        return isOwnOrigin(origin, host: host) || corsOrigin(origin) != nil
    }

    /// `Origin` names the scheme and authority the request came to: the same host as `Host`
    /// and, when `Host` says a port, the same port (a front forwarding `Host $host` drops it).
    /// `null` (a sandboxed frame, a `file:` page, a redirect) is nobody's origin.
    private func isOwnOrigin(_ origin: String, host: String?) -> Bool {
        guard let host else { return false }
        let value = origin.utf8[...]
        let defaultPort: String.UTF8View
        let authority: Substring.UTF8View
        if Self.startsIgnoringCase(value, "http://") {
            authority = value.dropFirst(7)
            defaultPort = "80".utf8
        } else if Self.startsIgnoringCase(value, "https://") {
            authority = value.dropFirst(8)
            defaultPort = "443".utf8
        } else {
            return false
        }
        if authority.contains(UInt8(ascii: "/")) { return false }
        let hostValue = host.utf8[...]
        guard Self.equalIgnoringCase(Self.hostPart(of: authority), Self.hostPart(of: hostValue)) else { return false }
        guard let port = Self.portPart(of: hostValue) else { return true }
        let originPort = Self.portPart(of: authority) ?? defaultPort[...]
        return port.elementsEqual(originPort)
    }

    private static func startsIgnoringCase(_ value: Substring.UTF8View, _ prefix: String) -> Bool {
        let length = prefix.utf8.count
        return value.count >= length && equalIgnoringCase(value.prefix(length), prefix.utf8)
    }

    // MARK: - Content type

    /// `application/json`, with parameters (`; charset=utf-8`) or without.
    private static let jsonTypes = ["application/json", "application/merge-patch+json"]

    package static func isJSON(_ contentType: String) -> Bool {
        var value = contentType.utf8[...]
        while let first = value.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { value = value.dropFirst() }
        // A JSON merge patch (RFC 7396) is JSON too; neither can be sent cross-origin without a preflight.
        for type in jsonTypes where startsIgnoringCase(value, type) {
            let rest = value.dropFirst(type.utf8.count)
            guard let next = rest.first else { return true }
            return next == UInt8(ascii: ";") || next == UInt8(ascii: " ") || next == UInt8(ascii: "\t")
        }
        return false
    }

    // MARK: - Preflight

    /// The request headers a cross-origin page may send.
    package static let allowedHeaders = "Content-Type, Authorization, Last-Event-ID, X-Request-ID, If-Match, If-None-Match"
    /// How long a browser may keep a preflight's answer, in seconds.
    package static let preflightMaxAge = "600"
}

extension RequestPolicy {
    /// A name `--public-host` accepts: letters, digits, `-` and `.`, or an IP address
    /// (IPv6 with or without brackets); no scheme, port or path.
    package static func isHostName(_ name: String) -> Bool {
        let bare = bare(name)
        guard !bare.isEmpty, bare.utf8.count <= 253 else { return false }
        if bare.contains(":") { return isIPLiteral(bare.utf8[...]) }
        return bare.utf8.allSatisfy {
            isHexDigit($0) || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == UInt8(ascii: "-")
                || $0 == UInt8(ascii: ".")
        }
    }

    /// An origin `--cors-origin` accepts: `http` or `https`, a host, perhaps a port, no path.
    package static func isOrigin(_ origin: String) -> Bool {
        let value = normalizedOrigin(origin)
        let authority: Substring
        if value.hasPrefix("http://") {
            authority = value.dropFirst(7)
        } else if value.hasPrefix("https://") {
            authority = value.dropFirst(8)
        } else {
            return false
        }
        guard !authority.contains(where: { "/?#@".contains($0) }) else { return false }
        let host = String(decoding: hostPart(of: authority.utf8), as: UTF8.self)
        var expected = authority.hasPrefix("[") ? "[\(host)]" : host
        if let port = portPart(of: authority.utf8) {
            let text = String(decoding: port, as: UTF8.self)
            guard let number = Int(text), (1...65535).contains(number) else { return false }
            expected += ":" + text
        }
        return expected == authority && isHostName(host)
    }
}
