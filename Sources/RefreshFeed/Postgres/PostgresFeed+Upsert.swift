import NIOCore
import PostgresNIO
import RefreshJSON
import Synchronization

extension PostgresFeed {
    /// Upserts by id in one transaction: what the write did.
    func store(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey>) async throws -> FeedWrite {
        try await write(items, keepingDatesOf: undated)
    }

    /// The same, answering the items as stored, the head the write made (`nil` when it added
    /// nothing) and the edits it made. An item of `undated` stored already keeps its date.
    func write(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey> = []) async throws -> FeedWrite {
        guard !items.isEmpty else { return FeedWrite(stored: []) }
        try ItemRules.check(items)
        return try await answered("storing items") { attempt in
            try await self.migrated()
            return try await self.upsert(items, replacing: true, keepingDatesOf: undated, attempt)
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

    /// New ids take the next positions and versions in feed order while the feed's head row
    /// is locked (made by the feed's first write), known ids whose fields differ are edited in
    /// place and take versions too; the commit notifies every instance of the feed's new head,
    /// version and edits. The steps run in the database (`ptr_publish`, the schema's v6), so a
    /// publish is three round trips (`BEGIN`, the function, `COMMIT`) whatever it holds; the
    /// function answers the head it made, so the publisher's sessions hear of it without a read.
    ///
    /// When the connection drops after `COMMIT` was sent, the answer is what PostgreSQL says
    /// became of the transaction (``UncertainCommit``), not a guess either way.
    private func upsert(
        _ items: [FeedItem], replacing: Bool, keepingDatesOf undated: Set<ItemKey> = [], _ attempt: Attempt
    ) async throws -> FeedWrite {
        // The last of a batch's items with one id wins, as if they were stored one by one.
        let given = ItemKey.lastOfEachID(items)
        let batch = given.sorted { $0.dateOrder < $1.dateOrder }
        let rows = Self.functionArgument(batch, keepingDatesOf: undated)
        return try await committing(attempt) { connection in
            let answer = try await connection.query(
                """
                SELECT added, transaction, backend, head, head_id, item_positions, item_dates, item_versions, item_kinds, version \
                FROM ptr_publish(\(self.name.rawValue), \(rows)::jsonb, \(replacing), \(Self.notificationChannel), \(self.lockTimeout))
                """, logger: self.logger)
            for try await row in answer.decode((Int32, Int64, Int32, Int64, String?, [Int64], [Int64], [Int64], [Int32], Int64).self) {
                let (added, transaction, backend, head, headID, positions, dates, versions, kinds, version) = row
                guard [positions.count, dates.count, versions.count, kinds.count].allSatisfy({ $0 == batch.count }) else {
                    throw FeedStoreUnavailable("PostgreSQL's publish function answered \(positions.count) positions for \(batch.count) items")
                }
                var stored: [ItemKey: FeedItem] = [:]
                var changes: [FeedChange] = []
                for (index, item) in batch.enumerated() {
                    var kept = item
                    kept.position = positions[index]
                    kept.published = Timestamp(milliseconds: dates[index])
                    kept.version = versions[index]
                    stored[ItemKey(item.id)] = kept
                    if kinds[index] == 2 { changes.append(.update(kept)) }
                }
                // Ids compare by their bytes, as the store keys them (``ItemKey``).
                let item = headID.flatMap { stored[ItemKey($0)] }
                let written = FeedWrite(
                    stored: given.compactMap { stored[ItemKey($0.id)] }, head: item.map { FeedHead(position: head, item: $0, version: version) },
                    added: Int(added), changes: changes.sorted { $0.version < $1.version }, version: version)
                return (UncertainCommit(transaction: transaction, backend: backend), written)
            }
            throw FeedStoreUnavailable("PostgreSQL's publish function answered nothing")
        }
    }

    public func replace(_ item: FeedItem, ifVersion version: FeedVersion?) async throws -> FeedWrite {
        try ItemRules.check([item])
        return try await change(id: item.id, to: item, ifVersion: version)
    }

    public func remove(id: String, ifVersion version: FeedVersion?) async throws -> FeedWrite {
        try await change(id: id, to: nil, ifVersion: version)
    }

    /// An edit in place (`item`) or a removal (`nil`) of the item `id`, in one round trip
    /// (`ptr_change`) while the feed's head row is locked.
    private func change(id: String, to item: FeedItem?, ifVersion expected: FeedVersion?) async throws -> FeedWrite {
        let json = item.map { Self.functionArgument([$0]) }.map { String($0.dropFirst().dropLast()) }
        return try await answered(item == nil ? "removing an item" : "editing an item") { attempt in
            try await self.migrated()
            return try await self.committing(attempt) { connection in
                let answer = try await connection.query(
                    """
                    SELECT found, current_version, version, item_position, head, transaction, backend \
                    FROM ptr_change(\(self.name.rawValue), \(id), \(json)::jsonb, \(expected), \(Self.notificationChannel), \
                    \(self.lockTimeout), \(Timestamp.now().milliseconds))
                    """, logger: self.logger)
                for try await row in answer.decode((Bool, Int64, Int64, Int64, Int64, Int64, Int32).self) {
                    let (found, current, version, position, _, transaction, backend) = row
                    guard found else { throw FeedItemNotFound(id: id) }
                    if let expected, expected != current { throw FeedVersionMismatch(current: current) }
                    let commit = UncertainCommit(transaction: transaction, backend: backend)
                    guard var kept = item else {
                        return (commit, FeedWrite(stored: [], changes: [.remove(id: id, position: position, version: version)], version: version))
                    }
                    kept.position = position
                    kept.version = version
                    let changed = version != current
                    return (commit, FeedWrite(stored: [kept], changes: changed ? [.update(kept)] : [], version: version))
                }
                throw FeedStoreUnavailable("PostgreSQL's change function answered nothing")
            }
        }
    }

    /// A write's lock timeout: a writer stuck holding the head would stop every instance's
    /// writes, so waiting for it ends within the deadline.
    var lockTimeout: String { "\(operationDeadline.components.seconds)s" }

    /// Runs `body` in a transaction and commits it; answers what `body` answered. A commit
    /// whose answer is lost is answered by what PostgreSQL says became of it, and so is one
    /// whose answer has not come within the operation deadline (a peer gone silent, which TCP
    /// may take minutes to notice): its connection is closed under it, and the write is
    /// answered within the deadline and ``commitCheckDeadline`` after it.
    private func committing(
        _ attempt: Attempt, _ body: @escaping @Sendable (PostgresConnection) async throws -> (UncertainCommit, FeedWrite)
    ) async throws -> FeedWrite {
        let sent = SentCommit()
        do {
            return try await client.withConnection { [operationDeadline, logger] leased in
                // Disarmed while the connection is still this write's, and once a close it began
                // has ended: it never closes one the pool has handed to someone else.
                let watchdog = CommitWatchdog()
                do {
                    let written = try await leased.withTransaction(logger: logger) { connection in
                        try attempt.mayGoOn()
                        let outcome = try await body(connection)
                        try attempt.commit()
                        sent.value = outcome
                        watchdog.arm(after: operationDeadline) { try? await connection.close() }
                        return outcome.1
                    }
                    await watchdog.disarm()
                    return written
                } catch {
                    await watchdog.disarm()
                    throw error
                }
            }
        } catch let error as PostgresTransactionError where error.commitError != nil {
            guard let sent = sent.value else { throw error }
            logger.warning(
                "PostgreSQL's answer to a COMMIT was lost; asking it what became of the write",
                metadata: ["error": "\(String(reflecting: error.commitError!))"])
            let direct = direct
            let logger = logger
            let connect = { @Sendable in try await PostgresConnection.connect(configuration: direct, id: 0, logger: logger) }
            switch try await sent.0.outcome(connect: connect, logger: logger, within: Self.commitCheckDeadline) {
            case .committed:
                logger.notice("The write whose COMMIT's answer was lost did commit")
                return sent.1
            case .rolledBack:
                throw error
            }
        } catch let error as PostgresTransactionError {
            // The body's own refusal (an id the feed does not hold, another version), rolled back.
            if let closure = error.closureError, closure is FeedItemNotFound || closure is FeedVersionMismatch { throw closure }
            throw error
        }
    }

    /// Closes a connection whose `COMMIT` has not been answered in time, unless disarmed
    /// first: whichever of the two comes first decides, so a disarmed watchdog never acts, and
    /// disarming one that acted waits for its close to end.
    private final class CommitWatchdog: Sendable {
        private enum State {
            case idle
            case armed(Task<Void, Never>)
            case fired(Task<Void, Never>)
            case done
        }

        private let state = Mutex(State.idle)

        func arm(after delay: Duration, _ action: @escaping @Sendable () async -> Void) {
            let task = Task {
                guard (try? await Task.sleep(for: delay)) != nil, self.fire() else { return }
                await action()
            }
            state.withLock { state in
                if case .idle = state { state = .armed(task) } else { task.cancel() }
            }
        }

        /// Whether the timer may act: it is the first to end the watch.
        private func fire() -> Bool {
            state.withLock { state in
                guard case .armed(let task) = state else { return false }
                state = .fired(task)
                return true
            }
        }

        func disarm() async {
            let (pending, fired) = state.withLock { state -> (Task<Void, Never>?, Bool) in
                defer { state = .done }
                switch state {
                case .armed(let task): return (task, false)
                case .fired(let task): return (task, true)
                case .idle, .done: return (nil, false)
                }
            }
            if fired { await pending?.value } else { pending?.cancel() }
        }
    }

    /// What a transaction's body answered, kept for a commit whose answer is lost.
    private final class SentCommit: Sendable {
        private let answer = Mutex<(UncertainCommit, FeedWrite)?>(nil)

        var value: (UncertainCommit, FeedWrite)? {
            get { answer.withLock { $0 } }
            set { answer.withLock { $0 = newValue } }
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
