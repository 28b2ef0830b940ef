package dev.gpushare.persistence;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.pekko.serialization.jackson.JacksonMigration;

/**
 * The breaking change of {@link ShareGranted} version 2: version 1 had a flat {@code "core": N}
 * that was both the core and the memory limit; version 2 has {@code
 * "limits":{"core":N,"memory":N}}. Registered under {@code pekko.serialization.jackson.migrations}
 * with the class name as key; Pekko calls {@link #transform} for every payload whose manifest
 * carries a lower version than {@link #currentVersion} (no {@code #} in the manifest means version
 * 1), and writes new payloads with {@code #2}.
 */
public final class ShareGrantedMigration extends JacksonMigration {

  @Override
  public int currentVersion() {
    return 2;
  }

  @Override
  public JsonNode transform(int fromVersion, JsonNode json) {
    ObjectNode event = (ObjectNode) json;
    if (fromVersion < 2) {
      JsonNode core = event.remove("core");
      int percent = core == null ? 0 : core.asInt();
      event.putObject("limits").put("core", percent).put("memory", percent);
    }
    return event;
  }
}
