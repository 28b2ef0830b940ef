package dev.gpushare.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * The commands that read or change one thing through the API and print the answer: a table or a
 * description by default ({@link Printers}), the API's JSON or YAML with {@code -o}.
 */
final class ViewCommands {
  private ViewCommands() {}

  /** {@code -o json|yaml}. */
  static final class OutputOption {
    @Option(
        names = {"-o", "--output"},
        paramLabel = "FORMAT",
        description = "json or yaml: the API's answer as it is; default: a table")
    Output format;
  }

  /** What every command here shares: the root (server, token, streams) and {@code -o}. */
  abstract static class Base implements Callable<Integer> {
    @ParentCommand GpushareCli cli;
    @Mixin OutputOption output;

    @Override
    public Integer call() {
      JsonNode answer = fetch(cli.client());
      cli.out().print(output.format == null ? human(answer) : output.format.write(answer));
      cli.out().flush();
      return 0;
    }

    abstract JsonNode fetch(ApiClient api);

    abstract String human(JsonNode answer);
  }

  /** A command about one pod, named {@code NS/NAME}. */
  abstract static class PodCommand extends Base {
    @Parameters(paramLabel = "NS/NAME", description = "the pod")
    String pod;

    /** The pod's API path. */
    String podPath() {
      return ApiClient.podPath(PodRef.parse(pod, "NS/NAME"));
    }
  }

  @Command(
      name = "nodes",
      mixinStandardHelpOptions = true,
      description = "List the nodes: NAME POLICY GPUS HEALTHY QUEUE (GET /v1/nodes).")
  static final class Nodes extends Base {
    @Override
    JsonNode fetch(ApiClient api) {
      return api.get("/v1/nodes");
    }

    @Override
    String human(JsonNode answer) {
      return Printers.nodes(answer);
    }
  }

  @Command(
      name = "node",
      mixinStandardHelpOptions = true,
      description =
          "Describe a node: policy, QoS, status, GPUs with their shares in use, the ready queue,"
              + " Events (GET /v1/nodes/NAME).")
  static final class Node extends Base {
    @Parameters(paramLabel = "NAME", description = "the node")
    String name;

    @Override
    JsonNode fetch(ApiClient api) {
      return api.get("/v1/nodes/" + ApiClient.enc(name));
    }

    @Override
    String human(JsonNode answer) {
      return Printers.node(answer);
    }
  }

  @Command(
      name = "queue",
      mixinStandardHelpOptions = true,
      description =
          "A node's ready queue, head first: POSITION POD WAITING LIMITS (core/memory %%)"
              + " (GET /v1/nodes/NODE/queue).")
  static final class Queue extends Base {
    @Parameters(paramLabel = "NODE", description = "the node")
    String node;

    @Override
    JsonNode fetch(ApiClient api) {
      return api.get("/v1/nodes/" + ApiClient.enc(node) + "/queue");
    }

    @Override
    String human(JsonNode answer) {
      return Printers.queue(node, answer);
    }
  }

  @Command(
      name = "pods",
      mixinStandardHelpOptions = true,
      description =
          "List the pods: NAMESPACE NAME NODE STATE GPU LIMITS POSITION WAITING RUNNING"
              + " (GET /v1/pods). LIMITS is core/memory in %% of one GPU.")
  static final class Pods extends Base {
    @Option(names = "--node", paramLabel = "NODE", description = "only the pods of this node")
    String node;

    @Override
    JsonNode fetch(ApiClient api) {
      return api.get("/v1/pods" + (node == null ? "" : "?node=" + ApiClient.enc(node)));
    }

    @Override
    String human(JsonNode answer) {
      return Printers.pods(answer);
    }
  }

  @Command(
      name = "pod",
      mixinStandardHelpOptions = true,
      description =
          "Describe a pod: state, shares, GPU, queue position, times, usage, workload env,"
              + " conditions, Events (GET /v1/namespaces/NS/pods/NAME).")
  static final class Pod extends PodCommand {
    @Override
    JsonNode fetch(ApiClient api) {
      return api.get(podPath());
    }

    @Override
    String human(JsonNode answer) {
      return Printers.pod(answer);
    }
  }

  @Command(
      name = "demand",
      mixinStandardHelpOptions = true,
      description =
          "Raise a pod's demand: Hibernation → Ready (or straight to Running)"
              + " (POST /v1/namespaces/NS/pods/NAME/demand).")
  static final class Demand extends PodCommand {
    @Override
    JsonNode fetch(ApiClient api) {
      return api.post(podPath() + "/demand");
    }

    @Override
    String human(JsonNode answer) {
      return Printers.podLine(answer);
    }
  }

  @Command(
      name = "release",
      mixinStandardHelpOptions = true,
      description =
          "Withdraw a pod's demand or release its GPU: → Hibernation"
              + " (DELETE /v1/namespaces/NS/pods/NAME/demand).")
  static final class Release extends PodCommand {
    @Override
    JsonNode fetch(ApiClient api) {
      return api.delete(podPath() + "/demand");
    }

    @Override
    String human(JsonNode answer) {
      return Printers.podLine(answer);
    }
  }

