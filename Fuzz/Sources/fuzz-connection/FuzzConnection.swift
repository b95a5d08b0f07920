import Dispatch
import Foundation
import FuzzSupport
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import RefreshEngine
import RefreshHTTP
import Synchronization

@testable import RefreshFeed
@testable import RefreshServer

/// One connection, bytes in and bytes out: NIO's request decoder and ``ConnectionHandler``
/// on a testing channel, in front of the real router over an in-memory feed. The input is
/// what a client sends, cut into reads and interleaved with what else can happen to a
/// connection (see ``Step``). Every answer written must be well-formed HTTP/1.1 with no
/// status of 500 or above that the input could cause, and once the client has closed its
/// side and every deadline has passed, the connection must be closed.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConnection(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let steps = Step.parse(Array(UnsafeBufferPointer(start: start, count: count)))
    let done = DispatchSemaphore(value: 0)
    Task {
        await Scenario.run(steps)
        done.signal()
    }
    done.wait()
    return 0
}

/// What happens to the connection. In the input, `0xFF` and a letter stand for an event
/// (`w` only ends a read: the bytes after it are another); the bytes between events are one
/// read. `{sid}` in the bytes is the id of an open session.
enum Step {
    /// The client's bytes, arriving as one read.
    case read([UInt8])
    /// `0xFF 'h'`: the client closes its side.
    case inputClosed
    /// `0xFF 't'`: time passes beyond every deadline.
    case timePasses
    /// `0xFF 'q'`: the server starts stopping.
    case quiesce
    /// `0xFF 's'`: the client waits until the router has answered what it has.
    case settle

    static func parse(_ input: [UInt8]) -> [Step] {
        var steps: [Step] = []
        var pending: [UInt8] = []
        var index = 0
        while index < input.count {
            let byte = input[index]
            index += 1
            let event: Step?
            switch index < input.count && byte == 0xFF ? input[index] : 0 {
            case UInt8(ascii: "w"): event = nil
            case UInt8(ascii: "h"): event = .inputClosed
            case UInt8(ascii: "t"): event = .timePasses
            case UInt8(ascii: "q"): event = .quiesce
            case UInt8(ascii: "s"): event = .settle
            default:
                pending.append(byte)
                continue
            }
            index += 1
            if !pending.isEmpty { steps.append(.read(pending)) }
            pending = []
            if let event { steps.append(event) }
        }
        if !pending.isEmpty { steps.append(.read(pending)) }
        return steps
    }
}

/// Files are read once: `Public/` of the repository this harness lives in.
private let files: StaticFiles = {
    let repository = #filePath.split(separator: "/").dropLast(4).joined(separator: "/")
    return try! StaticFiles(directory: "/" + repository + "/Public")
}()

private let configuration: ServerConfiguration = {
    var configuration = ServerConfiguration()
    configuration.maxBodyBytes = 2048
    configuration.maxHeadBytes = 1024
    configuration.maxSessionsPerClient = 8
    configuration.maxStreamsPerClient = 2
    configuration.minimumActionDuration = .zero
    configuration.actionTimeout = .seconds(1)
    // Preflights from it are answered, so the CORS path is fuzzed too.
    configuration.corsOrigins = ["http://app.example"]
    return configuration
}()

/// `FUZZ_VERBOSE=1`: print the statuses each input was answered with.
private let verbose = ProcessInfo.processInfo.environment["FUZZ_VERBOSE"] == "1"

private let logger: Logger = {
    var logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
    logger.logLevel = .critical
    return logger
}()

/// A server of its own for each input, so no input depends on the ones before it.
private struct Scenario {
    let channel: NIOAsyncTestingChannel
    let routes: HotRoutes
    /// Routed requests whose answer is not written yet.
    let routing: InFlight

    static func run(_ steps: [Step]) async {
        let scenario = await Scenario()
        await scenario.run(steps)
    }

