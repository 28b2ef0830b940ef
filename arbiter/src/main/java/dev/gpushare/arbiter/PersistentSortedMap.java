package dev.gpushare.arbiter;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * An immutable sorted map whose changes ({@link #plus}, {@link #minus}) return a new map in O(log
 * n), sharing all but one path of the old one: a balanced (AVL) tree with subtree sizes, so that
 * {@link #rank} (a queue position) is O(log n) too. It is what lets the arbiter's book change one
 * pod without copying the others (the cost of a decision does not grow with the queue). As a {@link
 * Map} it is read-only, iterates in key order, and serializes like any other map.
 */
public final class PersistentSortedMap<K extends Comparable<K>, V> extends AbstractMap<K, V> {

  private record Node<K, V>(
      K key, V value, Node<K, V> left, Node<K, V> right, int height, int size) {
    static <K, V> Node<K, V> of(K key, V value, Node<K, V> left, Node<K, V> right) {
      return new Node<>(
          key,
          value,
          left,
          right,
          1 + Math.max(PersistentSortedMap.height(left), PersistentSortedMap.height(right)),
          1 + PersistentSortedMap.size(left) + PersistentSortedMap.size(right));
    }
  }

  private static final PersistentSortedMap<?, ?> EMPTY = new PersistentSortedMap<>(null);

  private final Node<K, V> root;

  private PersistentSortedMap(Node<K, V> root) {
    this.root = root;
  }

  @SuppressWarnings("unchecked")
  public static <K extends Comparable<K>, V> PersistentSortedMap<K, V> empty() {
    return (PersistentSortedMap<K, V>) EMPTY;
  }

  /** {@code map} itself when it is one already, else a copy in O(n log n). */
  @SuppressWarnings("unchecked")
  public static <K extends Comparable<K>, V> PersistentSortedMap<K, V> copyOf(
      Map<? extends K, ? extends V> map) {
    if (map instanceof PersistentSortedMap<?, ?> p) {
      return (PersistentSortedMap<K, V>) p;
    }
    PersistentSortedMap<K, V> result = empty();
    for (Map.Entry<? extends K, ? extends V> e : map.entrySet()) {
      result = result.plus(e.getKey(), e.getValue());
    }
    return result;
  }

  /** This map with {@code key} mapped to {@code value}. */
  public PersistentSortedMap<K, V> plus(K key, V value) {
    if (key == null || value == null) {
      throw new NullPointerException("keys and values must not be null");
    }
    return new PersistentSortedMap<>(put(root, key, value));
  }

  /** This map without {@code key} (itself when the key is absent). */
  public PersistentSortedMap<K, V> minus(K key) {
    if (key == null || find(key) == null) {
      return this;
    }
    return new PersistentSortedMap<>(remove(root, key));
  }

  @Override
  public V get(Object key) {
    Node<K, V> n = find(key);
    return n == null ? null : n.value();
  }

  @Override
  public boolean containsKey(Object key) {
    return find(key) != null;
  }

  @Override
  public int size() {
    return size(root);
  }

  @Override
  public boolean isEmpty() {
    return root == null;
  }

  /** The entry with the smallest key, or null when empty. */
  public Map.Entry<K, V> first() {
    if (root == null) {
      return null;
    }
    Node<K, V> n = root;
    while (n.left() != null) {
      n = n.left();
    }
    return Map.entry(n.key(), n.value());
  }

  /** The entry with the largest key, or null when empty. */
  public Map.Entry<K, V> last() {
    if (root == null) {
      return null;
    }
    Node<K, V> n = root;
    while (n.right() != null) {
      n = n.right();
    }
    return Map.entry(n.key(), n.value());
  }

  /** How many keys are smaller than {@code key} (its 0-based index when present). */
  public int rank(K key) {
    int rank = 0;
    Node<K, V> n = root;
    while (n != null) {
      int c = key.compareTo(n.key());
      if (c <= 0) {
        n = n.left();
      } else {
        rank += size(n.left()) + 1;
        n = n.right();
      }
    }
    return rank;
  }

  @Override
  public Set<Map.Entry<K, V>> entrySet() {
    return new AbstractSet<>() {
      @Override
      public Iterator<Map.Entry<K, V>> iterator() {
        return new InOrder<>(root);
      }

      @Override
      public int size() {
        return PersistentSortedMap.this.size();
      }
    };
  }

  @SuppressWarnings("unchecked")
  private Node<K, V> find(Object key) {
    if (key == null) {
      return null;
    }
    Comparable<K> k;
    try {
      k = (Comparable<K>) key;
      Node<K, V> n = root;
      while (n != null) {
        int c = k.compareTo(n.key());
        if (c == 0) {
          return n;
        }
        n = c < 0 ? n.left() : n.right();
      }
    } catch (ClassCastException e) {
      return null;
    }
    return null;
  }

  private static <K extends Comparable<K>, V> Node<K, V> put(Node<K, V> n, K key, V value) {
    if (n == null) {
      return Node.of(key, value, null, null);
    }
    int c = key.compareTo(n.key());
    if (c == 0) {
      return new Node<>(key, value, n.left(), n.right(), n.height(), n.size());
    }
    return c < 0
        ? balance(n.key(), n.value(), put(n.left(), key, value), n.right())
        : balance(n.key(), n.value(), n.left(), put(n.right(), key, value));
  }

  private static <K extends Comparable<K>, V> Node<K, V> remove(Node<K, V> n, K key) {
    int c = key.compareTo(n.key());
    if (c < 0) {
      return balance(n.key(), n.value(), remove(n.left(), key), n.right());
    }
    if (c > 0) {
      return balance(n.key(), n.value(), n.left(), remove(n.right(), key));
    }
    if (n.left() == null) {
      return n.right();
    }
    if (n.right() == null) {
      return n.left();
    }
    Node<K, V> min = n.right();
    while (min.left() != null) {
      min = min.left();
    }
    return balance(min.key(), min.value(), n.left(), remove(n.right(), min.key()));
  }

  private static <K, V> Node<K, V> balance(K key, V value, Node<K, V> left, Node<K, V> right) {
    int diff = height(left) - height(right);
    if (diff > 1) {
      if (height(left.left()) < height(left.right())) {
        left = rotateLeft(left);
      }
      return rotateRight(key, value, left, right);
    }
    if (diff < -1) {
      if (height(right.right()) < height(right.left())) {
        right = rotateRight(right);
      }
      return rotateLeft(key, value, left, right);
    }
    return Node.of(key, value, left, right);
  }

  private static <K, V> Node<K, V> rotateRight(K key, V value, Node<K, V> left, Node<K, V> right) {
    return Node.of(left.key(), left.value(), left.left(), Node.of(key, value, left.right(), right));
  }

  private static <K, V> Node<K, V> rotateLeft(K key, V value, Node<K, V> left, Node<K, V> right) {
    return Node.of(
        right.key(), right.value(), Node.of(key, value, left, right.left()), right.right());
  }

  private static <K, V> Node<K, V> rotateRight(Node<K, V> n) {
    return rotateRight(n.key(), n.value(), n.left(), n.right());
  }

  private static <K, V> Node<K, V> rotateLeft(Node<K, V> n) {
    return rotateLeft(n.key(), n.value(), n.left(), n.right());
  }

  private static int height(Node<?, ?> n) {
    return n == null ? 0 : n.height();
  }

  private static int size(Node<?, ?> n) {
    return n == null ? 0 : n.size();
  }

  private static final class InOrder<K, V> implements Iterator<Map.Entry<K, V>> {
    private final Deque<Node<K, V>> stack = new ArrayDeque<>();

    InOrder(Node<K, V> root) {
      descend(root);
    }

    private void descend(Node<K, V> n) {
      while (n != null) {
        stack.push(n);
        n = n.left();
      }
    }

    @Override
    public boolean hasNext() {
      return !stack.isEmpty();
    }

    @Override
    public Map.Entry<K, V> next() {
      if (stack.isEmpty()) {
        throw new NoSuchElementException();
      }
      Node<K, V> n = stack.pop();
      descend(n.right());
      return Map.entry(n.key(), n.value());
    }
  }
}
