import Foundation
import Synchronization
import Testing

/// A TCP proxy in front of PostgreSQL that reads the frontend's messages and, for the
/// `COMMIT`s it is told to, drops the connection: before forwarding the `COMMIT` (so the
/// transaction rolls back), or right after (so it commits, and its answer is lost). It has
/// other faults too (``Faults``): going silent, refusing new connections, and making the
/// statements that contain a given text fail on a connection that stays up.
///
/// It is `Tests/support/pgproxy.py`, the proxy the chaos scenarios use, run in its command
/// mode by the `python3` on the `PATH`: each change is one line on its input, and returns
/// once the proxy has answered it, so a fault is in force when its setter returns. It stops
/// at ``close()``, or when the tests' process ends and with it the proxy's input.
final class CommitCuttingProxy: Sendable {
    /// A `COMMIT`'s fate, spelt as the proxy spells it.
    enum Cut: String, Hashable, Sendable {
        case pass
        case beforeCommit = "before"
        case afterCommit = "after"
        /// Forwarded, and then nothing PostgreSQL says reaches the client, whose connection
        /// stays open.
        case silencedAfterCommit = "silent"
    }

    /// What to do with each `COMMIT`, in turn: the pattern repeats; an empty one passes all.
    final class Policy: Sendable {
        private let commands: Commands

        fileprivate init(commands: Commands) {
            self.commands = commands
        }

        func set(_ pattern: [Cut]) {
            commands.send((["cut"] + pattern.map(\.rawValue)).joined(separator: " "))
        }

        /// How many `COMMIT`s met each fate since the last ``set(_:)``; a fate none met is
        /// not there.
        var counts: [Cut: Int] {
            let answer = commands.send("counts")
            guard let counts = try? JSONDecoder().decode([String: Int].self, from: Data(answer.utf8)) else {
                Issue.record("the proxy's counts are not JSON: \(answer)")
                return [:]
            }
            return Dictionary(uniqueKeysWithValues: counts.compactMap { fate, count in Cut(rawValue: fate).map { ($0, count) } })
                .filter { $0.value > 0 }
        }
    }

    final class Faults: Sendable {
        private struct State {
            var silent = false
            var refusing = false
            var failing: String?
        }

        private let commands: Commands
        /// What was last said to the proxy, which only this changes.
        private let state = Mutex(State())

        fileprivate init(commands: Commands) {
            self.commands = commands
        }

        /// While set, every byte either way is dropped and nothing is closed, as on a network
        /// that stopped answering without a reset.
        var silent: Bool {
            get { state.withLock { $0.silent } }
            set { change(\.silent, to: newValue, saying: "silent \(newValue ? "on" : "off")") }
        }
        /// While set, a new connection is closed as soon as it is accepted.
        var refusing: Bool {
            get { state.withLock { $0.refusing } }
            set { change(\.refusing, to: newValue, saying: "refuse \(newValue ? "on" : "off")") }
        }
        /// A statement whose text contains this is sent as one that fails (division by zero)
        /// with the same parameters, and answered with PostgreSQL's error.
        var failing: String? {
            get { state.withLock { $0.failing } }
            set { change(\.failing, to: newValue, saying: "fail" + (newValue.map { " \($0)" } ?? "")) }
        }

        private func change<Value>(_ fault: WritableKeyPath<State, Value>, to value: Value, saying command: String) {
            state.withLock { state in
                state[keyPath: fault] = value
                commands.send(command)
            }
        }
    }

    let port: Int
    let policy: Policy
    let faults: Faults
    private let commands: Commands

    private init(port: Int, commands: Commands) {
        self.port = port
        self.commands = commands
        self.policy = Policy(commands: commands)
        self.faults = Faults(commands: commands)
    }

    static func start(to host: String, port: Int) async throws -> CommitCuttingProxy {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/pgproxy.py")
        let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let commands = try Commands.run(["python3", script.path, "--target", target])
        let first = commands.firstLine()
        guard let listening = Int(first) else {
            await commands.finish()
            throw TestFailure("pgproxy.py (run by the python3 on the PATH) did not say its port: \(first)")
        }
        return CommitCuttingProxy(port: listening, commands: commands)
    }

    /// Ends the proxy's input, which stops it, and waits until it has: every connection
    /// through it is closed.
    func close() async {
        await commands.finish()
    }
}

/// The proxy's process and its two pipes: one command at a time, each with its one-line answer.
private final class Commands: Sendable {
    private struct Pipes {
        let input: FileHandle
        let output: FileHandle
        /// Read from `output` and not yet answered: a line may arrive in pieces.
        var unread = Data()

        mutating func readLine() throws -> String {
            while true {
                if let end = unread.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: unread[unread.startIndex..<end], as: UTF8.self)
                    unread = Data(unread[(end + 1)...])
                    return line
                }
                let more = output.availableData
                guard !more.isEmpty else { throw TestFailure("pgproxy.py ended") }
                unread.append(more)
            }
        }
    }

    private let process: Process
    private let pipes: Mutex<Pipes>
    private let exited: AsyncStream<Void>

    private init(process: Process, pipes: Pipes, exited: AsyncStream<Void>) {
        self.process = process
        self.pipes = Mutex(pipes)
        self.exited = exited
    }

    static func run(_ arguments: [String]) throws -> Commands {
        // A proxy that ended makes a command fail, rather than the tests' process die of
        // writing to its input.
        signal(SIGPIPE, SIG_IGN)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        let (exited, exit) = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in exit.finish() }
        try process.run()
        return Commands(
            process: process, pipes: Pipes(input: input.fileHandleForWriting, output: output.fileHandleForReading), exited: exited)
    }

    /// The line the proxy says before any command, or why there is none.
    func firstLine() -> String {
        pipes.withLock { pipes in
            do { return try pipes.readLine() } catch { return "\(error)" }
        }
    }

    /// Says `command` and answers the proxy's reply; a command it refuses, or one it is not
    /// there to answer, fails the test.
    @discardableResult
    func send(_ command: String) -> String {
        pipes.withLock { pipes in
            do {
                try pipes.input.write(contentsOf: Data((command + "\n").utf8))
                let answer = try pipes.readLine()
                if answer.hasPrefix("error") { Issue.record("pgproxy.py refused \(command): \(answer)") }
                return answer
            } catch {
                Issue.record("pgproxy.py did not answer \(command): \(error)")
                return ""
            }
        }
    }

    /// Ends the proxy's input and waits until its process has ended.
    func finish() async {
        pipes.withLock { pipes in try? pipes.input.close() }
        for await _ in exited {}
    }
}
