package dev.gpushare.arbiter;

/**
 * Marker for every message, event and snapshot that crosses a serialization boundary (journal,
 * snapshot store, remoting). It is bound to Pekko's {@code jackson-json} serializer in
 * configuration, so the journal stays readable by people and by newer code.
 */
public interface JsonSerializable {}
