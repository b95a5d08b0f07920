import PostgresNIO

extension PostgresFeed {
    public func added(after position: FeedPosition, limit: Int) async throws -> FeedPage {
        try await page(
            limit: limit,
            "SELECT * FROM item WHERE feed = h.feed AND position > \(position) ORDER BY position DESC LIMIT \(limit + 1)")
    }

    public func older(than position: FeedPosition?, limit: Int) async throws -> FeedPage {
        try await page(
            limit: limit,
            "SELECT * FROM item WHERE feed = h.feed AND position < \(position ?? .max) ORDER BY position DESC LIMIT \(limit + 1)")
    }

    public func head() async throws -> FeedHead? {
        try await answered("reading the head") { _ in try await self.readHead() }
    }

    private func readHead() async throws -> FeedHead? {
        try await migrated()
        // The newest item the feed holds (the head's, unless it was removed), with the head's
        // position and version from the same snapshot; an empty feed has no such row.
        let rows = try await client.query(
            """
            SELECT h.position, i.id, i.title, i.summary, i.link, i.author, i.published, i.position, i.version, h.version
            FROM feed_head h JOIN LATERAL (
                SELECT * FROM item WHERE feed = h.feed ORDER BY position DESC LIMIT 1
            ) i ON true WHERE h.feed = \(name.rawValue)
            """, logger: logger)
        for try await row in rows.decode(PageRow.self) {
            guard let item = Self.item(row) else { return nil }
            return FeedHead(position: row.0, item: item, version: row.9)
        }
        return nil
    }

    public func changes(
        since version: FeedVersion, within positions: ClosedRange<FeedPosition>, limit: Int
    ) async throws
        -> FeedChanges?
    {
        try await answered("reading changes") { _ in
            try await self.migrated()
            let feed = self.name.rawValue
            // One snapshot: the feed's version and horizon, its items changed after `version`
            // within the positions, and its tombstones there.
            let rows = try await self.client.query(
                """
                SELECT 0 AS kind, h.version, h.horizon, i.id, i.title, i.summary, i.link, i.author, i.published, i.position, i.version
                FROM feed_head h LEFT JOIN LATERAL (
                    SELECT * FROM item WHERE feed = h.feed AND version > \(version) AND position BETWEEN \(positions.lowerBound) AND \(positions.upperBound)
                    ORDER BY version LIMIT \(limit + 1)
                ) i ON true WHERE h.feed = \(feed)
                UNION ALL
                SELECT 1, h.version, h.horizon, r.id, NULL, NULL, NULL, NULL, NULL, r.position, r.version
                FROM feed_head h JOIN LATERAL (
                    SELECT * FROM removal WHERE feed = h.feed AND version > \(version) AND position BETWEEN \(positions.lowerBound) AND \(positions.upperBound)
                    ORDER BY version LIMIT \(limit + 1)
                ) r ON true WHERE h.feed = \(feed)
                """, logger: self.logger)
            var feedVersion: FeedVersion = 0
            var horizon: FeedVersion = 0
            var changes: [FeedChange] = []
            typealias Row = (Int32, Int64, Int64, String?, String?, String?, String?, String?, Int64?, Int64?, Int64?)
            for try await row in rows.decode(Row.self) {
                feedVersion = row.1
                horizon = row.2
                guard let id = row.3, let position = row.9, let itemVersion = row.10 else { continue }
                if row.0 == 1 {
                    changes.append(.remove(id: id, position: position, version: itemVersion))
                } else if let title = row.4, let published = row.8 {
                    changes.append(
                        .update(
                            FeedItem(
                                id: id, title: title, summary: row.5, link: row.6, author: row.7, published: Timestamp(milliseconds: published),
                                position: position, version: itemVersion)))
                }
            }
            guard version >= horizon, changes.count <= limit else { return nil }
            return FeedChanges(changes: changes.sorted { $0.version < $1.version }, version: feedVersion)
        }
    }

    public func forgetRemovals(before time: Timestamp) async throws -> Int {
        try await answered("forgetting removals") { _ in
            try await self.migrated()
            return try await self.client.withTransaction(logger: self.logger) { connection in
                try await connection.query(
                    """
                    UPDATE feed_head h SET horizon = greatest(h.horizon, r.newest)
                    FROM (SELECT feed, max(version) AS newest FROM removal WHERE removed < \(time.milliseconds) GROUP BY feed) r
                    WHERE h.feed = r.feed
                    """, logger: self.logger)
                let rows = try await connection.query(
                    "WITH gone AS (DELETE FROM removal WHERE removed < \(time.milliseconds) RETURNING 1) SELECT count(*)::bigint FROM gone",
                    logger: self.logger)
                for try await count in rows.decode(Int64.self) { return Int(count) }
                return 0
            }
        }
    }

    /// The heads and versions of `feeds` in one query; a feed with no row is missing (its
    /// head and version are 0).
    func heads(of feeds: [FeedName]) async throws -> [FeedName: (head: FeedPosition, version: FeedVersion)] {
        try await answered("reading the heads") { _ in
            try await self.migrated()
            return try await Self.heads(self.client.query(Self.headsQuery(feeds), logger: self.logger))
        }
    }