  @Command(
      name = "history",
      mixinStandardHelpOptions = true,
      description = {
        "A pod's whole history, oldest first: TIME ENTITY EVENT SUMMARY, one line per journal"
            + " event: its own records (ENTITY pod UID) and every decision about it by every node's"
            + " arbiter (ENTITY arbiter NODE), every pod that went by the name"
            + " (GET /v1/namespaces/NS/pods/NAME/history, page by page).",
        "The first "
            + History.DEFAULT
            + " entries unless --limit or --all; -o json gives the API's"
            + " items and the cursor to go on after (next)."
      })
  static final class History extends PodCommand {
    static final int DEFAULT = 100;
    static final int PAGE = 1000;

    @Option(
        names = "--limit",
        paramLabel = "N",
        description = "at most N entries, 1 or more; default " + DEFAULT)
    Integer limit;

    @Option(names = "--all", description = "every entry, however many")
    boolean all;

    @Override
    JsonNode fetch(ApiClient api) {
      PodRef ref = PodRef.parse(pod, "NS/NAME");
      if (all && limit != null) {
        throw new CliException("--all and --limit " + limit + ": give one of them");
      }
      if (limit != null && limit < 1) {
        throw new CliException("--limit " + limit + ": give a number of entries, 1 or more");
      }
      long left = all ? Long.MAX_VALUE : limit == null ? DEFAULT : limit;
      ObjectNode whole = Output.JSON.createObjectNode();
      ArrayNode items = whole.putArray("items");
      long after = 0;
      JsonNode next = null;
      while (left > 0) {
        int page = (int) Math.min(PAGE, left);
        JsonNode answer =
            api.get(ApiClient.podPath(ref) + "/history?after=" + after + "&limit=" + page);
        JsonNode got = answer.path("items");
        if (got.isArray()) {
          items.addAll((ArrayNode) got);
        }
        next = answer.get("next");
        if (next == null || next.isNull()) {
          next = null;
          break;
        }
        left -= got.size();
        after = next.asLong();
      }
      if (next == null) {
        whole.putNull("next");
      } else {
        whole.set("next", next);
        cli.err()
            .println(
                "more entries after these "
                    + items.size()
                    + " (give --all, or --limit N for more than "
                    + items.size()
                    + ")");
        cli.err().flush();
      }
      return whole;
    }

    @Override
    String human(JsonNode answer) {
      return Printers.history(PodRef.parse(pod, "NS/NAME"), answer.path("items"));
    }
  }

  @Command(
      name = "journal",
      mixinStandardHelpOptions = true,
      description = {
        "One entity's events as a timeline, one line each: SEQUENCE_NR  WRITE_TIME  TYPE"
            + "  EVENT_AS_COMPACT_JSON (GET /v1/journal/events, page by page).",
        "With --ids, the persistence ids (GET /v1/journal/persistence-ids).",
        "Quote ids in a shell: they contain '|', e.g. 'NodeArbiter|node-1'."
      })
  static final class Journal extends Base {
    static final int PAGE = 1000;

    @Parameters(
        paramLabel = "PERSISTENCE_ID",
        arity = "0..1",
        description = "e.g. 'Pod|default/a/<uid>', 'NodeArbiter|node-1'")
    String persistenceId;

    @Option(names = "--ids", description = "list the persistence ids instead")
    boolean ids;

    @Option(names = "--from", paramLabel = "N", description = "first sequence number; default 1")
    Long from;

    @Option(names = "--limit", paramLabel = "N", description = "at most N events; default all")
    Integer limit;

    @Override
    JsonNode fetch(ApiClient api) {
      if (ids) {
        if (persistenceId != null || from != null || limit != null) {
          throw new CliException(
              "--ids lists every persistence id; give it without PERSISTENCE_ID, --from, --limit");
        }
        return api.get("/v1/journal/persistence-ids");
      }
      if (persistenceId == null || persistenceId.isBlank()) {
        throw new CliException(
            "missing PERSISTENCE_ID; give the id of an entity (list them with `journal --ids`)");
      }
      if (from != null && from < 1) {
        throw new CliException("--from " + from + ": give a sequence number, 1 or more");
      }
      if (limit != null && limit < 1) {
        throw new CliException("--limit " + limit + ": give a number of events, 1 or more");
      }
      ObjectNode all = Output.JSON.createObjectNode();
      ArrayNode items = all.putArray("items");
      long next = from == null ? 1 : from;
      long left = limit == null ? Long.MAX_VALUE : limit;
      while (left > 0) {
        int page = (int) Math.min(PAGE, left);
        JsonNode answer =
            api.get(
                "/v1/journal/events?persistenceId="
                    + ApiClient.enc(persistenceId)
                    + "&fromSequenceNr="
                    + next
                    + "&limit="
                    + page);
        JsonNode got = answer.path("items");
        items.addAll((ArrayNode) (got.isArray() ? got : Output.JSON.createArrayNode()));
        if (got.size() < page) {
          break;
        }
        left -= got.size();
        next = got.get(got.size() - 1).path("sequenceNr").asLong() + 1;
      }
      if (items.isEmpty()) {
        cli.err()
            .println(
                "no events for "
                    + persistenceId
                    + (next > 1 ? " from sequence number " + next : "")
                    + " (list the ids with `journal --ids`)");
        cli.err().flush();
      }
      return all;
    }

    @Override
    String human(JsonNode answer) {
      if (ids) {
        StringBuilder s = new StringBuilder();
        answer.path("items").forEach(id -> s.append(id.asText()).append('\n'));
        return s.toString();
      }
      return Printers.journal(answer.path("items"));
    }
  }
}
