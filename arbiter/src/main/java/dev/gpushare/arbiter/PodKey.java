package dev.gpushare.arbiter;

/** Identity of a pod: namespace, name and the uid that tells apart two pods of the same name. */
public record PodKey(String namespace, String name, String uid) implements Comparable<PodKey> {

  /** {@code ns/name}, how users and the API name a pod. */
  public String ref() {
    return namespace + "/" + name;
  }

  /** {@code ns/name/uid}, the entity id of the pod's actor. */
  public String entityId() {
    return namespace + "/" + name + "/" + uid;
  }

  @Override
  public int compareTo(PodKey o) {
    return entityId().compareTo(o.entityId());
  }

  @Override
  public String toString() {
    return ref();
  }
}
