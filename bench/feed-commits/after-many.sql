BEGIN;
INSERT INTO feed_head AS h (feed, position) VALUES ('f' || :client_id, 0) ON CONFLICT (feed) DO UPDATE SET position = h.position RETURNING position + 1 AS next, txid_current(), pg_backend_pid() \gset
SELECT id FROM item WHERE feed = 'f' || :client_id AND id = ANY(ARRAY['i' || :next]);
INSERT INTO item (feed, id, title, published, position) VALUES ('f' || :client_id, 'i' || :next, 'title', :next, :next);
UPDATE feed_head SET position = :next WHERE feed = 'f' || :client_id;
SELECT pg_notify('ptr_feed_head', 'f' || :client_id || ' ' || :next);
COMMIT;
