/// What the configuration's checks ask of a `postgres://` URL, without PostgresNIO: the
/// real one lives in Feed/PostgresFeed.swift, which this build leaves out.
struct PostgresLocation {
    static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    init(url text: String) throws {}
}
