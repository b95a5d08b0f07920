import Foundation
import OpenAPIRuntime
import RefreshAPI

/// One item by its id: read it, edit it in place, remove it. Every open list that shows it,
/// on every instance, is told at once (``SessionEvent/changes(_:)``).
extension RefreshClient {
    /// The item `id` of `feed` as stored now, with its ``FeedItem/version``.
    public func item(_ id: String, in feed: String = "main") async throws -> FeedItem {
        FeedItem(try await calling { try await api.getFeedItem(path: .init(feed: feed, item: id)).ok.body.json })
    }

    /// Replaces the fields of the item `id` with `item`'s, where it stands in the list (a
    /// field left `nil` is removed; `published`, left `nil`, stays as it was). With
    /// `ifVersion`, only that version is replaced: another one throws `412
    /// precondition_failed` and nothing changes.
    @discardableResult
    public func replace(_ id: String, in feed: String = "main", with item: NewItem, ifVersion version: Int? = nil) async throws -> FeedItem {
        var item = item
        item.id = id
        let body = Operations.ReplaceFeedItem.Input.Body.json(.init(item))
        let stored = try await calling {
            try await api.replaceFeedItem(path: .init(feed: feed, item: id), headers: .init(ifMatch: version.map(Self.entityTag)), body: body)
                .ok.body.json
        }
        return FeedItem(stored)
    }

    /// Edits the item `id` as `change` says, from the item as stored: read, changed, and
    /// written only if no one changed it meanwhile (`If-Match`); an edit that lost such a
    /// race is made again from the newer item, up to `attempts` times in all.
    ///
    /// ```swift
    /// try await client.edit("standup") { $0.title = "Standup moved to 10:00" }
    /// ```
    @discardableResult
    public func edit(
        _ id: String, in feed: String = "main", attempts: Int = 5, _ change: (inout NewItem) async throws -> Void
    ) async throws -> FeedItem {
        for attempt in 1... {
            let current = try await item(id, in: feed)
            var edited = NewItem(current)
            try await change(&edited)
            do {
                return try await replace(id, in: feed, with: edited, ifVersion: current.version)
            } catch let error as RefreshError where error.status == 412 && attempt < attempts {
                continue
            }
        }
        preconditionFailure("the loop returns or throws")
    }

    /// Removes the item `id` from `feed`: every list that shows it takes it out. With
    /// `ifVersion`, only that version is removed. An id the feed does not have throws `404
    /// not_found`.
    public func remove(_ id: String, from feed: String = "main", ifVersion version: Int? = nil) async throws {
        _ = try await calling {
            try await api.removeFeedItem(path: .init(feed: feed, item: id), headers: .init(ifMatch: version.map(Self.entityTag))).noContent
        }
    }

    /// A version as `ETag` and `If-Match` write it: quoted.
    static func entityTag(_ version: Int) -> String { "\"\(version)\"" }
}

extension NewItem {
    /// The item's fields, to edit and store again.
    public init(_ item: FeedItem) {
        self.init(id: item.id, title: item.title, summary: item.summary, link: item.link, author: item.author, published: item.published)
    }
}
