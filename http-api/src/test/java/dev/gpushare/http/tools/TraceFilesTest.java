package dev.gpushare.http.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.fragmentation.NodeState;
import dev.gpushare.arbiter.fragmentation.PodSpec;
import dev.gpushare.arbiter.fragmentation.Replay.TracePod;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The variants of the public folder's files, written here: the full pod list, the five-column one
 * ({@code openb_pod_list_multigpu50.csv} and others), only the required columns, both node lists;
 * and the errors of each.
 */
class TraceFilesTest {
  @TempDir Path dir;

  private static final String FULL =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
          + "deletion_time,scheduled_time";
  private static final String FIVE = "name,cpu_milli,memory_mib,num_gpu,gpu_milli";

  private Path write(String file, String... lines) throws IOException {
    Path path = dir.resolve(file);
    Files.writeString(path, String.join("\n", lines) + "\n");
    return path;
  }

  private static TraceFormatException refused(Runnable read) {
    return assertThrows(TraceFormatException.class, read::run);
  }

  @Test
  void the_full_pod_list_is_read_with_every_column() throws IOException {
    Path file =
        write(
            "openb_pod_list_default.csv",
            FULL,
            "p0,12000,16384,1,1000,,LS,Running,20,12537496,20",
            "p1,6000,12288,1,460,V100M16|V100M32,BE,Pending,10,30,");
    TraceFiles.PodList list = TraceFiles.readPods(file);
    assertEquals(List.of(), list.absentColumns());
    assertTrue(list.creationTimeGiven());
    assertEquals(
        new TracePod("p1", new PodSpec(6000, 12288, 1, 460, List.of("V100M16", "V100M32")), 10),
        list.pods().get(1));
    assertEquals(20, list.pods().get(0).creationTime());
  }

  @Test
  void the_five_column_pod_list_is_read_any_model_in_file_order() throws IOException {
    Path file =
        write(
            "openb_pod_list_multigpu50.csv",
            FIVE,
            "openb-pod-0000,12000,16384,1,1000",
            "openb-pod-0001,6000,12288,1,460",
            "openb-pod-0005,20000,65536,0,0",
            "openb-pod-0017,88000,327680,8,1000");
    TraceFiles.PodList list = TraceFiles.readPods(file);
    assertEquals(List.of("gpu_spec", "creation_time"), list.absentColumns());
    assertFalse(list.creationTimeGiven());
    assertEquals(
        List.of("openb-pod-0000", "openb-pod-0001", "openb-pod-0005", "openb-pod-0017"),
        list.pods().stream().map(TracePod::name).toList());
    assertEquals(PodSpec.of(6000, 12288, 1, 460), list.pods().get(1).spec());
    assertEquals(PodSpec.of(88000, 327680, 8, 1000), list.pods().get(3).spec());
    assertTrue(list.pods().stream().allMatch(p -> p.creationTime() == 0), "file order");
    assertTrue(list.pods().stream().allMatch(p -> p.spec().models().isEmpty()), "any model");
  }

  @Test
  void only_the_required_columns_name_pods_by_line_and_ask_no_memory() throws IOException {
    List<String> lines = new ArrayList<>(List.of("gpu_milli,num_gpu,cpu_milli"));
    for (int i = 0; i < 12; i++) {
      lines.add(i == 3 ? "" : "500,1," + (100 + i));
    }
    TraceFiles.PodList list =
        TraceFiles.readPods(write("openb_pod_list_min.csv", lines.toArray(String[]::new)));
    assertEquals(List.of("name", "memory_mib", "gpu_spec", "creation_time"), list.absentColumns());
    assertEquals(11, list.pods().size(), "the blank line is skipped");
    assertEquals("line-0000000002", list.pods().get(0).name());
    assertEquals("line-0000000013", list.pods().get(10).name());
    List<String> names = list.pods().stream().map(TracePod::name).toList();
    assertEquals(names.stream().sorted().toList(), names, "the names sort in file order");
    assertEquals(PodSpec.of(100, 0, 1, 500), list.pods().get(0).spec());
  }

