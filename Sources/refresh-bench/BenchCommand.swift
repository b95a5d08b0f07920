import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// Measures a running server; starts nothing itself. Prints one JSON object per run.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh-bench",
        abstract: "Latency, fan-out and memory of swift-pull-to-refresh or nginx + nchan, over loopback.")

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case ours, nchan
    }

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        /// One channel: sample posted → its event read, one at a time.
        case l1
        /// N channels each posting at 60 Hz.
        case l2
        /// One batch → the items event on N streams of one channel.
        case fanout
        /// Server RSS with N idle streams.
        case memory
        /// One publish → `news` on N streams, each of its own session (nchan: N subscribers
        /// of one channel).
        case news
        /// One edit of an item every page shows → `changes` on N streams, each of its own
        /// session (nchan: one message to N subscribers of one channel).
        case edit
        /// Publishers posting one item at a time for a bounded time, while N sessions listen:
        /// publishes per second acknowledged, their latency, and whether every stream ends at
        /// the feed's final head.
        case publishRate = "publish-rate"
        /// One publish to a feed of one session, timed to its `news` with the server's CPU for
        /// it: first alone on the server, then beside N sessions of another feed with open
        /// streams, which must hear nothing of it.
        case isolation
    }

    @Option(help: "Server kind: ours or nchan.") var target: Kind = .ours
    @Option(help: "Host of the server.") var host = "127.0.0.1"
    @Option(help: "Port of the server.") var port = 8080
    @Option(help: "What to measure: l1, l2, fanout, memory, news, edit, publish-rate, isolation.") var mode: Mode = .l1
    @Option(help: "Samples for l1.") var samples = 10_000
    @Option(help: "Channels (l2) or streams (fanout, memory, news, edit, publish-rate; isolation: the crowd's).") var count = 100
    @Option(help: "Seconds of dragging for l2, of publishing for publish-rate.") var seconds = 20.0
    @Option(help: "Batches for fanout, publishes for news and for each half of isolation, edits for edit.") var rounds = 5
    @Option(help: "Instances the sessions are spread over in turn, HOST:PORT,HOST:PORT,… (news, publish-rate); default --host and --port.")
    var targets: Endpoints?
    @Option(
        help:
            "Instances published on, HOST:PORT,…: news publishes on the first, publish-rate deals its publishers over them in turn. Default: the first of --targets."
    )
    var publishTo: Endpoints?
    @Option(help: "Concurrent publishers for publish-rate, each on a kept-alive connection of its own.") var publishers = 4
    @Option(
        help:
            "Feeds publish-rate writes to (1: the server's default feed; more: feeds of their own, the sessions and the publishers dealt over them in turn)."
    ) var feeds = 1
    @Option(
        help:
            "A token our server's sessions are created and their streams opened with (Authorization: Bearer), for a server with --auth-key."
    ) var token: String?
    @Option(help: "The feed l1's session reads (ours; default: the server's default feed).") var sessionFeed: String?
    @Option(help: "PID of the server, to read its CPU time and memory; repeat it for every instance of a cluster.")
    var serverPid: [Int] = []
    @Option(
        help:
            "PID of the database's main process (PostgreSQL's postmaster): its CPU and that of every process under it is read beside the server's; repeatable."
    )
    var databasePid: [Int] = []

    /// The instances sessions live on, session i on the i-th mod n.
    var sessionTargets: Endpoints { targets ?? Endpoints([Endpoint(host: host, port: port)]) }
    var publishTargets: Endpoints { publishTo ?? Endpoints([sessionTargets[0]]) }

    func validate() throws {
        if mode != .news, mode != .publishRate, sessionTargets.count > 1 || publishTargets.count > 1 {
            throw ValidationError("--targets and --publish-to name several instances only for news and publish-rate")
        }
        if mode == .publishRate, target != .ours {
            throw ValidationError("publish-rate measures our server only: it checks the feed heads its streams are told")
        }
        if mode == .isolation, target != .ours {
            throw ValidationError("isolation measures our server against itself: the same publish with and without a crowd")
        }
    }

    func run() async throws {
        let name = publishTargets[0].description
        let server: any Target = target == .ours ? OurServer(host: name, token: token) : Nchan(host: name)
        var result = Figures()
        result["target"] = server.name
        result["mode"] = mode.rawValue
        if sessionTargets.count > 1 || publishTo != nil {
            result["targets"] = sessionTargets.all.map(\.description)
            result["publishTargets"] = publishTargets.all.map(\.description)
        }
        let cpuBefore = Self.cpuSeconds(serverPid)
        let started = ContinuousClock.now
        switch mode {
        case .l1: try await latency(server, into: &result)
        case .l2: try await manyDragging(server, into: &result)
        case .fanout: try await fanOut(server, into: &result)
        case .memory: try await memory(server, into: &result)
        case .news: try await news(server, into: &result)
        case .edit: try await news(server, edits: true, into: &result)
        case .publishRate: try await publishRate(server, into: &result)
        case .isolation: try await isolation(server, into: &result)
        }
        if let cpuBefore, let cpuAfter = Self.cpuSeconds(serverPid) {
            let wall = Self.seconds(ContinuousClock.now - started)
            result["serverCpuSeconds"] = cpuAfter - cpuBefore
            result["serverCpuPercent"] = (cpuAfter - cpuBefore) / wall * 100
        }
        print(try result.json())
        if let broken: String = result["brokenInvariant"] {
            // The figures are printed all the same, so the run that broke it can be read.
            FileHandle.standardError.write(Data("refresh-bench: \(broken)\n".utf8))
            throw ExitCode.failure
        }
    }
}
