import Foundation
import OpenAPIRuntime
import RefreshAPI
import RefreshEngine

// The generated types are the document's; the app sees the engine's value types (shared
// with the server) and this module's own. These are the only places that map one onto the
// other.

extension FeedItem {
    init(_ item: Components.Schemas.Item) {
        self.init(
            id: item.id, title: item.title, summary: item.summary, link: item.link, author: item.author, published: item.published,
            position: item.position, version: item.version)
    }
}

extension Components.Schemas.NewItem {
    init(_ item: NewItem) {
        self.init(id: item.id, title: item.title, summary: item.summary, link: item.link, author: item.author, published: item.published)
    }
}

extension GestureState {
    init(_ state: Components.Schemas.GestureState) {
        self.init(
            edge: state.edge.map { $0 == .top ? .top : .bottom },
            phase: GestureState.Phase(rawValue: state.phase.rawValue) ?? .idle,
            pull: state.pull, distance: state.distance, rotation: state.rotation,
            indicatorOffset: state.indicatorOffset, reveal: state.reveal ?? 0, label: state.label, seq: state.seq)
    }
}

extension Components.Schemas.Sample {
    init(_ sample: Sample) {
        self.init(
            seq: sample.seq, t: sample.t, y: sample.y, phase: PhasePayload(rawValue: sample.phase.rawValue),
            contentHeight: sample.contentHeight, viewportHeight: sample.viewportHeight,
            input: sample.input.flatMap { InputPayload(rawValue: $0.rawValue) })
    }
}

extension ActionKind {
    init(_ kind: Components.Schemas.ActionKind) {
        self = kind == .refresh ? .refresh : .loadMore
    }
}

extension ItemsUpdate {
    init(_ update: Components.Schemas.ItemsEvent.DataPayload) {
        self.init(
            actionID: update.actionId, operation: update.op == .prepend ? .prepend : .append,
            items: update.items.map(FeedItem.init), hasMore: update.hasMore, head: update.head, version: update.version)
    }

    init(firstPage page: Components.Schemas.Session.FirstPagePayload) {
        self.init(
            actionID: nil, operation: .append, items: page.items.map(FeedItem.init), hasMore: page.hasMore, head: page.head,
            version: page.version)
    }
}

/// Between the engine's configuration types and the document's: the same JSON on both sides
/// (the server reads and writes the engine's), so they meet through it. Once per session.
enum ConfigCoding {
    static func overrides(_ overrides: RefreshConfig.Overrides) throws -> Components.Schemas.ConfigOverrides {
        try JSONDecoder().decode(Components.Schemas.ConfigOverrides.self, from: JSONEncoder().encode(overrides))
    }

    static func config(_ config: Components.Schemas.Config) throws -> RefreshConfig {
        try JSONDecoder().decode(RefreshConfig.self, from: JSONEncoder().encode(config))
    }
}

/// Decodes the stream's events: the `data` of each by the schema its `event` names.
struct EventDecoder {
    private let decoder: JSONDecoder

    init() {
        let transcoder = RFC3339DateTranscoder()
        decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            try transcoder.decode(decoder.singleValueContainer().decode(String.self))
        }
    }

    /// The typed event, or `nil` for an event this client does not know (a newer server's).
    func decode(_ event: ServerSentEvent) throws -> SessionEvent? {
        guard let name = event.event, let data = event.data.map({ Data($0.utf8) }) else { return nil }
        switch name {
        case "state":
            return .state(GestureState(try decoder.decode(Components.Schemas.GestureState.self, from: data)))
        case "progress":
            let progress = try decoder.decode(Components.Schemas.ProgressEvent.DataPayload.self, from: data)
            return .progress(
                ActionProgress(
                    actionID: progress.actionId, kind: ActionKind(progress.kind), fraction: progress.fraction,
                    stage: progress.stage, message: progress.message))
        case "items":
            return .items(ItemsUpdate(try decoder.decode(Components.Schemas.ItemsEvent.DataPayload.self, from: data)))
        case "done":
            let done = try decoder.decode(Components.Schemas.DoneEvent.DataPayload.self, from: data)
            return .done(
                ActionResult(
                    actionID: done.actionId, kind: ActionKind(done.kind),
                    outcome: ActionResult.Outcome(rawValue: done.outcome.rawValue) ?? .failed, added: done.added, error: done.error))
        case "news":
            let news = try decoder.decode(Components.Schemas.NewsEvent.DataPayload.self, from: data)
            return .news(
                News(
                    count: news.count, newestID: news.newest.id, newestTitle: news.newest.title,
                    newestPublished: news.newest.published, head: news.head))
        case "changes":
            let changes = try decoder.decode(Components.Schemas.ChangesEvent.DataPayload.self, from: data)
            return .changes(ItemChanges(version: changes.version, changes: changes.changes.map(ItemChange.init)))
        case "reset":
            return .reset(reason: try decoder.decode(Components.Schemas.ResetEvent.DataPayload.self, from: data).reason)
        default:
            return nil
        }
    }
}

extension ItemChange {
    init(_ change: Components.Schemas.Change) {
        switch change {
        case .case1(let update): self = .update(FeedItem(update.item))
        case .case2(let removal): self = .remove(id: removal.id, position: removal.position, version: removal.version)
        }
    }
}
