package dev.gpushare.persistence;

import dev.gpushare.arbiter.JsonSerializable;

/**
 * The shape of node-actors' name index events as the inspector reads them ({@code
 * PodIndex.Claimed}, {@code {"node":…,"key":{"namespace":…,"name":…,"uid":…}}}); node-actors is not
 * a dependency of this module. http-api's {@code PodHistoryOverRuntimeTest} reads the real ones.
 */
final class PodIndex {
  private PodIndex() {}

  record Key(String namespace, String name, String uid) {}

  record Claimed(String node, Key key) implements JsonSerializable {}

  record Released(String uid) implements JsonSerializable {}
}
