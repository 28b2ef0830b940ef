-- gpushare: the PostgreSQL schema of the event journal, tags, snapshots and durable state.
--
-- Copied from pekko-persistence-jdbc 1.1.1, schema/postgres/postgres-create-schema.sql
-- (Apache License 2.0), the current (non-legacy) schema that the plugin's default DAOs use.
-- The tables and columns are the plugin's, unchanged (SchemaDdlTest compares them with the
-- plugin's script, so an upgrade that changes them fails the build). Three changes make the
-- script safe to run again and in one transaction:
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
-- Comments here contain no semicolon: the file is split into statements at semicolons.

CREATE TABLE IF NOT EXISTS event_journal(
  ordering BIGSERIAL,
  persistence_id VARCHAR(255) NOT NULL,
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
  persistence_id VARCHAR(255) NOT NULL,
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
    persistence_id VARCHAR(255) NOT NULL,
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
