BEGIN;
SELECT position + 1 AS next, txid_current(), pg_backend_pid() FROM feed_head FOR UPDATE \gset
SELECT id FROM item WHERE id = ANY(ARRAY['i' || :next]);
INSERT INTO item (id, title, published, position) VALUES ('i' || :next, 'title', :next, :next);
UPDATE feed_head SET position = :next;
SELECT pg_notify('ptr_feed_head', :next::text);
COMMIT;