    init() async {
        let parts = ServerParts(feed: MemoryFeed(items: DemoItems.make()), configuration: configuration, logger: logger)
        let responder = parts.responder(files: files)
        let routing = InFlight()
        self.routing = routing
        routes = parts.application { request, source, match in
            routing.count.withLock { $0 += 1 }
            let response: Response
            do {
                response = try await responder.respond(to: request, context: ServerRequestContext(source: source), match: match)
            } catch {
                routing.count.withLock { $0 -= 1 }
                throw error
            }
            var counted = response
            counted.body = ResponseBody(contentLength: response.body.contentLength) { writer in
                defer { routing.count.withLock { $0 -= 1 } }
                try await response.body.write(writer)
            }
            return counted
        }
        channel = NIOAsyncTestingChannel()
        let maxHeadBytes = configuration.maxHeadBytes
        try! await channel.testingEventLoop.executeInContext { [channel, routes] in
            let pipeline = channel.pipeline.syncOperations
            try HTTPServer.addHandlers(ConnectionHandler(application: routes), maxHeadBytes: maxHeadBytes, to: pipeline)
        }
        try! await channel.connect(to: SocketAddress(ipAddress: "127.0.0.9", port: 5000)).get()
    }

    func run(_ steps: [Step]) async {
        let session = try! routes.sessions.create(config: Preset.standard.config, client: "127.0.0.9")
        var inputClosed = false
        for step in steps {
            guard channel.isActive else { break }
            switch step {
            case .read(let bytes):
                // Nothing arrives after the client closed its side.
                guard !inputClosed else { continue }
                _ = try? await channel.writeInbound(ByteBuffer(bytes: substitute(bytes, session: session.id)))
            case .inputClosed:
                guard !inputClosed else { continue }
                inputClosed = true
                await fire(ChannelEvent.inputClosed)
            case .timePasses:
                await channel.testingEventLoop.advanceTime(by: .seconds(300))
            case .quiesce:
                await fire(ChannelShouldQuiesceEvent())
            case .settle:
                await settle()
            }
        }
        // The client is done: every connection must end once its side is closed and the
        // deadlines have passed.
        await settle()
        if !inputClosed, channel.isActive { await fire(ChannelEvent.inputClosed) }
        for _ in 0..<3 where channel.isActive {
            await settle()
            await channel.testingEventLoop.advanceTime(by: .seconds(300))
        }
        await settle()
        let active = channel.isActive
        var written: [UInt8] = []
        while let buffer = try? await channel.readOutbound(as: ByteBuffer.self) {
            written += buffer.readableBytesView
        }
        invariant(
            !active,
            "the connection is still open after the client left and every deadline passed: \(String(decoding: written.suffix(300), as: UTF8.self).debugDescription)"
        )
        let answers = ResponseStream(written).answers
        if verbose { print("statuses: \(answers.map(\.status)), closed: \(!active)") }
        if active { _ = try? await channel.close() }
        _ = routes.sessions.end(session.id)
    }

    private func fire(_ event: any Sendable) async {
        try? await channel.testingEventLoop.executeInContext { [channel] in
            channel.pipeline.syncOperations.fireUserInboundEventTriggered(event)
        }
    }

    /// Waits until no routed answer is being written and the event loop has taken up what
    /// followed it. A request handed to the router starts on a task of its own: a short wait
    /// lets it start before the count is trusted.
    private func settle() async {
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            await channel.testingEventLoop.run()
            if routing.count.withLock({ $0 }) == 0 {
                try? await Task.sleep(for: .microseconds(300))
                // The answer's end reaches the event loop just after its last write.
                for _ in 0..<2 { _ = try? await channel.testingEventLoop.executeInContext {} }
                await channel.testingEventLoop.run()
                if routing.count.withLock({ $0 }) == 0 { return }
            }
            try? await Task.sleep(for: .microseconds(50))
        }
        invariant(false, "a routed request was not answered within 3 seconds")
    }

    private func substitute(_ bytes: [UInt8], session: String) -> [UInt8] {
        let marker = Array("{sid}".utf8)
        guard bytes.count >= marker.count else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 32)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "{"), bytes[index...].starts(with: marker) {
                out += session.utf8
                index += marker.count
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }
}

private final class InFlight: Sendable {
    let count = Mutex(0)
}
