import Testing

@testable import RefreshHTTP

@Suite struct LoopPlacementTests {
    let alice = LoopPlacement.Client.v4(0x0A00_0001)
    let bob = LoopPlacement.Client.v4(0x0A00_0002)

    @Test func aClientsConnectionsShareALoop() {
        var placement = LoopPlacement(loops: 2)
        let first = placement.connectionOpened(from: alice)
        #expect(placement.connectionOpened(from: alice) == first)
        #expect(placement.connectionOpened(from: alice) == first)
        #expect(placement.openConnections.sorted() == [0, 3])
    }

    @Test func clientsAreDealtToTheLeastBusyLoopInTurn() {
        var placement = LoopPlacement(loops: 3)
        let clients = (1...6).map { LoopPlacement.Client.v4(UInt32($0)) }
        let loops = clients.map { placement.connectionOpened(from: $0) }
        #expect(loops == [0, 1, 2, 0, 1, 2])
        // The least busy loop takes a new client, whatever the turn says.
        placement.connectionClosed(from: clients[4], on: 1)
        #expect(placement.connectionOpened(from: .v4(99)) == 1)
    }

    @Test func aCrowdBehindOneAddressSpreadsInRunsOfAPagesConnections() {
        var placement = LoopPlacement(loops: 2)
        var loops: [Int] = []
        for _ in 0..<100 {
            loops.append(placement.connectionOpened(from: alice))
            let open = placement.openConnections
            #expect(open.max()! - open.min()! <= LoopPlacement.together)
        }
        // Runs of a page's connections, each on the loop the run before left less busy.
        let run = LoopPlacement.together
        #expect(Array(loops.prefix(run)) == Array(repeating: loops[0], count: run))
        #expect(Array(loops[run..<2 * run]) == Array(repeating: 1 - loops[0], count: run))
        #expect(placement.openConnections.allSatisfy { $0 >= 50 - run })
    }

    /// A proxy in front keeps a pool of connections to the server, all from its address: they
    /// are dealt over the loops as evenly as NIO's turn would deal them.
    @Test func aProxysPoolIsSplitOverTheLoops() {
        var placement = LoopPlacement(loops: 2)
        for _ in 0..<(2 * LoopPlacement.together) { _ = placement.connectionOpened(from: alice) }
        #expect(placement.openConnections == [LoopPlacement.together, LoopPlacement.together])
    }

    @Test func aClientFollowsItsNewestConnectionToAnotherLoop() {
        var placement = LoopPlacement(loops: 2)
        let first = placement.connectionOpened(from: alice)
        for _ in 1..<LoopPlacement.together { #expect(placement.connectionOpened(from: alice) == first) }
        // A page's worth on her loop: the next goes to the other, and the one after follows it.
        let moved = placement.connectionOpened(from: alice)
        #expect(moved != first)
        #expect(placement.connectionOpened(from: alice) == moved)
        // A new client goes to the least busy loop, which is now hers.
        #expect(placement.connectionOpened(from: bob) == moved)
        // Closing her connections on the new loop makes room there again.
        placement.connectionClosed(from: alice, on: moved)
        placement.connectionClosed(from: alice, on: moved)
        #expect(placement.connectionOpened(from: alice) == moved)
    }

    /// A client whose loop has become far busier than another (other clients' connections
    /// closed there) no longer takes it.
    @Test func aClientLeavesALoopTheSlackBusierThanTheLeast() {
        var placement = LoopPlacement(loops: 2)
        let others = (1...(2 * LoopPlacement.slack)).map { LoopPlacement.Client.v4(UInt32(100 + $0)) }
        let placed = others.map { ($0, placement.connectionOpened(from: $0)) }
        let mine = placement.connectionOpened(from: alice)
        // Every other client's connection on the other loop closes.
        for (client, loop) in placed where loop != mine { placement.connectionClosed(from: client, on: loop) }
        #expect(placement.openConnections[mine] - placement.openConnections[1 - mine] > LoopPlacement.slack)
        #expect(placement.connectionOpened(from: alice) == 1 - mine)
    }

    @Test func closingFreesThePlaceAndAGoneClientIsForgotten() {
        var placement = LoopPlacement(loops: 2)
        let loop = placement.connectionOpened(from: alice)
        _ = placement.connectionOpened(from: bob)
        placement.connectionClosed(from: alice, on: loop)
        #expect(placement.openConnections[loop] == 0)
        // Alice has no connection left: she is placed as a new client, on the least busy loop.
        #expect(placement.connectionOpened(from: alice) == loop)
    }

    /// Whatever clients open and close, a connection never makes its loop more than the slack
    /// busier than the least busy loop, and the counts add up.
    @Test(arguments: 0..<20) func placementStaysWithinTheSlack(seed: UInt64) {
        var random = Shuffler(seed: seed)
        var placement = LoopPlacement(loops: 1 + Int(random.next() % 4))
        var open: [(LoopPlacement.Client, Int)] = []
        for _ in 0..<2_000 {
            if open.isEmpty || random.next() % 3 != 0 {
                let client = LoopPlacement.Client.v4(UInt32(random.next() % 5))
                let least = placement.openConnections.min()!
                let loop = placement.connectionOpened(from: client)
                #expect(placement.openConnections[loop] <= least + LoopPlacement.slack)
                open.append((client, loop))
            } else {
                let (client, loop) = open.remove(at: Int(random.next() % UInt64(open.count)))
                placement.connectionClosed(from: client, on: loop)
            }
            #expect(placement.openConnections.reduce(0, +) == open.count)
        }
    }

    @Test func clientsAreTheirIPv4AddressOrTheirIPv6Slash64() {
        typealias Client = LoopPlacement.Client
        #expect(Client(address: .v4([10, 0, 0, 1])) == .v4(0x0A00_0001))
        let privacy1: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2] + [1, 2, 3, 4, 5, 6, 7, 8]
        let privacy2: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2] + [9, 9, 9, 9, 9, 9, 9, 9]
        let neighbour: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 3] + [1, 2, 3, 4, 5, 6, 7, 8]
        #expect(Client(address: .v6(privacy1)) == Client(address: .v6(privacy2)))
        #expect(Client(address: .v6(privacy1)) != Client(address: .v6(neighbour)))
        let mapped: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF, 10, 0, 0, 1]
        #expect(Client(address: .v6(mapped)) == .v4(0x0A00_0001))
    }
}

/// Knuth's MMIX linear congruential generator, high bits: enough to shuffle opens and
/// closes, and a failing seed runs again the same.
private struct Shuffler {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }
}
