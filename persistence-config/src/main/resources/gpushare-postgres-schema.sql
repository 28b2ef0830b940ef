-- gpushare: the PostgreSQL schema of the event journal, tags, snapshots and durable state.
--
-- Copied from pekko-persistence-jdbc 1.1.1, schema/postgres/postgres-create-schema.sql
-- (Apache License 2.0), the current (non-legacy) schema that the plugin's default DAOs use.
-- The tables and columns are the plugin's (SchemaDdlTest compares them with the plugin's
-- script, so an upgrade that changes them fails the build) but for one change of width:
--   * persistence_id is VARCHAR(512), not VARCHAR(255), in event_journal, snapshot and
--     durable_state. gpushare's persistence ids hold Kubernetes names (namespace up to 63,
--     pod and node names up to 253 characters): the longest, Pod|<namespace>/<name>/<uid>,
--     is 450 characters with a uid of 128 (358 with a Kubernetes uid of 36). 512 leaves room,
--     and 512 characters of even 4-byte UTF-8 stay under PostgreSQL's 2704-byte limit of a
--     B-tree key (the primary key). persistence-config/EVENTS.md lists every id and its length.
--   * a journal made by an older script (VARCHAR(255)) is widened in place by the DO blocks
--     at the end: each alters its column only while it is narrower than 512 characters, so a
--     second run changes nothing, a wider or unbounded column is left alone, and no row is
--     touched (PostgreSQL changes only the declared length of a VARCHAR it widens: no table
--     rewrite, under a short ACCESS EXCLUSIVE lock of the table).
--   * one index of gpushare's own, event_tag_tag_idx on event_tag(tag, event_id), at the end of
--     the script: a pod's history is read by tag.
-- Three changes make the script safe to run again and in one transaction:
--   * every index is CREATE ... IF NOT EXISTS, as every table already was
--   * the durable_state indexes are built without CONCURRENTLY, which cannot run in a
--     transaction and gains nothing on a new, empty table
--   * names are not qualified with "public." but resolved through the search_path, exactly
--     as the plugin's unqualified queries resolve them (the first existing schema of the
--     user's search_path, normally public)
--
-- `java -jar gpushare.jar init-schema --config FILE` runs it: all statements in one
-- transaction, so either every object exists afterwards or nothing changed. Operators who
-- apply DDL themselves can run this file as it is, e.g. psql -1 -f gpushare-postgres-schema.sql
-- (it is in persistence-config's jar and in the project at
-- persistence-config/src/main/resources/gpushare-postgres-schema.sql).
-- Comments here contain no semicolon: the file is split into statements at semicolons that are
-- not inside a $$-quoted DO block.

CREATE TABLE IF NOT EXISTS event_journal(
  ordering BIGSERIAL,
  persistence_id VARCHAR(512) NOT NULL,
  sequence_number BIGINT NOT NULL,
  deleted BOOLEAN DEFAULT FALSE NOT NULL,

  writer VARCHAR(255) NOT NULL,
  write_timestamp BIGINT,
  adapter_manifest VARCHAR(255),

  event_ser_id INTEGER NOT NULL,
  event_ser_manifest VARCHAR(255) NOT NULL,
  event_payload BYTEA NOT NULL,

  meta_ser_id INTEGER,
  meta_ser_manifest VARCHAR(255),
  meta_payload BYTEA,

  PRIMARY KEY(persistence_id, sequence_number)
);

CREATE UNIQUE INDEX IF NOT EXISTS event_journal_ordering_idx ON event_journal(ordering);

CREATE TABLE IF NOT EXISTS event_tag(
    event_id BIGINT,
    tag VARCHAR(256),
    PRIMARY KEY(event_id, tag),
    CONSTRAINT fk_event_journal
      FOREIGN KEY(event_id)
      REFERENCES event_journal(ordering)
      ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS snapshot (
  persistence_id VARCHAR(512) NOT NULL,
  sequence_number BIGINT NOT NULL,
  created BIGINT NOT NULL,

  snapshot_ser_id INTEGER NOT NULL,
  snapshot_ser_manifest VARCHAR(255) NOT NULL,
  snapshot_payload BYTEA NOT NULL,

  meta_ser_id INTEGER,
  meta_ser_manifest VARCHAR(255),
  meta_payload BYTEA,

  PRIMARY KEY(persistence_id, sequence_number)
);

CREATE TABLE IF NOT EXISTS durable_state (
    global_offset BIGSERIAL,
    persistence_id VARCHAR(512) NOT NULL,
    revision BIGINT NOT NULL,
    state_payload BYTEA NOT NULL,
    state_serial_id INTEGER NOT NULL,
    state_serial_manifest VARCHAR(255),
    tag VARCHAR,
    state_timestamp BIGINT NOT NULL,
    PRIMARY KEY(persistence_id)
    );
CREATE INDEX IF NOT EXISTS state_tag_idx on durable_state (tag);
CREATE INDEX IF NOT EXISTS state_global_offset_idx on durable_state (global_offset);

-- Widening a journal made with VARCHAR(255) (atttypmod is the declared length plus 4).

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute
             WHERE attrelid = to_regclass('event_journal') AND attname = 'persistence_id'
               AND NOT attisdropped AND atttypid = 'varchar'::regtype
               AND atttypmod BETWEEN 0 AND 515) THEN
    ALTER TABLE event_journal ALTER COLUMN persistence_id TYPE VARCHAR(512);
  END IF;
END
$$;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute
             WHERE attrelid = to_regclass('snapshot') AND attname = 'persistence_id'
               AND NOT attisdropped AND atttypid = 'varchar'::regtype
               AND atttypmod BETWEEN 0 AND 515) THEN
    ALTER TABLE snapshot ALTER COLUMN persistence_id TYPE VARCHAR(512);
  END IF;
END
$$;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute
             WHERE attrelid = to_regclass('durable_state') AND attname = 'persistence_id'
               AND NOT attisdropped AND atttypid = 'varchar'::regtype
               AND atttypmod BETWEEN 0 AND 515) THEN
    ALTER TABLE durable_state ALTER COLUMN persistence_id TYPE VARCHAR(512);
  END IF;
END
$$;

-- gpushare's own index: a pod's history is read by tag (eventsByTag, persistence-config
-- JournalInspector.history), and the plugin keys event_tag by (event_id, tag) only, so without
-- it every page of a history would read the whole tag table. Built once, like the others
-- (IF NOT EXISTS, not CONCURRENTLY: on a large journal of an older version, init-schema holds a
-- SHARE lock on event_tag, blocking its writes, while it builds).
CREATE INDEX IF NOT EXISTS event_tag_tag_idx ON event_tag(tag, event_id);
