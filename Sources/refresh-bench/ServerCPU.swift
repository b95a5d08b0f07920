import Foundation
import Synchronization

/// Where a process's CPU time is read from.
enum CPUClock: String, Sendable {
    /// The sum over /proc/PID/task/*/schedstat of the first field: the nanoseconds each
    /// thread has run, as the scheduler counts them.
    case schedstat
    /// utime + stime of /proc/PID/stat, in clock ticks (10 ms at the usual 100 Hz): only
    /// where schedstat cannot be read (a kernel built without CONFIG_SCHED_INFO).
    case stat
}

/// One reading of a process's CPU time: nanoseconds per thread (schedstat), or one total
/// for the process (stat).
struct CPUReading: Sendable {
    fileprivate let threads: [String: UInt64]

    /// CPU time used since `earlier`, thread by thread: a thread that starts in between counts
    /// from zero (so does one whose id was reused, seen by its count going down), a thread
    /// that ends in between drops out with only its own share.
    func since(_ earlier: CPUReading) -> UInt64 {
        threads.reduce(0) { total, thread in
            let before = earlier.threads[thread.key] ?? 0
            return total + (thread.value >= before ? thread.value - before : thread.value)
        }
    }
}

/// Reads the CPU time of the processes under test, added up: one server, every instance of
/// a cluster, or a database with every process it forks. Each is read with all its threads,
/// with the most precise clock that works for the first of them.
struct CPUProbe: Sendable {
    /// Processes read with their threads; a reading fails if one of them is gone.
    let processes: [Int]
    /// Processes read with every process under them, listed anew at each reading:
    /// PostgreSQL's postmaster forks a backend per connection, and they come and go.
    let trees: [Int]
    let clock: CPUClock

    init?(processes: [Int], trees: [Int] = []) {
        guard let first = processes.first ?? trees.first else { return nil }
        self.processes = processes
        self.trees = trees
        if Self.read(first, .schedstat) != nil {
            clock = .schedstat
        } else if Self.read(first, .stat) != nil {
            clock = .stat
        } else {
            return nil
        }
    }

    func read() -> CPUReading? {
        var threads: [String: UInt64] = [:]
        for pid in processes {
            guard let reading = Self.read(pid, clock) else { return nil }
            threads.merge(reading) { $1 }
        }
        // A process under a tree that ended between the listing and the read is skipped.
        for pid in Self.descendants(of: trees) {
            if let reading = Self.read(pid, clock) { threads.merge(reading) { $1 } }
        }
        return threads.isEmpty ? nil : CPUReading(threads: threads)
    }

    /// Milliseconds of CPU between two readings; nil when one is missing.
    static func milliseconds(from start: CPUReading?, to end: CPUReading?) -> Double? {
        guard let start, let end else { return nil }
        return Double(end.since(start)) / 1_000_000
    }

    /// Nanoseconds each thread of `pid` has run, keyed `PID/TID` (stat: one total, keyed `PID`).
    private static func read(_ pid: Int, _ clock: CPUClock) -> [String: UInt64]? {
        switch clock {
        case .schedstat:
            guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
            var threads: [String: UInt64] = [:]
            for task in tasks {
                // A thread that ended between the listing and the read is skipped.
                guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8),
                    let first = text.split(separator: " ").first, let ran = UInt64(first)
                else { continue }
                threads["\(pid)/\(task)"] = ran
            }
            return threads.isEmpty ? nil : threads
        case .stat:
            return BenchCommand.cpuSeconds(pid).map { ["\(pid)": UInt64(($0 * 1e9).rounded())] }
        }
    }

    /// `roots` and every process under them, from the parent each process names in /proc.
    private static func descendants(of roots: [Int]) -> [Int] {
        guard !roots.isEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var children: [Int: [Int]] = [:]
        for entry in entries {
            guard let pid = Int(entry), let parent = parentPID(pid) else { continue }
            children[parent, default: []].append(pid)
        }
        var found: [Int] = []
        var next = roots
        while let pid = next.popLast() {
            found.append(pid)
            next += children[pid] ?? []
        }
        return found
    }

    private static func parentPID(_ pid: Int) -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
            return nil
        }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int(fields[1]) : nil
    }

    /// Writes the server CPU per sample between two readings into `result`; nothing when a
    /// reading is missing.
    func record(from start: CPUReading?, to end: CPUReading?, samples: Int, into result: inout Figures) {
        guard let start, let end, samples > 0 else { return }
        result["serverCpuPerSampleUs"] = Double(end.since(start)) / 1000 / Double(samples)
        result["serverCpuClock"] = clock.rawValue
    }
}

