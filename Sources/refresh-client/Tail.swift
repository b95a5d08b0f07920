import ArgumentParser
import Dispatch
import Foundation
import RefreshClient
import RefreshEngine

struct Tail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follows a feed: prints what it gains as it arrives, until interrupted.",
        discussion: """
            The session asks for new items at once (`news: live`); news that comes instead (a \
            refresh was running) is printed, then refreshed, which brings its items. Edits and \
            removals of items it has printed come as `changes`. Each `items`, `news` or \
            `changes` event is one line of JSON with --json, else one line per item.

            Example: refresh-client tail --feed team.eng --json | jq -r '.items[]?.title'
            """)

    @OptionGroup var options: ServerOptions

    @Flag(help: "One JSON object per event, as the stream's events are named.")
    var json = false

    @Option(help: "Exit (0) after this many `items`, `news` or `changes` events.")
    var count: Int?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        try await reporting {
            let output = Output(json: json)
            try await options.withClient { client in
                let opened = Opened()
                let end = await Interruption.race { [count, feed = options.feed] in
                    let session = try await client.session(feed: feed, config: .init(news: .live), attempts: 3)
                    await opened.hold(session)
                    try await Self.follow(session, output, count: count)
                }
                await opened.close()
                switch end {
                case .finished(.success): break
                case .finished(.failure(let error)): throw error
                case .interrupted(let signal): throw ExitCode(128 + signal)
                }
            }
        }
    }

    private static func follow(_ session: RemoteSession, _ output: Output, count: Int?) async throws {
        var seen = 0
        for try await event in session.events {
            switch event {
            case .items(let update) where update.operation == .prepend:
                try output.event(event)
                seen += 1
            case .news:
                try output.event(event)
                seen += 1
                if seen != count { try await session.refresh() }
            case .changes:
                try output.event(event)
                seen += 1
            case .reset, .replaced:
                try output.event(event)
            case .items, .state, .progress, .done:
                // A first page (tail shows what arrives), and the gesture's own events.
                continue
            }
            if seen == count { return }
        }
    }
}

/// The session a command opened inside ``Interruption/race(_:)``, for closing it whichever
/// way the race ended (an interruption may come before the session exists).
actor Opened {
    private(set) var session: RemoteSession?

    func hold(_ session: RemoteSession) { self.session = session }

    func close() async { await session?.close() }
}

/// Ends a command's work on SIGINT or SIGTERM, so that it can close its session before the
/// program ends; once the race is over, a second signal ends the program at once.
enum Interruption {
    enum End<Value: Sendable>: Sendable {
        case finished(Result<Value, any Error>)
        case interrupted(Int32)
    }

    static func race<Value: Sendable>(_ work: @escaping @Sendable () async throws -> Value) async -> End<Value> {
        await withTaskGroup(of: End<Value>.self) { group in
            group.addTask {
                do { return .finished(.success(try await work())) } catch { return .finished(.failure(error)) }
            }
            group.addTask {
                for await signal in signals() { return .interrupted(signal) }
                return .finished(.failure(CancellationError()))
            }
            let end = await group.next() ?? .finished(.failure(CancellationError()))
            group.cancelAll()
            return end
        }
    }

    private static func signals() -> AsyncStream<Int32> {
        AsyncStream { continuation in
            // Never changed after this, and a dispatch source may be cancelled from any
            // thread: Dispatch only has not marked its types Sendable.
            nonisolated(unsafe) let sources = [SIGINT, SIGTERM].map { number in
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { continuation.yield(number) }
                source.resume()
                return source
            }
            continuation.onTermination = { _ in
                for source in sources { source.cancel() }
                for number in [SIGINT, SIGTERM] { signal(number, SIG_DFL) }
            }
        }
    }
}
