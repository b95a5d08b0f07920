import ArgumentParser
import RefreshClient

struct Publish: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publishes an item to a feed and prints it as stored, one JSON line.",
        discussion: """
            Every open list of the feed hears of it at once (news, or the item itself). An id \
            the feed already has replaces that item. A feed that is not public needs a token \
            with the right to publish to it, or the server's publish token.

            Example: PTR_TOKEN=… refresh-client publish --feed team.eng --title "Standup moved"
            """)

    @OptionGroup var options: ServerOptions

    @Option(help: "The item's title: plain text.")
    var title: String

    @Option(help: "A line of text under the title.")
    var summary: String?

    @Option(help: "Where the item leads (a URL).")
    var link: String?

    @Option(help: "Who wrote it.")
    var author: String?

    @Option(help: "The item's id; one is made when it is left out (and kept if the publish is retried).")
    var id: String?

    func run() async throws {
        try await reporting {
            let item = NewItem(id: id, title: title, summary: summary, link: link, author: author)
            let stored = try await options.withClient { try await $0.publish([item], to: options.feed) }
            for item in stored { try Output(json: true).item(item) }
        }
    }
}
