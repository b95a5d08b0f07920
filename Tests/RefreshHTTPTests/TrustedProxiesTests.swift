import NIOCore
import Testing

@testable import RefreshHTTP

@Suite struct TrustedProxiesTests {
    func client(_ peer: String, _ forwarded: [String], trusting trusted: [String]) throws -> String {
        let proxies = TrustedProxies(trusted.compactMap(TrustedProxies.Network.init))
        return proxies.client(peer: try SocketAddress(ipAddress: peer, port: 1), forwardedFor: forwarded)
    }

    @Test func theHeaderIsIgnoredFromAnUntrustedPeer() throws {
        #expect(try client("203.0.113.9", ["198.51.100.1"], trusting: []) == "203.0.113.9")
        #expect(try client("203.0.113.9", ["198.51.100.1"], trusting: ["10.0.0.0/8"]) == "203.0.113.9")
    }

    @Test func aTrustedProxyNamesTheNearestUntrustedHop() throws {
        #expect(try client("10.0.0.2", ["198.51.100.1, 10.0.0.7"], trusting: ["10.0.0.0/8"]) == "198.51.100.1")
        // A client cannot push itself out of view by adding hops of its own on the left.
        #expect(try client("10.0.0.2", ["1.2.3.4, 198.51.100.1"], trusting: ["10.0.0.0/8"]) == "198.51.100.1")
    }

    @Test(arguments: ["198.51.100.1:4711", "[2001:db8::1]:443", " 2001:db8::1 "])
    func hopsWithPortsOrBracketsAreUnderstood(hop: String) throws {
        let expected = hop.contains("198.51") ? "198.51.100.1" : "2001:db8:0:0::/64"
        #expect(try client("10.0.0.2", [hop], trusting: ["10.0.0.0/8"]) == expected)
    }

    @Test func anIPv6ClientCountsByItsSlash64() throws {
        let one = try client("2001:db8:1:2::1", [], trusting: [])
        let other = try client("2001:db8:1:2:ffff::9", [], trusting: [])
        #expect(one == other)
        #expect(try client("2001:db8:1:3::1", [], trusting: []) != one)
    }

    @Test func aNetworkIsParsedOrRefused() {
        #expect(TrustedProxies.Network("10.0.0.0/8") != nil)
        #expect(TrustedProxies.Network("::1") != nil)
        #expect(TrustedProxies.Network("10.0.0.0/33") == nil)
        #expect(TrustedProxies.Network("proxy.example") == nil)
    }
}
