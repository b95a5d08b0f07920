import NIOCore
import PostgresNIO
import RefreshJSON

extension PostgresFeed {
    /// Upserts by id in one transaction; answers how many ids were new.
    func store(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey>) async throws -> Int {
        try await write(items, keepingDatesOf: undated).added
    }

    /// The same, answering the items as stored and the head the write made (`nil` when it
    /// added nothing). An item of `undated` stored already keeps its date.
    func write(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey> = []) async throws -> Written {
        guard !items.isEmpty else { return Written(stored: [], added: 0, head: nil) }
        try ItemRules.check(items)
        return try await answered("storing items") { attempt in
            try await self.migrated()
            return try await self.upsert(items, replacing: true, keepingDatesOf: undated, attempt)
        }
    }

    /// What one write did.
    struct Written: Sendable {
        /// The items as stored, with their positions, in the order given.
        var stored: [FeedItem]
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
    /// The steps run in the database (`ptr_publish`, the schema's v5), so a publish is three
    /// round trips (`BEGIN`, the function, `COMMIT`) whatever it holds; the function answers
    /// the head it made, so the publisher's sessions hear of it without a read.
    ///
    /// When the connection drops after `COMMIT` was sent, the answer is what PostgreSQL says
    /// became of the transaction (``UncertainCommit``), not a guess either way.
    private func upsert(
        _ items: [FeedItem], replacing: Bool, keepingDatesOf undated: Set<ItemKey> = [], _ attempt: Attempt
    ) async throws
        -> Written
    {
        // The last of a batch's items with one id wins, as if they were stored one by one.
        let given = ItemKey.lastOfEachID(items)
        let batch = given.sorted { $0.dateOrder < $1.dateOrder }
        let rows = Self.functionArgument(batch, keepingDatesOf: undated)
        // A writer stuck holding the head would stop every instance's writes: waiting for it
        // ends within the deadline.
        let lockTimeout = "\(operationDeadline.components.seconds)s"
        var sent: (commit: UncertainCommit, written: Written)?
        do {
            return try await client.withTransaction(logger: logger) { connection in
                try attempt.mayGoOn()
                let answer = try await connection.query(
                    """
                    SELECT added, transaction, backend, head, head_id, item_positions, item_dates \
                    FROM ptr_publish(\(name.rawValue), \(rows)::jsonb, \(replacing), \(Self.notificationChannel), \(lockTimeout))
                    """, logger: logger)
                var outcome: (commit: UncertainCommit, written: Written)?
                for try await (added, transaction, backend, head, headID, positions, dates) in answer.decode(
                    (Int32, Int64, Int32, Int64, String?, [Int64], [Int64]).self)
                {
                    guard positions.count == batch.count, dates.count == batch.count else {
                        throw FeedStoreUnavailable("PostgreSQL's publish function answered \(positions.count) positions for \(batch.count) items")
                    }
                    var stored: [ItemKey: FeedItem] = [:]
                    for (index, item) in batch.enumerated() {
                        var kept = item
                        kept.position = positions[index]
                        kept.published = Timestamp(milliseconds: dates[index])
                        stored[ItemKey(item.id)] = kept
                    }
                    // Ids compare by their bytes, as the store keys them (``ItemKey``).
                    let item = headID.flatMap { stored[ItemKey($0)] }
                    let written = Written(
                        stored: given.compactMap { stored[ItemKey($0.id)] }, added: Int(added), head: item.map { FeedHead(position: head, item: $0) })
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
    static func functionArgument(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey> = []) -> String {
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
            if undated.contains(ItemKey(item.id)) { writer.field("keep_date", true) }
            writer.endObject()
        }
        writer.endArray()
        return String(buffer: writer.buffer)
    }

    /// How long a write whose `COMMIT` answer was lost keeps asking PostgreSQL what became of it.
    static let commitCheckDeadline: Duration = .seconds(10)
}
