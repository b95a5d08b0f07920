import ArgumentParser
import RefreshClient

struct Edit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Edits an item in place and prints it as stored, one JSON line.",
        discussion: """
            The item keeps its place in the list; every open list that shows it is told at \
            once. The fields not given stay as they are; --clear removes the summary, the link \
            or the author. The item is read and written back only if no one changed it \
            meanwhile, else read again; with --if-version, only that version is changed (exit \
            1 with precondition_failed otherwise). Needs the right to publish to the feed.

            Example: refresh-client edit --feed team.eng --id standup --title "Standup moved to 10:00"
            """)

    @OptionGroup var options: ServerOptions

    @Option(help: "The item's id.")
    var id: String

    @Option(help: "A new title: plain text.")
    var title: String?

    @Option(help: "A new line of text under the title.")
    var summary: String?

    @Option(help: "Where the item now leads (a URL).")
    var link: String?

    @Option(help: "Who wrote it.")
    var author: String?

    @Option(help: "A field to remove: summary, link or author (may be repeated).")
    var clear: [Field] = []

    @Option(help: "Change only this version of the item (its `version`, as `publish` or `tail --json` print it).")
    var ifVersion: Int?

    enum Field: String, ExpressibleByArgument, CaseIterable, Sendable {
        case summary
        case link
        case author
    }

    func validate() throws {
        if title == nil, summary == nil, link == nil, author == nil, clear.isEmpty {
            throw ValidationError("nothing to change: give --title, --summary, --link, --author or --clear")
        }
        if clear.contains(.summary) && summary != nil || clear.contains(.link) && link != nil || clear.contains(.author) && author != nil {
            throw ValidationError("a field cannot be both given and cleared")
        }
        if let ifVersion, ifVersion < 1 { throw ValidationError("--if-version must be at least 1") }
    }

    func run() async throws {
        try await reporting {
            let stored = try await options.withClient { client in
                if let ifVersion {
                    var item = NewItem(try await client.item(id, in: options.feed))
                    change(&item)
                    return try await client.replace(id, in: options.feed, with: item, ifVersion: ifVersion)
                }
                return try await client.edit(id, in: options.feed) { change(&$0) }
            }
            try Output(json: true).item(stored)
        }
    }

    private func change(_ item: inout NewItem) {
        if let title { item.title = title }
        if let summary { item.summary = summary }
        if let link { item.link = link }
        if let author { item.author = author }
        for field in clear {
            switch field {
            case .summary: item.summary = nil
            case .link: item.link = nil
            case .author: item.author = nil
            }
        }
    }
}

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Removes an item from a feed.",
        discussion: """
            Every open list that shows it takes it out at once, and news no longer counts it. \
            An id the feed does not have exits 1 with not_found; with --if-version, only that \
            version is removed. Needs the right to publish to the feed.

            Example: refresh-client remove --feed team.eng --id standup
            """)

    @OptionGroup var options: ServerOptions

    @Option(help: "The item's id.")
    var id: String

    @Option(help: "Remove only this version of the item.")
    var ifVersion: Int?

    func validate() throws {
        if let ifVersion, ifVersion < 1 { throw ValidationError("--if-version must be at least 1") }
    }

    func run() async throws {
        try await reporting {
            try await options.withClient { try await $0.remove(id, from: options.feed, ifVersion: ifVersion) }
        }
    }
}
