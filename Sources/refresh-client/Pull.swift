import ArgumentParser
import Foundation
import RefreshClient
import RefreshEngine

struct Pull: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pulls a feed's list down and lets go, as a finger would, and follows the refresh.",
        discussion: """
            Drag samples down to -DISTANCE (one every 16 ms), a release, then the list \
            scrolling back to 0. Prints each gesture state the server sends, the refresh's \
            progress and its end; exits 0 once the refresh completed, 1 when it failed or \
            never started (a pull shorter than the preset's threshold), \(Failure.timedOutCode) \
            after --timeout.

            Example: refresh-client pull --feed main --distance 160 --preset ios15
            """)

    @OptionGroup var options: ServerOptions

    @Option(help: "How far to pull, in points.")
    var distance = 120.0

    @Option(help: "The gesture's configuration: \(Preset.allCases.map(\.rawValue).joined(separator: ", ")).")
    var preset = Preset.standard.rawValue

    @Option(help: "Seconds to wait for the refresh to end.")
    var timeout = 30.0

    @Flag(help: "One JSON object per event, as the stream's events are named.")
    var json = false

    func validate() throws {
        guard Preset(rawValue: preset) != nil else {
            throw ValidationError("--preset must be one of \(Preset.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard distance > 0, distance <= 10_000 else { throw ValidationError("--distance must be from 0 to 10000") }
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0") }
    }

    func run() async throws {
        try await reporting {
            let output = Output(json: json)
            let preset = Preset(rawValue: preset) ?? .standard
            try await options.withClient { client in
                let opened = Opened()
                let end = await Interruption.race { [distance, timeout, feed = options.feed] in
                    let session = try await client.session(feed: feed, preset: preset, attempts: 3)
                    await opened.hold(session)
                    let top = await session.config.top
                    let threshold = top.enabled ? top.threshold.points(viewportHeight: nil) : nil
                    return try await Gesture(distance: distance, threshold: threshold, timeout: timeout).perform(on: session, output)
                }
                await opened.close()
                switch end {
                case .finished(.success(let result)) where result.outcome == .completed:
                    break
                case .finished(.success(let result)):
                    throw Failure(message: "the refresh \(result.outcome.rawValue)\(result.error.map { ": \($0)" } ?? "")", code: Failure.refusedCode)
                case .finished(.failure(let error)):
                    throw error
                case .interrupted(let signal):
                    throw ExitCode(128 + signal)
                }
            }
        }
    }
}

/// The scripted pull and what it waits for: a refresh seen starting (a `refreshing` state or
/// the refresh's progress) and ending; or, by the state that answers the release, none.
struct Gesture: Sendable {
    var distance: Double
    /// The top edge's, `nil` when the preset does not refresh from the top.
    var threshold: Double?
    var timeout: Double

    /// The page measures a sample about once a frame.
    static let frame = 16.0
    static let step = 10.0

    /// Down in steps to -distance, the release there, then back to 0 on its own.
    var samples: [Sample] {
        let steps = Int((distance / Self.step).rounded(.up))
        var offsets = (1...steps).map { -min(Double($0) * Self.step, distance) }
        let releaseIndex = offsets.count
        offsets.append(-distance)
        offsets += (1...steps).map { -distance + min(Double($0) * Self.step, distance) }
        // The heights go with every sample: a queued sample that a newer one replaced must
        // not take them away. A program moves the list: the server's insights count it so.
        return offsets.enumerated().map { index, y in
            let phase: Sample.Phase = index < releaseIndex ? .drag : index == releaseIndex ? .release : .scroll
            return Sample(
                seq: 0, t: Double(index) * Self.frame, y: y, phase: phase, contentHeight: 2000, viewportHeight: 800,
                input: phase == .scroll ? nil : .program)
        }
    }

    private enum Signal: Sendable {
        case event(SessionEvent)
        /// The release went into the queue with this `seq`.
        case released(Int)
    }

    func perform(on session: RemoteSession, _ output: Output) async throws -> ActionResult {
        let (signals, continuation) = AsyncThrowingStream.makeStream(of: Signal.self)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await event in session.events { continuation.yield(.event(event)) }
                    continuation.finish(throwing: Failure(message: "the session's stream ended before the refresh did", code: Failure.refusedCode))
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            group.addTask {
                for sample in samples {
                    let seq = await session.post(sample)
                    if sample.phase == .release, let seq { continuation.yield(.released(seq)) }
                    try await Task.sleep(for: .milliseconds(Self.frame))
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(timeout))
                continuation.finish(throwing: Failure(message: "no refresh ended within \(timeout) s", code: Failure.timedOutCode))
            }
            defer { group.cancelAll() }
            var started = false
            var firstPage = true
            var released: Int?
            var newest: GestureState?
            // The state that answers the release (or a later one) shows whether it refreshes:
            // past the threshold it does at once (`refreshing`, or its progress before it).
            func noRefresh() -> Bool {
                guard !started, let released, let newest, let seq = newest.seq else { return false }
                return seq >= released && newest.phase != .refreshing
            }
            for try await signal in signals {
                switch signal {
                case .released(let seq):
                    released = seq
                case .event(let event):
                    if case .items(let update) = event, update.actionID == nil, firstPage {
                        // What the list showed before the pull.
                        firstPage = false
                        continue
                    }
                    try output.event(event)
                    switch event {
                    case .state(let state):
                        newest = state
                        if state.phase == .refreshing { started = true }
                    case .progress(let progress) where progress.kind == .refresh:
                        started = true
                    case .done(let result) where result.kind == .refresh:
                        return result
                    default:
                        break
                    }
                }
                if noRefresh() {
                    let why = threshold.map { "the top edge's threshold is \(Int($0))" } ?? "the preset does not refresh from the top"
                    throw Failure(message: "the pull of \(Int(distance)) started no refresh (\(why))", code: Failure.refusedCode)
                }
            }
            throw CancellationError()
        }
    }
}