  @Test
  void a_missing_required_column_is_named_with_the_header_seen() throws IOException {
    Path file = write("openb_pod_list_x.csv", "name,cpu_milli,memory_mib,gpu_milli", "p,1,1,1");
    TraceFormatException e = refused(() -> TraceFiles.readPods(file));
    assertTrue(
        e.getMessage()
            .startsWith(
                file
                    + " line 1: header lacks num_gpu; header seen:"
                    + " 'name,cpu_milli,memory_mib,gpu_milli'; expected the columns"
                    + " cpu_milli,num_gpu,gpu_milli, optionally"
                    + " name,memory_mib,gpu_spec,creation_time"),
        e.getMessage());
    Path none = write("openb_pod_list_y.csv", "name,memory_mib", "p,1");
    assertTrue(
        refused(() -> TraceFiles.readPods(none))
            .getMessage()
            .contains("header lacks cpu_milli, num_gpu, gpu_milli;"));
    Path nodes = write("nodes.csv", "sn,cpu_milli,memory_mib,gpu", "n,1,1,0");
    assertTrue(
        refused(() -> TraceFiles.readNodes(nodes))
            .getMessage()
            .startsWith(
                nodes
                    + " line 1: header lacks model; header seen: 'sn,cpu_milli,memory_mib,gpu';"
                    + " expected the columns sn,cpu_milli,memory_mib,gpu,model (in any order"));
  }

  @Test
  void malformed_lines_of_the_short_variants_name_file_line_and_column() throws IOException {
    Path file = write("openb_pod_list_x.csv", FIVE, "a,100,1024,1,500", "b,100,lots,1,500");
    assertEquals(
        file + " line 3, column memory_mib: 'lots' given; expected a whole number: MiB, 0 or more",
        refused(() -> TraceFiles.readPods(file)).getMessage());
    write("openb_pod_list_x.csv", FIVE, "a,100,1024,1,500", "b,100,1024,1");
    assertEquals(
        file
            + " line 3: 4 fields, the header has 5; expected one value per column,"
            + " comma-separated",
        refused(() -> TraceFiles.readPods(file)).getMessage());
    write("openb_pod_list_x.csv", "cpu_milli,num_gpu,gpu_milli", "100,one,500");
    assertEquals(
        file + " line 2, column num_gpu: 'one' given; expected a whole number: a GPU count, 0 to 8",
        refused(() -> TraceFiles.readPods(file)).getMessage());
    write("openb_pod_list_x.csv", "cpu_milli,num_gpu,gpu_milli", "100,0,500");
    assertTrue(
        refused(() -> TraceFiles.readPods(file))
            .getMessage()
            .startsWith(file + " line 2, column gpu_milli: gpu_milli 500 with num_gpu 0"));
    write("openb_pod_list_x.csv", "name,cpu_milli,num_gpu,gpu_milli", " ,100,1,500");
    assertEquals(
        file + " line 2, column name: ' ' given; expected a name",
        refused(() -> TraceFiles.readPods(file)).getMessage());
    write("openb_pod_list_x.csv", FIVE);
    assertEquals(
        file + ": no pod (only a header); expected one line per pod",
        refused(() -> TraceFiles.readPods(file)).getMessage());
  }

  @Test
  void the_node_list_with_cpu_only_nodes_is_read() throws IOException {
    Path all =
        write(
            "openb_node_list_all_node.csv",
            "sn,cpu_milli,memory_mib,gpu,model",
            "openb-node-0000,32000,262144,0,",
            "openb-node-0227,32000,262144,0,",
            "openb-node-0228,128000,786432,8,G3");
    List<NodeState> nodes = TraceFiles.readNodes(all);
    assertEquals(3, nodes.size());
    assertEquals(0, nodes.get(0).gpuCount());
    assertEquals(8, nodes.get(2).gpuCount());
    Path gpu =
        write(
            TraceFiles.NODE_FILE,
            "sn,cpu_milli,memory_mib,gpu,model",
            "openb-node-0228,128000,786432,8,G3",
            "openb-node-0229,96000,786432,8,");
    assertEquals(
        gpu + " line 3, column model: '' given; expected a GPU model name (the node has 8 GPUs)",
        refused(() -> TraceFiles.readNodes(gpu)).getMessage());
  }
}
