package dev.gpushare.http.launch;

import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import dev.gpushare.persistence.JournalSettings;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The journal switch {@code gpushare.journal} of {@link EmbeddedConfig}, checked with the same
 * rules and messages (key, where it was set, the value given, what is accepted):
 *
 * <pre>
 * gpushare.journal {
 *   kind = h2                          # h2 (default) | postgres
 *   min-free-space = 16 MiB            # h2: writes refused below this much free space; 0 = off
 *   postgres {                         # required when kind = postgres
 *     url = "jdbc:postgresql://db:5432/gpushare"
 *     user = "gpushare"
 *     password = "…"                   # or: password-env = "PGPASSWORD" (read at start)
 *     create-schema = false            # true: create missing tables at start
 *   }
 * }
 * </pre>
 *
 * While {@code kind = h2} a {@code postgres} block is only checked for unknown keys, so that a
 * configuration can keep it while switching back to H2.
 */
public final class JournalConfig {

  static final String AT = "gpushare.journal";
  private static final String POSTGRES_AT = AT + ".postgres";
  private static final Set<String> KEYS = Set.of("kind", "postgres", "min-free-space");
  private static final Set<String> POSTGRES_KEYS =
      Set.of("url", "user", "password", "password-env", "create-schema");
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final String KINDS =
      "h2 (the embedded H2 file under --data, the default) or postgres (a PostgreSQL server:"
          + " also give "
          + POSTGRES_AT
          + ".url, user and password or password-env)";

  private JournalConfig() {}

  /** {@code gpushare.journal} of the {@code gpushare} section; {@code null} after an error. */
  static JournalSettings read(
      ConfigObject section, ConfigErrors errors, Function<String, String> environment) {
    ConfigObject journal = errors.object(section, "journal", "gpushare", false);
    if (journal == null) {
      return section.get("journal") == null ? JournalSettings.DEFAULT : null;
    }
    errors.unknownKeys(journal, AT, KEYS);
    String kind =
        journal.get("kind") == null
            ? "h2"
            : errors.scalar(
                journal,
                "kind",
                AT,
                KINDS,
                v -> v.equals("h2") || v.equals("postgres") ? Optional.of(v) : Optional.empty());
    ConfigObject postgres = errors.object(journal, "postgres", AT, false);
    if (postgres != null) {
      errors.unknownKeys(postgres, POSTGRES_AT, POSTGRES_KEYS);
    }
    Long minFreeSpace = minFreeSpace(journal, errors);
    if (kind == null || minFreeSpace == null) {
      return null;
    }
    if (kind.equals("h2")) {
      return new JournalSettings.H2(minFreeSpace);
    }
    if (postgres == null) {
      if (journal.get("postgres") == null) {
        errors.add(
            POSTGRES_AT,
            null,
            "required when "
                + AT
                + ".kind = postgres; expected an object with url, user and password or"
                + " password-env");
      }
      return null;
    }
    return postgres(postgres, errors, environment);
  }

  /** {@code min-free-space}: a HOCON size of 0 or more; {@code null} after an error. */
  private static Long minFreeSpace(ConfigObject journal, ConfigErrors errors) {
    ConfigValue value = journal.get("min-free-space");
    if (value == null) {
      return JournalSettings.H2.DEFAULT_MIN_FREE_SPACE;
    }
    String rule =
        "a size of 0 or more, such as 16 MiB (the default), 512 KiB or 0 (off): while the file"
            + " system of --data has less free, the H2 journal refuses writes and /readyz answers"
            + " 503";
    Long bytes = null;
    if (value.valueType() == ConfigValueType.NUMBER
        || value.valueType() == ConfigValueType.STRING) {
      try {
        bytes = journal.toConfig().getBytes("min-free-space");
      } catch (com.typesafe.config.ConfigException e) {
        bytes = null;
      }
    }
    if (bytes == null || bytes < 0) {
      errors.add(AT + ".min-free-space", value, "expected " + rule);
      return null;
    }
    return bytes;
  }

  private static JournalSettings postgres(
      ConfigObject postgres, ConfigErrors errors, Function<String, String> environment) {
    String url =
        errors.scalar(
            postgres,
            "url",
            POSTGRES_AT,
            "a PostgreSQL JDBC URL such as \"jdbc:postgresql://db:5432/gpushare\"",
            v ->
                v.startsWith("jdbc:postgresql:") && v.length() > "jdbc:postgresql:".length()
                    ? Optional.of(v)
                    : Optional.empty());
    String user =
        errors.scalar(
            postgres,
            "user",
            POSTGRES_AT,
            "the database user, a non-empty string",
            v -> v.isEmpty() ? Optional.empty() : Optional.of(v));
    String password = password(postgres, errors, environment);
    Boolean createSchema =
        postgres.get("create-schema") == null
            ? Boolean.FALSE
            : errors.scalar(
                postgres,
                "create-schema",
                POSTGRES_AT,
                "true (create missing tables at start) or false (the default: the tables must"
                    + " exist; create them with the init-schema command)",
                v ->
                    switch (v) {
                      case "true" -> Optional.of(Boolean.TRUE);
                      case "false" -> Optional.of(Boolean.FALSE);
                      default -> Optional.empty();
                    });
    if (url == null || user == null || password == null || createSchema == null) {
      return null;
    }
    return new JournalSettings.Postgres(url, user, password, createSchema);
  }

  /** {@code password} or {@code password-env} (at most one); empty when neither is given. */
  private static String password(
      ConfigObject postgres, ConfigErrors errors, Function<String, String> environment) {
    ConfigValue password = postgres.get("password");
    ConfigValue variable = postgres.get("password-env");
    if (password != null && variable != null) {
      errors.addHidden(
          POSTGRES_AT + ".password",
          password,
          "give either password or password-env (the name of an environment variable that holds"
              + " it), not both");
      return null;
    }
    if (password != null) {
      if (password.valueType() != ConfigValueType.STRING
          && password.valueType() != ConfigValueType.NUMBER) {
        errors.addHidden(
            POSTGRES_AT + ".password",
            password,
            "expected a string (or give password-env, the name of an environment variable that"
                + " holds it)");
        return null;
      }
      return String.valueOf(password.unwrapped());
    }
    if (variable == null) {
      return "";
    }
    String name =
        errors.scalar(
            postgres,
            "password-env",
            POSTGRES_AT,
            "the name of an environment variable such as PGPASSWORD",
            v -> ENV_NAME.matcher(v).matches() ? Optional.of(v) : Optional.empty());
    if (name == null) {
      return null;
    }
    String value = environment.apply(name);
    if (value == null || value.isEmpty()) {
      errors.add(
          POSTGRES_AT + ".password-env",
          variable,
          "the environment variable "
              + name
              + (value == null ? " is not set" : " is empty")
              + "; set it to the database password (e.g. from a Kubernetes Secret),"
              + " or give password");
      return null;
    }
    return value;
  }
}
