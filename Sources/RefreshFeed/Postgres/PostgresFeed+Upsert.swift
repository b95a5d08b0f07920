import NIOCore
import PostgresNIO
import RefreshJSON

extension PostgresFeed {
    /// Upserts by id in one transaction; answers how many ids were new.
    func store(_ items: [FeedItem]) async throws -> Int {
        try await write(items).added
    }

    /// The same, answering also the head the write made (`nil` when it added nothing).
    func write(_ items: [FeedItem]) async throws -> Written {
        guard !items.isEmpty else { return Written(added: 0, head: nil) }
        try ItemRules.check(items)
        return try await answered("storing items") { attempt in
            try await self.migrated()
            return try await self.upsert(items, replacing: true, attempt)
        }
    }

    /// What one write did.
    struct Written: Sendable {
        /// How many ids were new.
        var added: Int
        /// The head the write's new items made, as committed; a later write may have moved it.
        var head: FeedHead?
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
    /// The steps run in the database (`ptr_publish`, the schema's v4), so a publish is three
    /// round trips (`BEGIN`, the function, `COMMIT`) whatever it holds; the function answers
    /// the head it made, so the publisher's sessions hear of it without a read.
    ///
    /// When the connection drops after `COMMIT` was sent, the answer is what PostgreSQL says
    /// became of the transaction (``UncertainCommit``), not a guess either way.
    private func upsert(_ items: [FeedItem], replacing: Bool, _ attempt: Attempt) async throws -> Written {
        // The last of a batch's items with one id wins, as if they were stored one by one.
        let batch = ItemKey.lastOfEachID(items).sorted { $0.cursor < $1.cursor }
        let rows = Self.functionArgument(batch)
        // A writer stuck holding the head would stop every instance's writes: waiting for it
        // ends within the deadline.
        let lockTimeout = "\(operationDeadline.components.seconds)s"
        var sent: (commit: UncertainCommit, written: Written)?
        do {
            return try await client.withTransaction(logger: logger) { connection in
                try attempt.mayGoOn()
                let answer = try await connection.query(
                    """
                    SELECT added, transaction, backend, head, head_id \
                    FROM ptr_publish(\(name.rawValue), \(rows)::jsonb, \(replacing), \(Self.notificationChannel), \(lockTimeout))
                    """, logger: logger)
                var outcome: (commit: UncertainCommit, written: Written)?
                for try await (added, transaction, backend, head, headID) in answer.decode((Int32, Int64, Int32, Int64, String?).self) {
                    // Ids compare by their bytes, as the store keys them (``ItemKey``).
                    let item = headID.flatMap { id in batch.last { $0.id.utf8.elementsEqual(id.utf8) } }
                    let written = Written(added: Int(added), head: item.map { FeedHead(position: head, item: $0) })
                    outcome = (UncertainCommit(transaction: transaction, backend: backend), written)
                }
                guard let outcome else { throw FeedStoreUnavailable("PostgreSQL's publish function answered nothing") }
                try attempt.commit()
                sent = outcome
                return outcome.written
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
                return sent.written
            case .rolledBack:
                throw error
            }
        }
    }

    /// The items as the publish function reads them: a JSON array of objects with the item's
    /// fields (absent ones `null`) and `published` in milliseconds, in the order they take
    /// positions.
    static func functionArgument(_ items: [FeedItem]) -> String {
        var writer = JSONWriter(capacity: 128 * items.count)
        writer.beginArray()
        for item in items {
            writer.beginObject()
            writer.field("id", item.id)
            writer.field("title", item.title)
            writer.field("summary", item.summary)
            writer.field("link", item.link)
            writer.field("author", item.author)
            writer.field("published", Int(item.published.milliseconds))
            writer.endObject()
        }
        writer.endArray()
        return String(buffer: writer.buffer)
    }

    /// How long a write whose `COMMIT` answer was lost keeps asking PostgreSQL what became of it.
    static let commitCheckDeadline: Duration = .seconds(10)
}
