import PostgresNIO

extension PostgresFeed {
    /// Upserts by id in one transaction; answers how many ids were new.
    func store(_ items: [FeedItem]) async throws -> Int {
        guard !items.isEmpty else { return 0 }
        try ItemRules.check(items)
        return try await answered("storing items") { attempt in
            try await self.migrated()
            return try await self.upsert(items, replacing: true, attempt)
        }
    }

    /// Stores items at start-up, keeping any already there.
    func seed(_ items: [FeedItem]) async throws {
        try ItemRules.check(items)
        _ = try await answered("storing the first items") { attempt in
            try await self.migrated()
            return try await self.upsert(items, replacing: false, attempt)
        }
    }

    /// New ids take the next positions in feed order while the feed's head row is locked (made
    /// by the feed's first write); the commit notifies every instance of the feed's new head.
    ///
    /// When the connection drops after `COMMIT` was sent, the answer is what PostgreSQL says
    /// became of the transaction (``UncertainCommit``), not a guess either way.
    private func upsert(_ items: [FeedItem], replacing: Bool, _ attempt: Attempt) async throws -> Int {
        // The last of a batch's items with one id wins, as if they were stored one by one.
        let batch = ItemKey.lastOfEachID(items).sorted { $0.cursor < $1.cursor }
        let ids = batch.map(\.id)
        var sent: (commit: UncertainCommit, added: Int)?
        do {
            return try await client.withTransaction(logger: logger) { connection in
                try attempt.mayGoOn()
                // A writer stuck holding the head would stop every instance's writes: waiting for
                // it ends within the deadline.
                try await connection.query(
                    PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = '\(Self.operationDeadline.components.seconds)s'"), logger: logger)
                var head: FeedPosition = 0
                var commit: UncertainCommit?
                // An upsert that changes nothing locks the row as `FOR UPDATE` would, and creates it
                // at 0 for a feed's first write; a second first writer waits for the first's commit.
                let locked = try await connection.query(
                    """
                    INSERT INTO feed_head AS h (feed, position) VALUES (\(name.rawValue), 0)
                    ON CONFLICT (feed) DO UPDATE SET position = h.position
                    RETURNING position, txid_current(), pg_backend_pid()
                    """, logger: logger)
                for try await (position, transaction, backend) in locked.decode((Int64, Int64, Int32).self) {
                    head = position
                    commit = UncertainCommit(transaction: transaction, backend: backend)
                }
                try attempt.mayGoOn()
                var existing = Set<ItemKey>()
                let found = try await connection.query("SELECT id FROM item WHERE feed = \(name.rawValue) AND id = ANY(\(ids))", logger: logger)
                for try await id in found.decode(String.self) {
                    existing.insert(ItemKey(id))
                }
                var added = 0
                for item in batch {
                    let published = item.published.milliseconds
                    if existing.contains(ItemKey(item.id)) {
                        guard replacing else { continue }
                        try await connection.query(
                            """
                            UPDATE item SET title = \(item.title), summary = \(item.summary), link = \(item.link),
                            author = \(item.author), published = \(published) WHERE feed = \(name.rawValue) AND id = \(item.id)
                            """, logger: logger)
                    } else {
                        head += 1
                        added += 1
                        try await connection.query(
                            """
                            INSERT INTO item (feed, id, title, summary, link, author, published, position)
                            VALUES (\(name.rawValue), \(item.id), \(item.title), \(item.summary), \(item.link), \(item.author), \(published), \(head))
                            """, logger: logger)
                    }
                }
                if added > 0 {
                    try await connection.query("UPDATE feed_head SET position = \(head) WHERE feed = \(name.rawValue)", logger: logger)
                    let notice = HeadNotice(feed: name, head: head).payload
                    try await connection.query("SELECT pg_notify(\(Self.notificationChannel), \(notice))", logger: logger)
                }
                try attempt.commit()
                sent = commit.map { ($0, added) }
                return added
            }
        } catch let error as PostgresTransactionError where error.commitError != nil {
            guard let sent else { throw error }
            logger.warning(
                "PostgreSQL's answer to a COMMIT was lost; asking it what became of the write",
                metadata: ["error": "\(String(reflecting: error.commitError!))"])
            let direct = direct
            let logger = logger
            let connect = { @Sendable in try await PostgresConnection.connect(configuration: direct, id: 0, logger: logger) }
            switch try await sent.commit.outcome(connect: connect, logger: logger, within: Self.commitCheckDeadline) {
            case .committed:
                logger.notice("The write whose COMMIT's answer was lost did commit")
                return sent.added
            case .rolledBack:
                throw error
            }
        }
    }

    /// How long a write whose `COMMIT` answer was lost keeps asking PostgreSQL what became of it.
    static let commitCheckDeadline: Duration = .seconds(10)
}
