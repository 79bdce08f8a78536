-- A cluster's shared state: the nodes, who owns which shard, and each
-- shard's journal of record. Times are the database's own clock.

CREATE TABLE cluster_nodes (
    node_id       text PRIMARY KEY,
    advertise_url text NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per shard, made here and never deleted. A shard is owned while
-- node_id is set and expires_at is still ahead of now(); every taking
-- raises epoch, and a journal append checks it (fencing).
CREATE TABLE shard_leases (
    shard      integer PRIMARY KEY CHECK (shard >= 0 AND shard < 64),
    node_id    text,
    epoch      bigint NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO shard_leases (shard) SELECT generate_series(0, 63);

-- Each shard's journal records in order; epoch is the lease epoch of the
-- owner that wrote the record.
CREATE TABLE shard_records (
    shard  integer NOT NULL,
    seq    bigint  NOT NULL,
    epoch  bigint  NOT NULL,
    record bytea   NOT NULL,
    PRIMARY KEY (shard, seq)
);
