package dev.gpushare.node;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The latest compute-limiter report of each pod ({@link Changes.ComputeReported}), by entity id, in
 * this member's memory; never journaled. A deleted pod's report is dropped, and a report that
 * arrives after its pod's deletion (one still in flight, or heard late from another member) is not
 * kept: the entity ids of the last {@link #DELETED_REMEMBERED} deleted pods are remembered (an
 * entity id holds the pod's uid, so it never names another pod).
 */
final class ComputeReports {
  static final int DELETED_REMEMBERED = 10_000;

  private final Map<String, Changes.ComputeReported> reports = new ConcurrentHashMap<>();

  private final Set<String> deleted =
      Collections.synchronizedSet(
          Collections.newSetFromMap(
              new LinkedHashMap<>() {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                  return size() > DELETED_REMEMBERED;
                }
              }));

  /** Keeps {@code report} in place of its pod's previous one, unless the pod was deleted. */
  void put(Changes.ComputeReported report) {
    reports.put(report.pod(), report);
    if (deleted.contains(report.pod())) {
      reports.remove(report.pod());
    }
  }

  /** The pod with entity id {@code pod} is deleted: its report goes, and any that comes later. */
  void deleted(String pod) {
    deleted.add(pod);
    reports.remove(pod);
  }

  /** The latest report of the pod with entity id {@code pod}, or null. */
  Changes.ComputeReported get(String pod) {
    return reports.get(pod);
  }

  /** How many pods have a report kept. */
  int size() {
    return reports.size();
  }
}
