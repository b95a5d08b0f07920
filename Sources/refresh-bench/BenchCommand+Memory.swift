import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// M: the server's memory with N idle streams.
extension BenchCommand {
    func memory(_ server: any Target, into result: inout Figures) async throws {
        guard let pid = serverPid.first else { throw BenchError("memory needs --server-pid") }
        let before = Self.rssKiB(pid)
        let channels = try await Connection.with(host: host, port: port) { control in
            var channels: [String] = []
            for index in 0..<count { channels.append(try await server.makeChannel(on: control, index: index, hearsNews: true)) }
            return channels
        }
        let board = ArrivalBoard()
        let streams = try await openStreams(count: count, board: board, token: Array("never".utf8), server: server) { channels[$0] }
        try await Task.sleep(for: .seconds(2))
        let after = Self.rssKiB(pid)
        result["rssBeforeKiB"] = before
        result["rssAfterKiB"] = after
        result["perStreamKiB"] = Double(after - before) / Double(count)
        result["streams"] = count
        for stream in streams { stream.close(promise: nil) }
    }
}
