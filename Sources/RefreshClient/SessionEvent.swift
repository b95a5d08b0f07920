import Foundation
import RefreshEngine

/// What a session's stream tells the app, typed. The app draws the indicator from `state`,
/// shows `progress`, puts `items` into its list, and offers `news`; it decides nothing about
/// the gesture itself.
public enum SessionEvent: Sendable, Equatable {
    /// The gesture's state after the newest sample the server applied: phase, pull, arrow
    /// rotation, the held indicator, the label.
    case state(GestureState)
    /// How far a refresh or a load-more has got.
    case progress(ActionProgress)
    /// Items for the list: to put above what it shows (`prepend`) or below (`append`).
    case items(ItemsUpdate)
    /// An action ended.
    case done(ActionResult)
    /// The feed gained items the list does not show yet; each supersedes the one before.
    case news(News)
    /// Items the list shows were edited (put each where it stands) or removed (take it out),
    /// in the order they changed.
    case changes(ItemChanges)
    /// Too much was missed to replay: reload the list, then carry on.
    case reset(reason: String)
    /// The server had lost the session and a new one took its place. With `resumed` the new
    /// one continues the list (what the feed gained meanwhile comes as `news` or `items`);
    /// without, the list starts over: clear it, the new session's first page follows.
    case replaced(resumed: Bool)
}

public struct ActionProgress: Sendable, Equatable {
    public var actionID: String
    public var kind: ActionKind
    /// 0…1, never decreasing within an action.
    public var fraction: Double
    /// A word for programs: `starting`, `fetching`, `storing`, `loading`, `done`…
    public var stage: String
    /// A sentence for people.
    public var message: String

    public init(actionID: String, kind: ActionKind, fraction: Double, stage: String, message: String) {
        self.actionID = actionID
        self.kind = kind
        self.fraction = fraction
        self.stage = stage
        self.message = message
    }
}

public struct ItemsUpdate: Sendable, Equatable {
    public enum Operation: String, Sendable, Equatable {
        case prepend
        case append
    }

    /// The action that brought them; `nil` for a first page and for live items (a first page
    /// the server could not answer with the session, when it had no room for its stream yet,
    /// comes by a load-more, with its id).
    public var actionID: String?
    public var operation: Operation
    public var items: [FeedItem]
    /// Older items remain below.
    public var hasMore: Bool
    /// The feed position the list is now up to date with, when these items bring it up to
    /// date (a first page, a refresh, live items).
    public var head: Int?
    /// The feed's version the list's rows are as of once these are in.
    public var version: Int?

    public init(actionID: String?, operation: Operation, items: [FeedItem], hasMore: Bool, head: Int?, version: Int? = nil) {
        self.actionID = actionID
        self.operation = operation
        self.items = items
        self.hasMore = hasMore
        self.head = head
        self.version = version
    }
}

/// Edits and removals of items the list shows, in the order they changed.
public struct ItemChanges: Sendable, Equatable {
    /// The feed's version the list's rows are as of once these are applied.
    public var version: Int
    public var changes: [ItemChange]

    public init(version: Int, changes: [ItemChange]) {
        self.version = version
        self.changes = changes
    }
}

/// One change to an item the list shows.
public enum ItemChange: Sendable, Equatable {
    /// The item as it now is: replace the row of its id where it stands.
    case update(FeedItem)
    /// The item is gone: take out the row of its id.
    case remove(id: String, position: Int, version: Int)

    /// The id of the row it changes.
    public var id: String {
        switch self {
        case .update(let item): item.id
        case .remove(let id, _, _): id
        }
    }
}

public struct ActionResult: Sendable, Equatable {
    public enum Outcome: String, Sendable, Equatable {
        case completed
        case failed
        case cancelled
    }

    public var actionID: String
    public var kind: ActionKind
    public var outcome: Outcome
    /// Items the action added to the list.
    public var added: Int
    /// Why it failed or was cancelled.
    public var error: String?

    public init(actionID: String, kind: ActionKind, outcome: Outcome, added: Int, error: String? = nil) {
        self.actionID = actionID
        self.kind = kind
        self.outcome = outcome
        self.added = added
        self.error = error
    }
}

public struct News: Sendable, Equatable {
    /// Items the list does not show yet.
    public var count: Int
    public var newestID: String
    public var newestTitle: String
    public var newestPublished: Date
    /// The feed's position after them.
    public var head: Int

    public init(count: Int, newestID: String, newestTitle: String, newestPublished: Date, head: Int) {
        self.count = count
        self.newestID = newestID
        self.newestTitle = newestTitle
        self.newestPublished = newestPublished
        self.head = head
    }
}
