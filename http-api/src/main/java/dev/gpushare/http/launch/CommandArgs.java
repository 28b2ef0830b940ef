package dev.gpushare.http.launch;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The arguments of a launcher command ({@code init-schema}, {@code journal}), parsed like the
 * launcher's flags ({@link LauncherOptions}): a flag takes its value as the next argument or after
 * {@code =}, each flag at most once; switches take no value; other arguments are positional. A
 * {@link LaunchException} names the flag, the value and what is accepted (the caller adds the
 * command).
 */
public final class CommandArgs {

  private final Map<String, String> values;
  private final Set<String> switches;
  private final List<String> positional;

  private CommandArgs(Map<String, String> values, Set<String> switches, List<String> positional) {
    this.values = values;
    this.switches = switches;
    this.positional = positional;
  }

  /**
   * Parses {@code args} (without the command's name): {@code valueFlags} take a value, {@code
   * switchFlags} do not; {@code accepted} lists them all for messages.
   */
  public static CommandArgs parse(
      List<String> args, Set<String> valueFlags, Set<String> switchFlags, String accepted) {
    Map<String, String> values = new HashMap<>();
    Set<String> switches = new HashSet<>();
    List<String> positional = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < args.size(); i++) {
      String arg = args.get(i);
      if (!arg.startsWith("--") || arg.equals("--")) {
        positional.add(arg);
        continue;
      }
      int eq = arg.indexOf('=');
      String flag = eq < 0 ? arg : arg.substring(0, eq);
      if (!valueFlags.contains(flag) && !switchFlags.contains(flag)) {
        throw new LaunchException("unknown flag '" + flag + "'; accepted: " + accepted);
      }
      if (!seen.add(flag)) {
        throw new LaunchException(flag + ": given more than once; give it once");
      }
      if (switchFlags.contains(flag)) {
        if (eq >= 0) {
          throw new LaunchException(
              flag + ": takes no value, '" + arg.substring(eq + 1) + "' given");
        }
        switches.add(flag);
        continue;
      }
      String value;
      if (eq >= 0) {
        value = arg.substring(eq + 1);
      } else if (i + 1 < args.size() && !args.get(i + 1).startsWith("--")) {
        value = args.get(++i);
      } else {
        throw new LaunchException(flag + ": missing value");
      }
      values.put(flag, value);
    }
    return new CommandArgs(values, switches, positional);
  }

  public boolean has(String switchFlag) {
    return switches.contains(switchFlag);
  }

  public List<String> positional() {
    return positional;
  }

  public Optional<String> value(String flag) {
    return Optional.ofNullable(values.get(flag));
  }

  /** A path flag's value. */
  public Optional<Path> path(String flag) {
    Optional<String> value = value(flag);
    if (value.isEmpty()) {
      return Optional.empty();
    }
    String text = value.get();
    if (text.isBlank()) {
      throw new LaunchException(flag + ": empty value given; expected a path");
    }
    try {
      return Optional.of(Path.of(text.strip()));
    } catch (InvalidPathException e) {
      throw new LaunchException(
          flag + ": '" + text + "' given; not a valid path (" + e.getReason() + ")");
    }
  }

  /** A whole-number flag's value, at least {@code min}. */
  public Optional<Long> number(String flag, long min, long max, String rule) {
    Optional<String> value = value(flag);
    if (value.isEmpty()) {
      return Optional.empty();
    }
    try {
      long n = Long.parseLong(value.get());
      if (n >= min && n <= max) {
        return Optional.of(n);
      }
    } catch (NumberFormatException e) {
      // reported below with the rule
    }
    throw new LaunchException(flag + ": '" + value.get() + "' given; expected " + rule);
  }
}
