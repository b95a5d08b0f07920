/// Which event loop a new connection joins: a client's connections together, the loops
/// balanced.
///
/// A page reads its stream on one connection and posts its samples on another. When the two
/// are served by different threads, every sample wakes the other thread (an `eventfd` write
/// and a context switch, about a third of what a sample costs); NIO deals new connections to
/// its loops in turn, so that happens to most pages. Here a client's connection goes to the
/// loop its newest open connection is on, as long as the client has fewer than ``together``
/// open there and that loop carries no more than ``slack`` connections beyond the least busy
/// loop; otherwise it goes to the least busy loop (in turn, among equals), and the client's
/// next connections follow it there. A page's few connections share a thread, and a client
/// with many (a proxy in front with its pool of upstream connections, a carrier's NAT, an
/// office) spreads over every loop in runs of at most `together`, as evenly as NIO's turn
/// would.
///
/// A client is its address: IPv4 as is, IPv6 by its /64 (the block one subscriber gets), as
/// the per-client limits count it. Pure state: the listener feeds it every connection opened
/// and closed.
package struct LoopPlacement: Sendable {
    /// A connection's client, as placement tells clients apart.
    package enum Client: Hashable, Sendable {
        case v4(UInt32)
        case v6(UInt64)
        /// No IP peer (a Unix socket): all such connections are one client.
        case other
    }

    /// How many of a client's connections one loop takes in a row: as many as a browser opens
    /// to one host over HTTP/1.1, so a page's stream and the connections its samples go on
    /// meet.
    package static let together = 6

    /// How many connections more than the least busy loop a client's loop may carry with its
    /// client's newest connection.
    package static let slack = 8

    /// Open connections per loop.
    private var open: [Int]
    /// Each client with open connections: the loop its newest went to, how many it has open
    /// there, and how many in all.
    private var clients: [Client: (loop: Int, there: Int, open: Int)] = [:]
    /// Where the search for the least busy loop starts, turning, so ties are dealt in turn.
    private var turn = 0

    package init(loops: Int) {
        precondition(loops > 0, "placing connections needs a loop")
        open = Array(repeating: 0, count: loops)
    }

    /// Open connections on each loop.
    package var openConnections: [Int] { open }

    /// A connection from `client` was accepted: answers the index of its loop.
    package mutating func connectionOpened(from client: Client) -> Int {
        let least = open.min()!
        let known = clients[client]
        let loop: Int
        if let known, known.there < Self.together, open[known.loop] < least + Self.slack {
            loop = known.loop
        } else {
            loop = leastBusyLoop(least)
        }
        open[loop] += 1
        let there = known.map { $0.loop == loop ? $0.there : 0 } ?? 0
        clients[client] = (loop, there + 1, (known?.open ?? 0) + 1)
        return loop
    }

    /// A connection from `client` on `loop` closed.
    package mutating func connectionClosed(from client: Client, on loop: Int) {
        open[loop] -= 1
        guard let known = clients[client] else { return }
        if known.open > 1 {
            clients[client] = (known.loop, known.loop == loop ? max(0, known.there - 1) : known.there, known.open - 1)
        } else {
            clients[client] = nil
        }
    }

    private mutating func leastBusyLoop(_ least: Int) -> Int {
        for offset in open.indices {
            let loop = (turn + offset) % open.count
            if open[loop] == least {
                turn = (loop + 1) % open.count
                return loop
            }
        }
        preconditionFailure("the least busy loop carries the fewest connections")
    }
}

extension LoopPlacement.Client {
    /// The client of a peer address given as `sockaddr` bytes (`sockaddr_in` or `sockaddr_in6`).
    package init(address: SocketAddressBytes) {
        switch address {
        case .v4(let bytes):
            self = .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case .v6(let bytes):
            // An IPv4-mapped address is its IPv4 client.
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                self = .v4(bytes[12...].reduce(0) { $0 << 8 | UInt32($1) })
            } else {
                self = .v6(bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
            }
        case .other:
            self = .other
        }
    }

    /// A peer's address bytes, in network order.
    package enum SocketAddressBytes: Sendable {
        case v4([UInt8])
        case v6([UInt8])
        case other
    }
}
