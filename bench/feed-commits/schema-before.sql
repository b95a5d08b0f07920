DROP TABLE IF EXISTS item, feed_head;
CREATE TABLE item (id text COLLATE "C" PRIMARY KEY, title text NOT NULL, summary text, link text, author text, published bigint NOT NULL, position bigint NOT NULL UNIQUE);
CREATE INDEX item_order ON item (published, id);
CREATE TABLE feed_head (one boolean PRIMARY KEY DEFAULT true CHECK (one), position bigint NOT NULL);
INSERT INTO feed_head (position) VALUES (0);
