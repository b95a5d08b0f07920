import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who a request comes from, for the limits every client address shares. The socket's peer
/// is the client, unless the peer is a proxy the operator trusts (`--trusted-proxy`): then
/// the client is the nearest address in `X-Forwarded-For` that is not itself a trusted proxy
/// (or the farthest one given, when all are).
/// A client cannot escape its limits by sending the header itself: from an untrusted peer it
/// is ignored.
package struct TrustedProxies: Sendable {
    /// An address, or a network in CIDR form (`10.0.0.0/8`, `fd00::/8`).
    package struct Network: Sendable, Equatable {
        package let bytes: [UInt8]
        package let prefixLength: Int

        package init?(_ text: String) {
            let parts = text.split(separator: "/", maxSplits: 1)
            guard let address = parts.first, let bytes = Self.parse(String(address)) else { return nil }
            let length = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
            guard let length, (0...bytes.count * 8).contains(length) else { return nil }
            self.bytes = bytes
            self.prefixLength = length
        }

        package func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefixLength
            for (mine, theirs) in zip(bytes, address) where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if mine & mask != theirs & mask { return false }
                remaining -= bits
            }
            return true
        }

        /// The address's bytes (4 for IPv4, 16 for IPv6); IPv4-mapped IPv6 becomes IPv4.
        package static func parse(_ text: String) -> [UInt8]? {
            var v4 = in_addr()
            if inet_pton(AF_INET, text, &v4) == 1 {
                return withUnsafeBytes(of: &v4) { Array($0) }
            }
            var v6 = in6_addr()
            guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
            return bytes
        }
    }

    package let networks: [Network]

    package init(_ networks: [Network] = []) {
        self.networks = networks
    }

    package func trusts(_ address: [UInt8]) -> Bool {
        networks.contains { $0.contains(address) }
    }

    /// The client's address as a key for its limits.
    package func client(peer: SocketAddress?, forwardedFor: [String]) -> String {
        guard let peerText = peer?.ipAddress, let peerBytes = Network.parse(peerText) else { return "local" }
        guard !networks.isEmpty, !forwardedFor.isEmpty, trusts(peerBytes) else { return Self.key(peerBytes) }
        // Right to left: each trusted hop vouches for the one before it. A hop that is not
        // an address ends the walk at the last one that was.
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { Self.address(fromHop: $0) }
        var client = peerBytes
        for hop in hops.reversed() {
            guard let bytes = hop.flatMap(Network.parse) else { break }
            client = bytes
            if !trusts(bytes) { break }
        }
        return Self.key(client)
    }

    /// The address of one `X-Forwarded-For` hop, which proxies write as `a.b.c.d`,
    /// `a.b.c.d:port`, `v6` or `[v6]:port`.
    package static func address(fromHop hop: Substring) -> String? {
        let text = hop.filter { $0 != " " && $0 != "\t" }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        let colons = text.count(where: { $0 == ":" })
        if colons == 1, let colon = text.firstIndex(of: ":") { return String(text[..<colon]) }
        return text.isEmpty ? nil : String(text)
    }

    /// IPv4 addresses count one by one; IPv6 by their /64, the block one subscriber gets,
    /// so one client cannot multiply its limits by using many addresses of its own block.
    package static func key(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map { String($0) }.joined(separator: ".") }
        let hextets = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return hextets.joined(separator: ":") + "::/64"
    }
}
