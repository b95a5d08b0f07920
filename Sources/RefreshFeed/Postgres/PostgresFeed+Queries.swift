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
        // The head's position as an init plan, so the item is one index lookup whatever the
        // planner's statistics say; an empty feed (head 0) has no such row.
        let rows = try await client.query(
            """
            SELECT position, id, title, summary, link, author, published FROM item
            WHERE feed = \(name.rawValue) AND position = (SELECT position FROM feed_head WHERE feed = \(name.rawValue))
            """, logger: logger)
        for try await row in rows.decode(ItemRow.self) {
            guard let item = Self.item(row, position: row.0) else { return nil }
            return FeedHead(position: row.0, item: item)
        }
        return nil
    }

    /// The heads of `feeds` in one query; a feed with no row is missing (its head is 0).
    func heads(of feeds: [FeedName]) async throws -> [FeedName: FeedPosition] {
        try await answered("reading the heads") { _ in
            try await self.migrated()
            return try await Self.heads(self.client.query(Self.headsQuery(feeds), logger: self.logger))
        }
    }

    /// The same on `connection`, for the listener, which reads them on its own.
    func heads(of feeds: [FeedName], on connection: PostgresConnection) async throws -> [FeedName: FeedPosition] {
        try await Self.heads(connection.query(Self.headsQuery(feeds), logger: logger))
    }

    private static func headsQuery(_ feeds: [FeedName]) -> PostgresQuery {
        "SELECT feed, position FROM feed_head WHERE feed = ANY(\(feeds.map(\.rawValue)))"
    }

    private static func heads(_ rows: PostgresRowSequence) async throws -> [FeedName: FeedPosition] {
        var heads: [FeedName: FeedPosition] = [:]
        for try await (feed, position) in rows.decode((String, Int64).self) {
            if let name = FeedName(feed) { heads[name] = position }
        }
        return heads
    }

    public func publish(_ items: [FeedItem]) async throws -> [FeedItem] {
        try await publishReportingHead(items).stored
    }

    public func publishReportingHead(_ items: [FeedItem]) async throws -> (stored: [FeedItem], head: FeedHead?) {
        let written = try await write(ItemKey.lastOfEachID(items))
        return (written.stored, written.head)
    }

    public func item(id: String) async throws -> FeedItem? {
        try await answered("reading an item") { _ in try await self.readItem(id: id) }
    }

    public func position(of id: String) async throws -> FeedPosition? {
        try await answered("reading an item's position") { _ in
            try await self.migrated()
            let rows = try await self.client.query(
                "SELECT position FROM item WHERE feed = \(self.name.rawValue) AND id = \(id)", logger: self.logger)
            for try await position in rows.decode(Int64.self) { return position }
            return nil
        }
    }

    private func readItem(id: String) async throws -> FeedItem? {
        try await migrated()
        let rows = try await client.query(
            """
            SELECT position, id, title, summary, link, author, published FROM item WHERE feed = \(name.rawValue) AND id = \(id)
            """, logger: logger)
        for try await row in rows.decode(ItemRow.self) { return Self.item(row, position: row.0) }
        return nil
    }

    /// (position, id, title, summary, link, author, published, the item's position); the
    /// item's columns are `nil` where a head row has no item.
    private typealias ItemRow = (Int64, String?, String?, String?, String?, String?, Int64?)
    private typealias PageRow = (Int64, String?, String?, String?, String?, String?, Int64?, Int64?)

    /// Runs `query` (a `SELECT * FROM item WHERE feed = h.feed …` of at most `limit + 1` rows)
    /// joined to the feed's head row `h` in one statement, so the page and its head come from
    /// one snapshot. A feed with no head row has no items: no row, an empty page at head 0.
    private func page(limit: Int, _ query: PostgresQuery) async throws -> FeedPage {
        try await answered("reading items") { _ in try await self.readPage(limit: limit, query) }
    }

    private func readPage(limit: Int, _ query: PostgresQuery) async throws -> FeedPage {
        try await migrated()
        var sql =
            "SELECT h.position, i.id, i.title, i.summary, i.link, i.author, i.published, i.position FROM feed_head h LEFT JOIN LATERAL ("
        sql += query.sql
        var binds = query.binds
        binds.append(name.rawValue, context: .default)
        sql += ") i ON true WHERE h.feed = $\(binds.count) ORDER BY i.position DESC"
        let joined = PostgresQuery(unsafeSQL: sql, binds: binds)
        var head: FeedPosition = 0
        var items: [FeedItem] = []
        for try await row in try await client.query(joined, logger: logger).decode(PageRow.self) {
            head = row.0
            if let position = row.7, let item = Self.item((row.0, row.1, row.2, row.3, row.4, row.5, row.6), position: position) {
                items.append(item)
            }
        }
        return FeedPage(items: Array(items.prefix(limit)), hasMore: items.count > limit, head: head)
    }

    private static func item(_ row: ItemRow, position: FeedPosition) -> FeedItem? {
        guard let id = row.1, let title = row.2, let published = row.6 else { return nil }
        return FeedItem(
            id: id, title: title, summary: row.3, link: row.4, author: row.5, published: Timestamp(milliseconds: published), position: position)
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
