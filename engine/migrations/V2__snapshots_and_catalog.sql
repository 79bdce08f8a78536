-- Each shard's latest state, so a new owner replays only the records
-- after it; and the catalog every node reads.

CREATE TABLE shard_snapshots (
    shard    integer NOT NULL,
    seq      bigint  NOT NULL,
    epoch    bigint  NOT NULL,
    taken_at timestamptz NOT NULL DEFAULT now(),
    state    bytea   NOT NULL,
    PRIMARY KEY (shard, seq)
);

-- Catalog entries (merchants, credentials, vendors, users) by kind and id.
-- Every write takes the next version under one lock, so versions commit in
-- order and a node that has read through version v has missed none below
-- it. A deleted entry stays as a tombstone (body NULL) for nodes to see.
CREATE TABLE catalog_entries (
    kind    text   NOT NULL,
    id      text   NOT NULL,
    version bigint NOT NULL UNIQUE,
    body    bytea,
    PRIMARY KEY (kind, id)
);
CREATE SEQUENCE catalog_versions;
