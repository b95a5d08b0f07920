DROP TABLE IF EXISTS item, feed_head;
CREATE TABLE item (id text COLLATE "C" NOT NULL, title text NOT NULL, summary text, link text, author text, published bigint NOT NULL, position bigint NOT NULL, feed text COLLATE "C" NOT NULL DEFAULT 'main', PRIMARY KEY (feed, id), UNIQUE (feed, position));
CREATE INDEX item_order ON item (feed, published, id);
CREATE TABLE feed_head (feed text COLLATE "C" PRIMARY KEY DEFAULT 'main', position bigint NOT NULL);
INSERT INTO feed_head (feed, position) VALUES ('main', 0);