/// The measured window of L2, shared by its sessions. It opens just before the first drag;
/// at the end every session waits, with its connections still open, until all have stopped
/// dragging, the server's CPU is read once, and only then do they close: closing
/// connections is not part of the window.
final class MeasuredWindow: Sendable {
    private struct State {
        var stopped = 0
        var lateSessions = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var cpuAtEnd: CPUReading?
        var failed = false
    }

    let opens: ContinuousClock.Instant
    private let sessions: Int
    private let probe: CPUProbe?
    private let state = Mutex(State())

    init(opens: ContinuousClock.Instant, sessions: Int, probe: CPUProbe?) {
        self.opens = opens
        self.sessions = sessions
        self.probe = probe
    }

    /// Notes a session whose setup ended after the window opened: its setup is then counted.
    func settled() {
        if ContinuousClock.now > opens { state.withLock { $0.lateSessions += 1 } }
    }

    /// Called by each session once it has stopped dragging; returns when all have.
    func stop() async {
        enum Outcome { case wait, pass, last }
        await withCheckedContinuation { continuation in
            let outcome = state.withLock { state -> Outcome in
                if state.failed { return .pass }
                state.waiters.append(continuation)
                state.stopped += 1
                return state.stopped == sessions ? .last : .wait
            }
            switch outcome {
            case .wait:
                break
            case .pass:
                continuation.resume()
            case .last:
                let reading = probe?.read()
                let waiters = state.withLock { state in
                    state.cpuAtEnd = reading
                    defer { state.waiters = [] }
                    return state.waiters
                }
                for waiter in waiters { waiter.resume() }
            }
        }
    }

    /// Lets every session through at once, without a reading: one of them failed.
    func abandon() {
        let waiters = state.withLock { state in
            state.failed = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The server's CPU when the last session stopped; nil if a session failed.
    var cpuAtEnd: CPUReading? { state.withLock { $0.failed ? nil : $0.cpuAtEnd } }
    var lateSessions: Int { state.withLock { $0.lateSessions } }
}

/// The server's processes (every instance) and the database's, read at the same moments, so
/// a figure can say where a publish's CPU went.
struct CPUProbes: Sendable {
    let server: CPUProbe?
    let database: CPUProbe?

    struct Reading: Sendable {
        let server: CPUReading?
        let database: CPUReading?
    }

    /// Milliseconds of CPU between two readings.
    struct Span: Sendable {
        var server: Double?
        var database: Double?
        /// Both, or whichever was read.
        var total: Double? {
            guard server != nil || database != nil else { return nil }
            return (server ?? 0) + (database ?? 0)
        }
    }

    init(server: [Int], database: [Int]) {
        self.server = CPUProbe(processes: server)
        self.database = CPUProbe(processes: [], trees: database)
    }

    func read() -> Reading { Reading(server: server?.read(), database: database?.read()) }

    func span(from start: Reading, to end: Reading) -> Span {
        Span(
            server: CPUProbe.milliseconds(from: start.server, to: end.server),
            database: CPUProbe.milliseconds(from: start.database, to: end.database))
    }

    /// The clocks used, for the JSON line.
    func record(into result: inout Figures) {
        if let server { result["serverCpuClock"] = server.clock.rawValue }
        if let database { result["databaseCpuClock"] = database.clock.rawValue }
    }
}
