import ArgumentParser

@main
struct RefreshClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh-client",
        abstract: "Publishes to, follows and pulls a swift-pull-to-refresh server's feeds.",
        discussion: """
            Every command talks to --server (or PTR_SERVER) with the token --token (or \
            PTR_TOKEN) when one is given: scripts should pass the token in the environment, \
            where other users of the machine cannot read it. A busy (429, 503) or unreachable \
            server is asked twice more, after its Retry-After or 1 and 2 s.

            Exit status: 0 on success; 1 when the server refused the request (its message \
            goes to standard error) or the refresh failed; 64 for a mistake on the command \
            line; \(Failure.unreachableCode) when the server cannot be reached; \
            \(Failure.timedOutCode) when `pull` timed out; 130 or 143 when `tail` or `pull` was \
            interrupted (SIGINT, SIGTERM) and closed its session.
            """,
        subcommands: [Publish.self, Edit.self, Remove.self, Tail.self, Pull.self]
    )
}
