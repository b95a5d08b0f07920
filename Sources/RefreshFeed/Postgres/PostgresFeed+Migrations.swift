import PostgresNIO

extension PostgresFeed {
    /// Versioned schema changes, applied in order, each once, by whichever instance comes
    /// first (the others wait on the lock and then find them applied).
    static let migrations: [(name: String, sql: [String])] = [
        (
            "v1: items, positions, upstream validators",
            [
                // Ids compare byte by byte, as in SQLite and in the cursors pages carry.
                """
                CREATE TABLE item (
                    id text COLLATE "C" PRIMARY KEY,
                    title text NOT NULL,
                    summary text,
                    link text,
                    author text,
                    published bigint NOT NULL,
                    position bigint NOT NULL UNIQUE
                )
                """,
                "CREATE INDEX item_order ON item (published, id)",
                // One row: the newest position. Writers lock it until they commit.
                "CREATE TABLE feed_head (one boolean PRIMARY KEY DEFAULT true CHECK (one), position bigint NOT NULL)",
                "INSERT INTO feed_head (position) VALUES (0)",
                "CREATE TABLE upstream (url text PRIMARY KEY, etag text, last_modified text, checked bigint)",
            ]
        ),
        (
            // Every item so far is `main`'s, at the position it had (and a statement that names
            // no feed still means `main`). Ids and positions become unique within their feed;
            // the one head row becomes a row per feed, so writers to different feeds lock
            // different rows. `main` keeps its row even at 0; other feeds get theirs on their
            // first write.
            "v2: feeds",
            [
                #"ALTER TABLE item ADD COLUMN feed text COLLATE "C" NOT NULL DEFAULT 'main'"#,
                "ALTER TABLE item DROP CONSTRAINT item_pkey",
                "ALTER TABLE item ADD PRIMARY KEY (feed, id)",
                "ALTER TABLE item DROP CONSTRAINT item_position_key",
                "ALTER TABLE item ADD CONSTRAINT item_position_key UNIQUE (feed, position)",
                "DROP INDEX item_order",
                "CREATE INDEX item_order ON item (feed, published, id)",
                #"CREATE TABLE feed_head_by_feed (feed text COLLATE "C" PRIMARY KEY DEFAULT 'main', position bigint NOT NULL)"#,
                "INSERT INTO feed_head_by_feed (feed, position) SELECT 'main', position FROM feed_head",
                "DROP TABLE feed_head",
                "ALTER TABLE feed_head_by_feed RENAME TO feed_head",
                "ALTER INDEX feed_head_by_feed_pkey RENAME TO feed_head_pkey",
            ]
        ),
        (
            // A publish in one statement inside its transaction (``PostgresFeed/upsert``), where
            // it took one per step and per item: the same steps in the same order, in fewer
            // round trips. Its notice is ``HeadNotice``'s payload, `NAME HEAD`.
            "v3: the publish function",
            [
                #"""
                CREATE FUNCTION ptr_publish(p_feed text, p_items jsonb, p_replacing boolean, p_channel text, p_lock_timeout text)
                RETURNS TABLE (added integer, transaction bigint, backend integer)
                LANGUAGE plpgsql AS $$
                DECLARE
                    v_head bigint;
                    v_added integer := 0;
                    v_item jsonb;
                    v_id text;
                BEGIN
                    PERFORM set_config('lock_timeout', p_lock_timeout, true);
                    -- Locks the feed's head row as FOR UPDATE would, creating it at 0 for the
                    -- feed's first write; a second first writer waits for the first's commit.
                    INSERT INTO feed_head AS h (feed, position) VALUES (p_feed, 0)
                        ON CONFLICT (feed) DO UPDATE SET position = h.position
                        RETURNING h.position INTO v_head;
                    FOR v_item IN SELECT e.value FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
                        v_id := v_item->>'id';
                        IF EXISTS (SELECT 1 FROM item WHERE feed = p_feed AND id = v_id) THEN
                            IF p_replacing THEN
                                UPDATE item SET title = v_item->>'title', summary = v_item->>'summary', link = v_item->>'link',
                                    author = v_item->>'author', published = (v_item->>'published')::bigint
                                    WHERE feed = p_feed AND id = v_id;
                            END IF;
                        ELSE
                            v_head := v_head + 1;
                            v_added := v_added + 1;
                            INSERT INTO item (feed, id, title, summary, link, author, published, position)
                                VALUES (p_feed, v_id, v_item->>'title', v_item->>'summary', v_item->>'link', v_item->>'author',
                                    (v_item->>'published')::bigint, v_head);
                        END IF;
                    END LOOP;
                    IF v_added > 0 THEN
                        UPDATE feed_head SET position = v_head WHERE feed = p_feed;
                        PERFORM pg_notify(p_channel, p_feed || ' ' || v_head);
                    END IF;
                    RETURN QUERY SELECT v_added, txid_current(), pg_backend_pid();
                END
                $$
                """#
            ]
        ),
        (
            // The head's item travels with the head, in the publisher's answer and in the
            // notice, so neither the publishing instance nor the ones that hear of it read the
            // head again (``HeadNotice``). The same steps otherwise; the answer only gains
            // columns, so an instance that selects the v3 ones reads them as before.
            "v4: the head travels with the publish",
            [
                "DROP FUNCTION ptr_publish(text, jsonb, boolean, text, text)",
                #"""
                CREATE FUNCTION ptr_publish(p_feed text, p_items jsonb, p_replacing boolean, p_channel text, p_lock_timeout text)
                RETURNS TABLE (added integer, transaction bigint, backend integer, head bigint, head_id text)
                LANGUAGE plpgsql AS $$
                DECLARE
                    v_head bigint;
                    v_added integer := 0;
                    v_item jsonb;
                    v_id text;
                    v_head_item jsonb;
                    v_notice text;
                BEGIN
                    PERFORM set_config('lock_timeout', p_lock_timeout, true);
                    -- Locks the feed's head row as FOR UPDATE would, creating it at 0 for the
                    -- feed's first write; a second first writer waits for the first's commit.
                    INSERT INTO feed_head AS h (feed, position) VALUES (p_feed, 0)
                        ON CONFLICT (feed) DO UPDATE SET position = h.position
                        RETURNING h.position INTO v_head;
                    FOR v_item IN SELECT e.value FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
                        v_id := v_item->>'id';
                        IF EXISTS (SELECT 1 FROM item WHERE feed = p_feed AND id = v_id) THEN
                            IF p_replacing THEN
                                UPDATE item SET title = v_item->>'title', summary = v_item->>'summary', link = v_item->>'link',
                                    author = v_item->>'author', published = (v_item->>'published')::bigint
                                    WHERE feed = p_feed AND id = v_id;
                            END IF;
                        ELSE
                            v_head := v_head + 1;
                            v_added := v_added + 1;
                            v_head_item := v_item;
                            INSERT INTO item (feed, id, title, summary, link, author, published, position)
                                VALUES (p_feed, v_id, v_item->>'title', v_item->>'summary', v_item->>'link', v_item->>'author',
                                    (v_item->>'published')::bigint, v_head);
                        END IF;
                    END LOOP;
                    IF v_added > 0 THEN
                        UPDATE feed_head SET position = v_head WHERE feed = p_feed;
                        -- A notice is shorter than 8000 bytes: an item too long to travel is
                        -- left out, and whoever hears of the head reads it.
                        v_notice := p_feed || ' ' || v_head || ' ' || v_head_item::text;
                        IF octet_length(v_notice) >= 8000 THEN
                            v_notice := p_feed || ' ' || v_head;
                        END IF;
                        PERFORM pg_notify(p_channel, v_notice);
                    END IF;
                    RETURN QUERY SELECT v_added, txid_current(), pg_backend_pid(), v_head, v_head_item->>'id';
                END
                $$
                """#,
            ]
        ),
        (
            // Pages are read by position, which a republish never moves: the order by date is
            // no longer read. The publish answers each item's position and date as stored, and
            // an item marked `keep_date` (an upstream entry without a date) that is stored
            // already keeps the date it was first seen with. The same steps otherwise.
            "v5: the list by position, first-seen dates",
            [
                "DROP INDEX IF EXISTS item_order",
                "DROP FUNCTION ptr_publish(text, jsonb, boolean, text, text)",
                #"""
                CREATE FUNCTION ptr_publish(p_feed text, p_items jsonb, p_replacing boolean, p_channel text, p_lock_timeout text)
                RETURNS TABLE (added integer, transaction bigint, backend integer, head bigint, head_id text,
                    item_positions bigint[], item_dates bigint[])
                LANGUAGE plpgsql AS $$
                DECLARE
                    v_head bigint;
                    v_added integer := 0;
                    v_item jsonb;
                    v_id text;
                    v_head_item jsonb;
                    v_notice text;
                    v_position bigint;
                    v_date bigint;
                    v_positions bigint[] := '{}';
                    v_dates bigint[] := '{}';
                BEGIN
                    PERFORM set_config('lock_timeout', p_lock_timeout, true);
                    -- Locks the feed's head row as FOR UPDATE would, creating it at 0 for the
                    -- feed's first write; a second first writer waits for the first's commit.
                    INSERT INTO feed_head AS h (feed, position) VALUES (p_feed, 0)
                        ON CONFLICT (feed) DO UPDATE SET position = h.position
                        RETURNING h.position INTO v_head;
                    FOR v_item IN SELECT e.value FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
                        v_id := v_item->>'id';
                        SELECT i.position, i.published INTO v_position, v_date FROM item i WHERE i.feed = p_feed AND i.id = v_id;
                        IF FOUND THEN
                            IF p_replacing THEN
                                IF NOT coalesce((v_item->>'keep_date')::boolean, false) THEN
                                    v_date := (v_item->>'published')::bigint;
                                END IF;
                                UPDATE item SET title = v_item->>'title', summary = v_item->>'summary', link = v_item->>'link',
                                    author = v_item->>'author', published = v_date
                                    WHERE feed = p_feed AND id = v_id;
                            END IF;
                        ELSE
                            v_head := v_head + 1;
                            v_added := v_added + 1;
                            v_head_item := v_item;
                            v_position := v_head;
                            v_date := (v_item->>'published')::bigint;
                            INSERT INTO item (feed, id, title, summary, link, author, published, position)
                                VALUES (p_feed, v_id, v_item->>'title', v_item->>'summary', v_item->>'link', v_item->>'author',
                                    v_date, v_head);
                        END IF;
                        v_positions := v_positions || v_position;
                        v_dates := v_dates || v_date;
                    END LOOP;
                    IF v_added > 0 THEN
                        UPDATE feed_head SET position = v_head WHERE feed = p_feed;
                        -- A notice is shorter than 8000 bytes: an item too long to travel is
                        -- left out, and whoever hears of the head reads it.
                        v_notice := p_feed || ' ' || v_head || ' ' || (v_head_item - 'keep_date')::text;
                        IF octet_length(v_notice) >= 8000 THEN
                            v_notice := p_feed || ' ' || v_head;
                        END IF;
                        PERFORM pg_notify(p_channel, v_notice);
                    END IF;
                    RETURN QUERY SELECT v_added, txid_current(), pg_backend_pid(), v_head, v_head_item->>'id', v_positions, v_dates;
                END
                $$
                """#,
            ]
        ),
        (
            // Every stored change takes the feed's next version (items stored before take their
            // positions as theirs); an edit in place or a removal is told to every instance in
            // the commit's notice, `FEED HEAD VERSION {"from": …, "item": …, "changes": […]}`
            // (`from`: the version before the commit; the JSON left out past 8000 bytes: whoever
            // hears it reads what changed). A removal leaves a
            // tombstone, kept until `--change-retention` passes; `horizon` is the newest version
            // whose tombstone was forgotten. Writers take a feed's head row, as publishes did,
            // so versions, like positions, commit in order.
            "v6: versions and removals",
            [
                "ALTER TABLE item ADD COLUMN version bigint NOT NULL DEFAULT 0",
                "UPDATE item SET version = position",
                "CREATE INDEX item_version ON item (feed, version)",
                "ALTER TABLE feed_head ADD COLUMN version bigint NOT NULL DEFAULT 0",
                "ALTER TABLE feed_head ADD COLUMN horizon bigint NOT NULL DEFAULT 0",
                "UPDATE feed_head SET version = position",
                #"""
                CREATE TABLE removal (
                    feed text COLLATE "C" NOT NULL,
                    position bigint NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    version bigint NOT NULL,
                    removed bigint NOT NULL,
                    PRIMARY KEY (feed, position)
                )
                """#,
                "CREATE INDEX removal_version ON removal (feed, version)",
                "CREATE INDEX removal_id ON removal (feed, id)",
                "CREATE INDEX removal_removed ON removal (removed)",
                // What an edit or a removal tells the other instances: the change as JSON.
                #"""
                CREATE FUNCTION ptr_change_json(p_item jsonb, p_position bigint, p_version bigint) RETURNS jsonb
                LANGUAGE sql IMMUTABLE AS $$
                    SELECT jsonb_strip_nulls(jsonb_build_object(
                        'id', p_item->>'id', 'title', p_item->>'title', 'summary', p_item->>'summary', 'link', p_item->>'link',
                        'author', p_item->>'author', 'published', (p_item->>'published')::bigint, 'position', p_position, 'version', p_version))
                $$
                """#,
                // The notice of a commit: the feed, its head and version, and when it fits, the
                // newest item it added and the changes it made.
                #"""
                CREATE FUNCTION ptr_notify(p_channel text, p_feed text, p_head bigint, p_from bigint, p_version bigint, p_item jsonb,
                    p_changes jsonb)
                RETURNS void LANGUAGE plpgsql AS $$
                DECLARE
                    v_notice text;
                BEGIN
                    v_notice := p_feed || ' ' || p_head || ' ' || p_version || ' '
                        || jsonb_strip_nulls(jsonb_build_object('from', p_from, 'item', p_item, 'changes', p_changes))::text;
                    IF octet_length(v_notice) >= 8000 THEN
                        v_notice := p_feed || ' ' || p_head || ' ' || p_version;
                    END IF;
                    PERFORM pg_notify(p_channel, v_notice);
                END
                $$
                """#,
                "DROP FUNCTION ptr_publish(text, jsonb, boolean, text, text)",
                #"""
                CREATE FUNCTION ptr_publish(p_feed text, p_items jsonb, p_replacing boolean, p_channel text, p_lock_timeout text)
                RETURNS TABLE (added integer, transaction bigint, backend integer, head bigint, head_id text,
                    item_positions bigint[], item_dates bigint[], item_versions bigint[], item_kinds integer[], version bigint)
                LANGUAGE plpgsql AS $$
                DECLARE
                    v_head bigint;
                    v_version bigint;
                    v_from bigint;
                    v_added integer := 0;
                    v_item jsonb;
                    v_id text;
                    v_head_item jsonb;
                    v_row item%ROWTYPE;
                    v_date bigint;
                    v_kind integer;
                    v_positions bigint[] := '{}';
                    v_dates bigint[] := '{}';
                    v_versions bigint[] := '{}';
                    v_kinds integer[] := '{}';
                    v_changes jsonb := '[]';
                BEGIN
                    PERFORM set_config('lock_timeout', p_lock_timeout, true);
                    -- Locks the feed's head row as FOR UPDATE would, creating it at 0 for the
                    -- feed's first write; a second first writer waits for the first's commit.
                    INSERT INTO feed_head AS h (feed, position) VALUES (p_feed, 0)
                        ON CONFLICT (feed) DO UPDATE SET position = h.position
                        RETURNING h.position, h.version INTO v_head, v_version;
                    v_from := v_version;
                    FOR v_item IN SELECT e.value FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
                        v_id := v_item->>'id';
                        SELECT * INTO v_row FROM item i WHERE i.feed = p_feed AND i.id = v_id;
                        IF FOUND THEN
                            v_kind := 0;
                            v_date := v_row.published;
                            IF NOT coalesce((v_item->>'keep_date')::boolean, false) THEN
                                v_date := (v_item->>'published')::bigint;
                            END IF;
                            IF p_replacing AND (v_row.title, v_row.summary, v_row.link, v_row.author, v_row.published)
                                IS DISTINCT FROM (v_item->>'title', v_item->>'summary', v_item->>'link', v_item->>'author', v_date) THEN
                                v_version := v_version + 1;
                                v_kind := 2;
                                UPDATE item SET title = v_item->>'title', summary = v_item->>'summary', link = v_item->>'link',
                                    author = v_item->>'author', published = v_date, version = v_version
                                    WHERE feed = p_feed AND id = v_id;
                                v_changes := v_changes || jsonb_build_array(ptr_change_json(
                                    jsonb_set(v_item, '{published}', to_jsonb(v_date)), v_row.position, v_version));
                                v_versions := v_versions || v_version;
                            ELSE
                                v_versions := v_versions || v_row.version;
                                v_date := v_row.published;
                            END IF;
                            v_positions := v_positions || v_row.position;
                            v_dates := v_dates || v_date;
                        ELSE
                            v_head := v_head + 1;
                            v_version := v_version + 1;
                            v_added := v_added + 1;
                            v_kind := 1;
                            v_head_item := ptr_change_json(v_item, v_head, v_version);
                            v_date := (v_item->>'published')::bigint;
                            INSERT INTO item (feed, id, title, summary, link, author, published, position, version)
                                VALUES (p_feed, v_id, v_item->>'title', v_item->>'summary', v_item->>'link', v_item->>'author',
                                    v_date, v_head, v_version);
                            v_positions := v_positions || v_head;
                            v_dates := v_dates || v_date;
                            v_versions := v_versions || v_version;
                        END IF;
                        v_kinds := v_kinds || v_kind;
                    END LOOP;
                    IF v_added > 0 OR jsonb_array_length(v_changes) > 0 THEN
                        UPDATE feed_head SET position = v_head, version = v_version WHERE feed = p_feed;
                        PERFORM ptr_notify(p_channel, p_feed, v_head, v_from, v_version, v_head_item,
                            CASE WHEN jsonb_array_length(v_changes) > 0 THEN v_changes END);
                    END IF;
                    RETURN QUERY SELECT v_added, txid_current(), pg_backend_pid(), v_head, v_head_item->>'id', v_positions, v_dates,
                        v_versions, v_kinds, v_version;
                END
                $$
                """#,
                // An edit in place of one item, or its removal (`p_item` null), if it is at
                // `p_if_version` when that is given. Answers `found`, the item's version before,
                // and, when it changed, the change's version and the position.
                #"""
                CREATE FUNCTION ptr_change(p_feed text, p_id text, p_item jsonb, p_if_version bigint, p_channel text,
                    p_lock_timeout text, p_now bigint)
                RETURNS TABLE (found boolean, current_version bigint, version bigint, item_position bigint, head bigint,
                    transaction bigint, backend integer)
                LANGUAGE plpgsql AS $$
                DECLARE
                    v_head bigint;
                    v_version bigint;
                    v_row item%ROWTYPE;
                    v_change jsonb;
                BEGIN
                    PERFORM set_config('lock_timeout', p_lock_timeout, true);
                    SELECT h.position, h.version INTO v_head, v_version FROM feed_head h WHERE h.feed = p_feed FOR UPDATE;
                    SELECT * INTO v_row FROM item i WHERE i.feed = p_feed AND i.id = p_id;
                    IF NOT FOUND THEN
                        RETURN QUERY SELECT false, 0::bigint, coalesce(v_version, 0), 0::bigint, coalesce(v_head, 0),
                            txid_current(), pg_backend_pid();
                        RETURN;
                    END IF;
                    IF p_if_version IS NOT NULL AND p_if_version <> v_row.version THEN
                        RETURN QUERY SELECT true, v_row.version, v_version, v_row.position, v_head, txid_current(), pg_backend_pid();
                        RETURN;
                    END IF;
                    IF p_item IS NULL THEN
                        v_version := v_version + 1;
                        DELETE FROM item WHERE feed = p_feed AND id = p_id;
                        INSERT INTO removal (feed, position, id, version, removed) VALUES (p_feed, v_row.position, v_row.id, v_version, p_now)
                            ON CONFLICT (feed, position) DO UPDATE SET id = excluded.id, version = excluded.version, removed = excluded.removed;
                        v_change := jsonb_build_object('removed', v_row.id, 'position', v_row.position, 'version', v_version);
                    ELSIF (v_row.title, v_row.summary, v_row.link, v_row.author, v_row.published)
                        IS DISTINCT FROM (p_item->>'title', p_item->>'summary', p_item->>'link', p_item->>'author',
                            (p_item->>'published')::bigint) THEN
                        v_version := v_version + 1;
                        UPDATE item SET title = p_item->>'title', summary = p_item->>'summary', link = p_item->>'link',
                            author = p_item->>'author', published = (p_item->>'published')::bigint, version = v_version
                            WHERE feed = p_feed AND id = p_id;
                        v_change := ptr_change_json(p_item, v_row.position, v_version);
                    ELSE
                        RETURN QUERY SELECT true, v_row.version, v_row.version, v_row.position, v_head, txid_current(), pg_backend_pid();
                        RETURN;
                    END IF;
                    UPDATE feed_head SET version = v_version WHERE feed = p_feed;
                    PERFORM ptr_notify(p_channel, p_feed, v_head, v_version - 1, v_version, NULL, jsonb_build_array(v_change));
                    RETURN QUERY SELECT true, v_row.version, v_version, v_row.position, v_head, txid_current(), pg_backend_pid();
                END
                $$
                """#,
            ]
        ),
    ]

    /// Advisory lock keys: the schema's migration, and the upstream refresh.
    enum LockKey: Int64 {
        case migration = 0x7074_7201
        case upstreamRefresh = 0x7074_7202
    }

    /// Waits until the schema is up to date; a failed attempt is tried again by the next call.
    func migrated() async throws {
        if schema.isMigrated.load(ordering: .acquiring) { return }
        let task = schema.migration.withLock { migration in
            if let migration { return migration }
            let task = Task { try await self.migrate() }
            migration = task
            return task
        }
        do {
            // The migration is shared: a caller that gives up leaves it running for the others.
            let answer = FirstAnswer<Void>()
            try await withTaskCancellationHandler {
                Task {
                    do { answer.give(.success(try await task.value)) } catch { answer.give(.failure(error)) }
                }
                try await answer.value
            } onCancel: {
                answer.give(.failure(CancellationError()))
            }
            schema.isMigrated.store(true, ordering: .releasing)
        } catch let error as CancellationError {
            throw error
        } catch {
            schema.migration.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    private func migrate() async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(LockKey.migration.rawValue))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS schema_migration (name text PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())",
                logger: logger)
            var applied = Set<String>()
            for try await name in try await connection.query("SELECT name FROM schema_migration", logger: logger).decode(String.self) {
                applied.insert(name)
            }
            for migration in Self.migrations where !applied.contains(migration.name) {
                for statement in migration.sql {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schema_migration (name) VALUES (\(migration.name))", logger: logger)
                logger.notice("Applied migration", metadata: ["migration": "\(migration.name)"])
            }
        }
    }

    /// The migrations applied so far, oldest first.
    func appliedMigrations() async throws -> [String] {
        try await migrated()
        var names: [String] = []
        for try await name in try await client.query("SELECT name FROM schema_migration ORDER BY applied, name", logger: logger).decode(String.self) {
            names.append(name)
        }
        return names
    }
}
