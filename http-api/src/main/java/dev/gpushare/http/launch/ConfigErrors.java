package dev.gpushare.http.launch;

import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigOrigin;
import com.typesafe.config.ConfigRenderOptions;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import dev.gpushare.arbiter.Quantity;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/** Collects every configuration error, each naming key, origin, value and rule. */
final class ConfigErrors {
  private final List<String> messages = new ArrayList<>();

  void add(String key, ConfigValue value, String rule) {
    String given;
    if (value == null) {
      given = "missing";
    } else {
      given = "'" + shown(value) + "' given" + where(value.origin());
    }
    messages.add(key + ": " + given + "; " + rule);
  }

  /** An error whose value did not come from the configuration: {@code given} says what it was. */
  void addGiven(String key, String given, String rule) {
    messages.add(key + ": " + given + "; " + rule);
  }

  /** An error whose value is not shown (a password): only where it was set. */
  void addHidden(String key, ConfigValue value, String rule) {
    messages.add(
        key + ": " + (value == null ? "missing" : "given" + where(value.origin())) + "; " + rule);
  }

  void throwIfAny() {
    if (!messages.isEmpty()) {
      throw new LaunchException(
          "invalid configuration ("
              + messages.size()
              + (messages.size() == 1 ? " error" : " errors")
              + "):\n  "
              + String.join("\n  ", messages));
    }
  }

  void unknownKeys(ConfigObject object, String at, Set<String> known) {
    object.keySet().stream()
        .sorted()
        .filter(key -> !known.contains(key))
        .forEach(
            key ->
                add(
                    at + "." + quoted(key),
                    object.get(key),
                    "unknown key; accepted keys: " + String.join(", ", sorted(known))));
  }

  ConfigObject object(ConfigObject parent, String key, String at, boolean required) {
    ConfigValue value = parent.get(key);
    if (value == null) {
      if (required) {
        add(at + "." + key, null, "required; expected an object");
      }
      return null;
    }
    if (value.valueType() != ConfigValueType.OBJECT) {
      add(at + "." + key, value, "expected an object { … }");
      return null;
    }
    return (ConfigObject) value;
  }

  /** A required scalar, read as text and converted; {@code null} when absent or rejected. */
  <T> T scalar(
      ConfigObject parent, String key, String at, String rule, Function<String, Optional<T>> read) {
    ConfigValue value = parent.get(key);
    String field = at + "." + key;
    if (value == null) {
      add(field, null, "required; expected " + rule);
      return null;
    }
    Optional<T> result = isScalar(value) ? read.apply(text(value)) : Optional.empty();
    if (result.isEmpty()) {
      add(field, value, "expected " + rule);
      return null;
    }
    return result.get();
  }

  String quantity(ConfigValue value, String field, boolean required) {
    if (value == null) {
      if (required) {
        add(field, null, "required; " + QUANTITY_RULE);
      }
      return null;
    }
    if (value.valueType() != ConfigValueType.STRING && value.valueType() != ConfigValueType.NUMBER
        || !isQuantity(text(value))) {
      add(field, value, QUANTITY_RULE);
      return null;
    }
    return text(value);
  }

  Map<String, String> quantities(ConfigObject parent, String key, String at, boolean required) {
    ConfigObject object = object(parent, key, at, required);
    if (object == null) {
      return null;
    }
    Map<String, String> result = new LinkedHashMap<>();
    object.keySet().stream()
        .sorted()
        .forEach(
            name -> {
              ConfigValue value = object.get(name);
              String field = at + "." + key + "." + quoted(name);
              if (value.valueType() == ConfigValueType.OBJECT) {
                add(field, value, "expected a quantity, not an object; " + DOTTED_KEYS);
                return;
              }
              String quantity = quantity(value, field, true);
              if (quantity != null) {
                result.put(name, quantity);
              }
            });
    return Collections.unmodifiableMap(result);
  }

  Map<String, String> stringMap(ConfigObject parent, String key, String at) {
    ConfigObject object = object(parent, key, at, false);
    if (object == null) {
      return Map.of();
    }
    Map<String, String> result = new LinkedHashMap<>();
    object.keySet().stream()
        .sorted()
        .forEach(
            name -> {
              ConfigValue value = object.get(name);
              String field = at + "." + key + "." + quoted(name);
              if (!isScalar(value)) {
                add(
                    field,
                    value,
                    "expected a string value"
                        + (value.valueType() == ConfigValueType.OBJECT ? "; " + DOTTED_KEYS : ""));
                return;
              }
              result.put(name, text(value));
            });
    return Collections.unmodifiableMap(result);
  }

  private static boolean isScalar(ConfigValue value) {
    return switch (value.valueType()) {
      case STRING, NUMBER, BOOLEAN -> true;
      default -> false;
    };
  }

  /**
   * The value as written. HOCON already drops the whitespace around an unquoted value; what is
   * inside quotes is taken as it is, so {@code cpu = " 2"} is not a quantity.
   */
  private static String text(ConfigValue value) {
    return String.valueOf(value.unwrapped());
  }

  private static boolean isQuantity(String text) {
    try {
      Quantity.parse(text);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private static String shown(ConfigValue value) {
    return isScalar(value) ? text(value) : value.render(ConfigRenderOptions.concise());
  }

  private static String where(ConfigOrigin origin) {
    if (origin == null || origin.lineNumber() < 1) {
      return "";
    }
    String name =
        origin.filename() != null
            ? origin.filename()
            : origin.resource() != null ? origin.resource() : origin.description();
    return " at " + name + ":" + origin.lineNumber();
  }

  private static String quoted(String key) {
    return key.matches("[A-Za-z0-9_-]+") ? key : "\"" + key + "\"";
  }

  private static List<String> sorted(Set<String> keys) {
    return keys.stream().sorted().toList();
  }

  static final String QUANTITY_RULE =
      "expected a Kubernetes quantity such as 176, \"500m\" or \"1800Gi\", as written (no"
          + " spaces around it): "
          + Quantity.ACCEPTED;

  static final String DOTTED_KEYS =
      "a key that contains dots must be quoted, e.g. \"nvidia.com/gpu\" = \"16\"";
}
