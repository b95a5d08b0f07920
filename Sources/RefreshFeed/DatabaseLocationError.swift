/// `--database` names something no store can use: a path that can never hold an SQLite
/// database, or a `postgres://` URL that is malformed. The server turns it into its
/// configuration error, so a start that can never work stops once, with the setting named.
public struct DatabaseLocationError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The SQLite path at fault, to name it; `nil` for a URL, which is never echoed since it
    /// may hold a password.
    public let path: String?
    /// What is wrong, in the operator's words: `is a folder; name a file in it, …`.
    public let problem: String

    public init(path: String? = nil, problem: String) {
        self.path = path
        self.problem = problem
    }

    public var description: String { problem }
}
