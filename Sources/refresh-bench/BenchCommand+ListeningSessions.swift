import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// Sessions that listen for news, each with an open stream, shared by N, E, publish-rate and isolation.
extension BenchCommand {
    /// N sessions, each with its own stream and a first page shown (nchan: N subscribers of
    /// one channel), spread over the session targets in turn: where news and publish-rate
    /// start from.
    struct ListeningSessions {
        let channels: [String]
        let streams: [any Channel]
        let board: ArrivalBoard

        func close() {
            for stream in streams { stream.close(promise: nil) }
        }
    }

    /// Sets N sessions up. Not measured but bounded: a few connections at once, and every
    /// stage has a deadline; each stage's time goes into `result`.
    /// `token`: what each stream waits for (default: the server's news).
    func listeningSessions(
        _ server: any Target, count: Int? = nil, feed: String? = nil, heads: HeadBoard? = nil, token: [UInt8]? = nil,
        into result: inout Figures
    ) async throws -> ListeningSessions {
        let (count, targets) = (count ?? self.count, sessionTargets)
        let setupLimit = Duration.seconds(30) + .milliseconds(10 * Int64(count))
        let lanes = 32
        let clock = ContinuousClock()
        var stage = clock.now
        func setupTime() -> Double {
            defer { stage = clock.now }
            return Self.seconds(clock.now - stage)
        }

        let channels: [String]
        if server.newsChannelPerStream {
            channels = try await Self.withTimeout(setupLimit, "making \(count) sessions") {
                try await Self.overConnections(count: count, lanes: lanes, targets: targets) { control, index in
                    try await server.makeChannel(on: control, index: index, hearsNews: true, feed: feed)
                }
            }
        } else {
            channels = try await Connection.with(host: targets[0].host, port: targets[0].port) {
                [try await server.makeChannel(on: $0, index: 0, hearsNews: true, feed: feed)]
            }
        }
        result["setupChannelsSeconds"] = setupTime()

        let board = ArrivalBoard()
        let readyTokens = [server.subscribedToken] + (server.firstPageToken.map { [$0] } ?? [])
        let streams = try await openStreams(
            count: count, board: board, readyTokens: readyTokens, token: token ?? server.newsToken, server: server,
            timeout: setupLimit, heads: heads
        ) { channels[$0 % channels.count] }
        let sessions = ListeningSessions(channels: channels, streams: streams, board: board)
        result["setupStreamsSeconds"] = setupTime()

        do {
            if server.firstPageToken != nil {
                _ = try await Self.withTimeout(setupLimit, "asking \(count) sessions for a first page") {
                    try await Self.overConnections(count: channels.count, lanes: lanes, targets: targets) { control, index in
                        guard let request = server.showFirstPage(channels[index]) else { return 0 }
                        try await control.send(request)
                        let (status, body) = try await control.response()
                        guard (200..<300).contains(status) else {
                            throw BenchError("asking for a first page answered \(status): \(body.prefix(200))")
                        }
                        return status
                    }
                }
                guard await board.waitReady(count, stage: 1, timeout: setupLimit) else {
                    throw BenchError("only \(board.readyCount(stage: 1)) of \(count) streams showed a first page within \(setupLimit)")
                }
                result["setupFirstPageSeconds"] = setupTime()
            }
            try await Task.sleep(for: .milliseconds(500))
        } catch {
            sessions.close()
            throw error
        }
        return sessions
    }
}