    /// The same on `connection`, for the listener, which reads them on its own.
    func heads(of feeds: [FeedName], on connection: PostgresConnection) async throws -> [FeedName: (head: FeedPosition, version: FeedVersion)] {
        try await Self.heads(connection.query(Self.headsQuery(feeds), logger: logger))
    }

    private static func headsQuery(_ feeds: [FeedName]) -> PostgresQuery {
        "SELECT feed, position, version FROM feed_head WHERE feed = ANY(\(feeds.map(\.rawValue)))"
    }

    private static func heads(_ rows: PostgresRowSequence) async throws -> [FeedName: (head: FeedPosition, version: FeedVersion)] {
        var heads: [FeedName: (head: FeedPosition, version: FeedVersion)] = [:]
        for try await (feed, position, version) in rows.decode((String, Int64, Int64).self) {
            if let name = FeedName(feed) { heads[name] = (position, version) }
        }
        return heads
    }

    public func publishing(_ items: [FeedItem]) async throws -> FeedWrite {
        try await write(ItemKey.lastOfEachID(items))
    }

    public func item(id: String) async throws -> FeedItem? {
        try await answered("reading an item") { _ in try await self.readItem(id: id) }
    }

    public func position(of id: String) async throws -> FeedPosition? {
        try await answered("reading an item's position") { _ in
            try await self.migrated()
            // A removed item's position is its tombstone's, so a page can go on from it.
            let rows = try await self.client.query(
                """
                SELECT position FROM item WHERE feed = \(self.name.rawValue) AND id = \(id)
                UNION ALL (SELECT position FROM removal WHERE feed = \(self.name.rawValue) AND id = \(id) ORDER BY version DESC LIMIT 1)
                LIMIT 1
                """, logger: self.logger)
            for try await position in rows.decode(Int64.self) { return position }
            return nil
        }
    }

    private func readItem(id: String) async throws -> FeedItem? {
        try await migrated()
        let rows = try await client.query(
            """
            SELECT position, id, title, summary, link, author, published, position, version, 0::bigint FROM item
            WHERE feed = \(name.rawValue) AND id = \(id)
            """, logger: logger)
        for try await row in rows.decode(PageRow.self) { return Self.item(row) }
        return nil
    }

    /// (the head's position, id, title, summary, link, author, published, the item's position,
    /// its version, the feed's version); the item's columns are `nil` where a head row has no
    /// item.
    private typealias PageRow = (Int64, String?, String?, String?, String?, String?, Int64?, Int64?, Int64?, Int64)

    /// Runs `query` (a `SELECT * FROM item WHERE feed = h.feed …` of at most `limit + 1` rows)
    /// joined to the feed's head row `h` in one statement, so the page and its head come from
    /// one snapshot. A feed with no head row has no items: no row, an empty page at head 0.
    private func page(limit: Int, _ query: PostgresQuery) async throws -> FeedPage {
        try await answered("reading items") { _ in try await self.readPage(limit: limit, query) }
    }

    private func readPage(limit: Int, _ query: PostgresQuery) async throws -> FeedPage {
        try await migrated()
        var sql =
            "SELECT h.position, i.id, i.title, i.summary, i.link, i.author, i.published, i.position, i.version, h.version FROM feed_head h LEFT JOIN LATERAL ("
        sql += query.sql
        var binds = query.binds
        binds.append(name.rawValue, context: .default)
        sql += ") i ON true WHERE h.feed = $\(binds.count) ORDER BY i.position DESC"
        let joined = PostgresQuery(unsafeSQL: sql, binds: binds)
        var head: FeedPosition = 0
        var version: FeedVersion = 0
        var items: [FeedItem] = []
        for try await row in try await client.query(joined, logger: logger).decode(PageRow.self) {
            head = row.0
            version = row.9
            if let item = Self.item(row) { items.append(item) }
        }
        return FeedPage(items: Array(items.prefix(limit)), hasMore: items.count > limit, head: head, version: version)
    }

    private static func item(_ row: PageRow) -> FeedItem? {
        guard let id = row.1, let title = row.2, let published = row.6, let position = row.7 else { return nil }
        return FeedItem(
            id: id, title: title, summary: row.3, link: row.4, author: row.5, published: Timestamp(milliseconds: published), position: position,
            version: row.8)
    }
}

extension PostgresFeed: UpstreamStore {
    func validators(for url: String) async throws -> UpstreamValidators {
        try await answered("reading an upstream's validators") { _ in
            let rows = try await self.client.query("SELECT etag, last_modified FROM upstream WHERE url = \(url)", logger: self.logger)
            for try await (etag, lastModified) in rows.decode((String?, String?).self) {
                return UpstreamValidators(etag: etag, lastModified: lastModified)
            }
            return UpstreamValidators()
        }
    }

    func saveValidators(_ validators: UpstreamValidators, for url: String) async throws {
        try await answered("saving an upstream's validators") { _ in try await self.writeValidators(validators, for: url) }
    }

    private func writeValidators(_ validators: UpstreamValidators, for url: String) async throws {
        try await client.query(
            """
            INSERT INTO upstream (url, etag, last_modified, checked) VALUES (\(url), \(validators.etag), \(validators.lastModified), \(Timestamp.now().milliseconds))
            ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified, checked = excluded.checked
            """, logger: logger)
    }
}
