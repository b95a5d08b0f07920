/// What the configuration's checks ask of a `postgres://` URL, without PostgresNIO: the
/// real one lives in RefreshFeed/Postgres/, which this build leaves out.
public struct PostgresLocation {
    public static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    public init(url text: String) throws {}
}
