import Foundation
import RefreshClient
import RefreshEngine

/// Writes what a command learns to standard output: one JSON object per line for programs
/// (`jq`, a test), or a line of text for people. Each line is flushed as it is written, so a
/// pipe sees an event the moment it came.
struct Output: Sendable {
    var json: Bool

    func item(_ item: FeedItem) throws(OutputClosed) {
        try write(item)
    }

    func event(_ event: SessionEvent) throws(OutputClosed) {
        guard json else {
            for line in Self.lines(event) { try text(line) }
            return
        }
        switch event {
        case .state(let state): try write(StateLine(state))
        case .progress(let progress): try write(ProgressLine(progress))
        case .items(let update): try write(ItemsLine(update))
        case .done(let result): try write(DoneLine(result))
        case .news(let news): try write(NewsLine(news))
        case .changes(let changes): try write(ChangesLine(changes))
        case .reset(let reason): try write(ResetLine(reason: reason))
        case .replaced(let resumed): try write(ReplacedLine(resumed: resumed))
        }
    }

    /// The text for people: an item per line, an event per line otherwise.
    static func lines(_ event: SessionEvent) -> [String] {
        switch event {
        case .state(let state):
            let edge = state.edge.map { " \($0.rawValue)" } ?? ""
            return ["state \(state.phase.rawValue)\(edge) distance \(number(state.distance)) pull \(number(state.pull)) \"\(state.label)\""]
        case .progress(let progress):
            let percent = Int((progress.fraction * 100).rounded())
            return ["progress \(progress.kind.rawValue) \(percent)% \(progress.stage): \(progress.message)"]
        case .items(let update):
            let sign = update.operation == .prepend ? "+" : "…"
            return update.items.map { "\(sign) \(describe($0))" }
        case .done(let result):
            let why = result.error.map { ": \($0)" } ?? ""
            return ["done \(result.kind.rawValue) \(result.outcome.rawValue), \(result.added) added\(why)"]
        case .news(let news):
            return ["news \(news.count) new, the newest \"\(news.newestTitle)\" (\(news.newestID)), head \(news.head)"]
        case .changes(let changes):
            return changes.changes.map { change in
                switch change {
                case .update(let item): "~ \(describe(item))"
                case .remove(let id, _, _): "- [\(id)] removed"
                }
            }
        case .reset(let reason):
            return ["reset: \(reason)"]
        case .replaced(let resumed):
            return ["the server lost the session; a new one \(resumed ? "continues the list" : "starts it over")"]
        }
    }

    static func describe(_ item: FeedItem) -> String {
        "\(item.title) [\(item.id)] \(item.published.formatted(.iso8601))"
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value)
    }

    private func write(_ line: some Encodable) throws(OutputClosed) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        // Every line is one of this file's types, whose fields always encode.
        guard let data = try? encoder.encode(line) else { return }
        try text(String(decoding: data, as: UTF8.self))
    }

    private func text(_ line: String) throws(OutputClosed) {
        do {
            try FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
        } catch {
            throw OutputClosed()
        }
    }
}

/// Standard output was closed (`| head` read what it wanted): the command ends quietly, as
/// a program killed by `SIGPIPE` would, but having closed its session.
struct OutputClosed: Error {}

// The JSON lines: one object per event, named as the stream names it, with the client's
// fields (a `news` line's newest item flattened, times to the second).

private struct StateLine: Encodable {
    var event = "state"
    var phase: String
    var edge: String?
    var pull: Double
    var distance: Double
    var rotation: Double
    var indicatorOffset: Double
    var label: String
    var seq: Int?

    init(_ state: GestureState) {
        phase = state.phase.rawValue
        edge = state.edge?.rawValue
        pull = state.pull
        distance = state.distance
        rotation = state.rotation
        indicatorOffset = state.indicatorOffset
        label = state.label
        seq = state.seq
    }
}

private struct ProgressLine: Encodable {
    var event = "progress"
    var actionId: String
    var kind: String
    var fraction: Double
    var stage: String
    var message: String

    init(_ progress: ActionProgress) {
        actionId = progress.actionID
        kind = progress.kind.rawValue
        fraction = progress.fraction
        stage = progress.stage
        message = progress.message
    }
}

private struct ItemsLine: Encodable {
    var event = "items"
    var actionId: String?
    var op: String
    var items: [FeedItem]
    var hasMore: Bool
    var head: Int?

    init(_ update: ItemsUpdate) {
        actionId = update.actionID
        op = update.operation.rawValue
        items = update.items
        hasMore = update.hasMore
        head = update.head
    }
}

private struct DoneLine: Encodable {
    var event = "done"
    var actionId: String
    var kind: String
    var outcome: String
    var added: Int
    var error: String?

    init(_ result: ActionResult) {
        actionId = result.actionID
        kind = result.kind.rawValue
        outcome = result.outcome.rawValue
        added = result.added
        error = result.error
    }
}

private struct NewsLine: Encodable {
    var event = "news"
    var count: Int
    var newestId: String
    var newestTitle: String
    var newestPublished: Date
    var head: Int

    init(_ news: News) {
        count = news.count
        newestId = news.newestID
        newestTitle = news.newestTitle
        newestPublished = news.newestPublished
        head = news.head
    }
}

private struct ChangesLine: Encodable {
    var event = "changes"
    var version: Int
    var changes: [Change]

    /// `{"op": "update", "item"}` or `{"op": "remove", "id", "position", "version"}`, as the
    /// stream writes them.
    struct Change: Encodable {
        var op: String
        var item: FeedItem?
        var id: String?
        var position: Int?
        var version: Int?
    }

    init(_ changes: ItemChanges) {
        version = changes.version
        self.changes = changes.changes.map { change in
            switch change {
            case .update(let item): Change(op: "update", item: item)
            case .remove(let id, let position, let version): Change(op: "remove", id: id, position: position, version: version)
            }
        }
    }
}

private struct ResetLine: Encodable {
    var event = "reset"
    var reason: String
}

private struct ReplacedLine: Encodable {
    var event = "replaced"
    var resumed: Bool
}
