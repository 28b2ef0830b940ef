package dev.gpushare.http.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.api.ServiceException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;

/**
 * The body of {@code PUT /v1/nodes/{node}/gpus/{index}/processes}: a simulated GPU's compute
 * processes from now on.
 *
 * <pre>
 * {"processes":[{"pid":4242,"podUid":"…","usedMemoryMiB":1024,"smUtilizationPercent":30}]}
 * </pre>
 *
 * {@code processes} is required and may be empty (the GPU is idle again); {@code
 * smUtilizationPercent} is optional (absent or {@code null}: the driver does not report it). The
 * shape is checked here: a missing field, a wrong type or an unknown field is a {@code 400} naming
 * every such field ({@code processes[0].pid}); the values (pid above 0, a pod UID, memory at least
 * 0, utilisation 0 to 100) are the service's rules ({@code 422}).
 */
final class GpuProcessesBody {
  static final String EXPECTED =
      "{\"processes\":[{\"pid\":4242,\"podUid\":\"<pod UID>\",\"usedMemoryMiB\":1024,"
          + "\"smUtilizationPercent\":30}]} (smUtilizationPercent optional; [] when idle)";

  private static final Set<String> KEYS = Set.of("processes");
  private static final List<String> PROCESS_KEYS =
      List.of("pid", "podUid", "usedMemoryMiB", "smUtilizationPercent");

  private GpuProcessesBody() {}

  /** The processes of a parsed body; a {@code 400} {@link ServiceException} naming bad fields. */
  static List<GpuProcess> read(JsonNode body) {
    List<FieldError> errors = new ArrayList<>();
    if (body == null || !body.isObject()) {
      BodyErrors.add(errors, "body", body, "must be a JSON object " + EXPECTED);
      throw BodyErrors.malformed(errors);
    }
    for (Iterator<String> names = body.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!KEYS.contains(name)) {
        BodyErrors.add(errors, name, body.get(name), "unknown field; the body is " + EXPECTED);
      }
    }
    JsonNode list = body.get("processes");
    List<GpuProcess> processes = new ArrayList<>();
    if (list == null || list.isNull()) {
      BodyErrors.add(
          errors,
          "processes",
          null,
          "required: the GPU's compute processes, a list (empty: the GPU is idle)");
    } else if (!list.isArray()) {
      BodyErrors.add(errors, "processes", list, "must be a list of processes: " + EXPECTED);
    } else {
      for (int i = 0; i < list.size(); i++) {
        GpuProcess p = process(list.get(i), "processes[" + i + "]", errors);
        if (p != null) {
          processes.add(p);
        }
      }
    }
    if (!errors.isEmpty()) {
      throw BodyErrors.malformed(errors);
    }
    return Collections.unmodifiableList(processes);
  }

  private static GpuProcess process(JsonNode p, String at, List<FieldError> errors) {
    if (!p.isObject()) {
      BodyErrors.add(
          errors,
          at,
          p,
          "must be an object with "
              + String.join(", ", PROCESS_KEYS)
              + " (smUtilizationPercent optional)");
      return null;
    }
    int before = errors.size();
    for (Iterator<String> names = p.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!PROCESS_KEYS.contains(name)) {
        BodyErrors.add(
            errors,
            at + "." + name,
            p.get(name),
            "unknown field; a process has " + String.join(", ", PROCESS_KEYS));
      }
    }
    Long pid = integer(p, "pid", at, "the process ID, an integer", errors);
    String podUid = null;
    JsonNode uid = p.get("podUid");
    if (uid == null || uid.isNull()) {
      BodyErrors.add(
          errors, at + ".podUid", null, "required: the UID of the pod the process belongs to");
    } else if (!uid.isTextual()) {
      BodyErrors.add(errors, at + ".podUid", uid, "must be a string: the UID of the pod");
    } else {
      podUid = uid.asText();
    }
    Long memory =
        integer(p, "usedMemoryMiB", at, "the device memory it uses in MiB, an integer", errors);
    OptionalInt sm = OptionalInt.empty();
    JsonNode util = p.get("smUtilizationPercent");
    if (util != null && !util.isNull()) {
      if (util.isIntegralNumber() && util.canConvertToInt()) {
        sm = OptionalInt.of(util.intValue());
      } else {
        BodyErrors.add(
            errors,
            at + ".smUtilizationPercent",
            util,
            "must be an integer percentage of the whole GPU (absent or null: not reported)");
      }
    }
    if (errors.size() > before) {
      return null;
    }
    return new GpuProcess(pid, podUid, memory, sm);
  }

  private static Long integer(
      JsonNode p, String key, String at, String what, List<FieldError> errors) {
    JsonNode v = p.get(key);
    if (v == null || v.isNull()) {
      BodyErrors.add(errors, at + "." + key, null, "required: " + what);
      return null;
    }
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      BodyErrors.add(errors, at + "." + key, v, "must be " + what);
      return null;
    }
    return v.longValue();
  }
}
