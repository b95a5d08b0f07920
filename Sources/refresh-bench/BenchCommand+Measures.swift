import ArgumentParser
import Foundation
import Histogram
import NIOCore

/// Figures from histograms, durations and the server's /proc.
extension BenchCommand {
    static func summarize(_ histogram: Histogram<UInt64>, into result: inout Figures) {
        result["count"] = histogram.totalCount
        result["p50us"] = histogram.valueAtPercentile(50)
        result["p99us"] = histogram.valueAtPercentile(99)
        result["maxUs"] = histogram.max
    }

    static func microseconds(_ duration: Duration) -> UInt64 {
        UInt64(max(0, duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    /// User plus system CPU of processes, added up; nil without any, or if one is gone.
    static func cpuSeconds(_ pids: [Int]) -> Double? {
        guard !pids.isEmpty else { return nil }
        var total = 0.0
        for pid in pids {
            guard let seconds = cpuSeconds(pid) else { return nil }
            total += seconds
        }
        return total
    }

    /// User plus system CPU of a process, from /proc.
    static func cpuSeconds(_ pid: Int) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func rssKiB(_ pid: Int) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}
