package dev.gpushare.node;

import static dev.gpushare.node.ServiceAsks.done;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.FieldErrors;
import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.arbiter.Parsed;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.node.ServiceAsks.Placed;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.PodView;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;

/**
 * A pod's life through the control plane: created (its spec checked by the sharing rules, its node
 * chosen by the {@link EmbeddedScheduler}, its name claimed in the cluster-wide index, bound by its
 * {@link NodeActor}, then added to its node's arbiter), deleted in the reverse order, and ensured
 * or forgotten as the Kubernetes informers see it. Every refusal comes before the claim of the
 * name, so a refused create writes nothing.
 */
final class PodLifecycle {
  private final WriteGate gate;
  private final ServiceAsks asks;
  private final Entities entities;
  private final Duration timeout;
  private final EmbeddedScheduler scheduler;
  private final NodeRegistration registration;
  private final PodReads reads;
  private final ChangeFanOut fanOut;

  PodLifecycle(
      WriteGate gate,
      ServiceAsks asks,
      Entities entities,
      Duration timeout,
      NodeRegistration registration,
      PodReads reads,
      ChangeFanOut fanOut) {
    this.gate = gate;
    this.asks = asks;
    this.entities = entities;
    this.timeout = timeout;
    this.scheduler = new EmbeddedScheduler(asks);
    this.registration = registration;
    this.reads = reads;
    this.fanOut = fanOut;
  }

  CompletionStage<PodView> createPod(PodManifest given) {
    return gate.writing(() -> create(given));
  }

  private CompletionStage<PodView> create(PodManifest given) {
    PodManifest m =
        new PodManifest(
            given.namespace() == null || given.namespace().isEmpty()
                ? "default"
                : given.namespace(),
            given.name(),
            given.uid(),
            given.nodeName(),
            given.labels() == null ? Map.of() : given.labels(),
            given.annotations() == null ? Map.of() : given.annotations(),
            given.containers() == null ? List.of() : given.containers());
    Parsed<PodSharing> parsed = ShareRequestRules.validate(m);
    List<FieldError> errors = new ArrayList<>(parsed.ok() ? List.of() : parsed.errors());
    // An empty uid is no uid, as in Kubernetes: one is assigned.
    String uid = m.uid() == null || m.uid().isEmpty() ? null : m.uid();
    if (uid != null && !KubernetesNames.isPodUid(uid)) {
      errors.add(FieldErrors.of("metadata.uid", uid, KubernetesNames.UID_ACCEPTED));
    }
    if (!errors.isEmpty()) {
      return CompletableFuture.failedFuture(ServiceException.invalid(errors));
    }
    String ref = m.namespace() + "/" + m.name();
    PodKey key =
        new PodKey(m.namespace(), m.name(), uid == null ? UUID.randomUUID().toString() : uid);
    PodSharing spec = parsed.value();
    // Every refusal (the rules above, no such node, node admission) comes before the claim of the
    // name: a refused create writes nothing. Only a node that changes between the check and the
    // bind refuses after the claim, which is then released.
    return scheduler
        .chooseNode(m.nodeName(), key, spec)
        .thenCompose(node -> claim(ref, node, key).thenApply(d -> node))
        .thenCompose(
            node ->
                bind(node, key, spec)
                    .exceptionallyCompose(
                        e ->
                            entities
                                .podIndex(ref)
                                .<Done>ask(r -> new PodIndex.Release(key.uid(), r), timeout)
                                .thenCompose(d -> CompletableFuture.failedFuture(e))))
        .thenCompose(
            node ->
                asks.decide(node, r -> new NodeArbiter.AddPod(key, spec, r))
                    .thenCompose(
                        o -> {
                          Placed placed = new Placed(node, key);
                          asks.remember(placed);
                          return reads.podView(placed, o);
                        }));
  }

  /**
   * Takes the name {@code ref} for {@code key}. A name held by a pod that its node does not have
   * bound (a create that crashed half-way) is taken over; a live one is a conflict.
   */
  private CompletionStage<Done> claim(String ref, String node, PodKey key) {
    return entities
        .podIndex(ref)
        .<PodIndex.Entry>ask(r -> new PodIndex.Claim(node, key, false, r), timeout)
        .thenCompose(
            entry -> {
              if (entry.key().uid().equals(key.uid())) {
                return done();
              }
              return asks.nodeRecord(entry.node())
                  .thenCompose(
                      holder -> {
                        if (holder.bound().containsKey(entry.key().entityId())) {
                          throw ServiceException.of(
                              Kind.CONFLICT,
                              new FieldError(
                                  "metadata.name",
                                  key.name(),
                                  "pod "
                                      + ref
                                      + " already exists; delete it first or choose another"
                                      + " name"));
                        }
                        return entities
                            .podIndex(ref)
                            .<PodIndex.Entry>ask(
                                r -> new PodIndex.Claim(node, key, true, r), timeout)
                            .thenApply(e -> Done.getInstance());
                      });
            });
  }

  private CompletionStage<String> bind(String node, PodKey key, PodSharing spec) {
    return entities
        .node(node)
        .<NodeActor.BindReply>ask(r -> new NodeActor.Bind(key, spec, r), timeout)
        .thenCompose(
            reply -> {
              if (reply.refusal() != null) {
                throw ServiceException.refused(reply.refusal());
              }
              fanOut.nodeChanged(node);
              return registration.syncArbiter(node, reply.record()).thenApply(d -> node);
            });
  }

  CompletionStage<PodView> deletePod(String namespace, String name) {
    return gate.writing(() -> reads.placed(namespace, name).thenCompose(this::delete));
  }

  private CompletionStage<PodView> delete(Placed p) {
    return reads
        .podView(p)
        .thenCompose(
            last ->
                entities
                    .node(p.node())
                    .<NodeActor.Record>ask(r -> new NodeActor.Unbind(p.key(), r), timeout)
                    .thenCompose(
                        record ->
                            asks.decide(
                                    p.node(), r -> new NodeArbiter.RemovePod(p.key().entityId(), r))
                                .thenCompose(o -> registration.syncArbiter(p.node(), record)))
                    .thenApply(
                        d -> {
                          asks.forget(p.key());
                          fanOut.nodeChanged(p.node());
                          return last;
                        })
                    .thenCompose(
                        last2 ->
                            entities
                                .podIndex(p.key().ref())
                                .<Done>ask(r -> new PodIndex.Release(p.key().uid(), r), timeout)
                                .thenApply(d -> last2)));
  }

  CompletionStage<PodView> ensurePod(PodManifest manifest) {
    return gate.writing(() -> ensure(manifest));
  }

  private CompletionStage<PodView> ensure(PodManifest manifest) {
    String namespace =
        manifest.namespace() == null || manifest.namespace().isEmpty()
            ? "default"
            : manifest.namespace();
    return asks.lookup(namespace, manifest.name())
        .thenCompose(
            known -> {
              if (known.isEmpty()) {
                return create(manifest);
              }
              if (manifest.uid() == null || known.get().key().uid().equals(manifest.uid())) {
                return reads.podView(known.get());
              }
              return delete(known.get()).thenCompose(gone -> create(manifest));
            });
  }

  CompletionStage<Boolean> forgetPod(String namespace, String name, String uid) {
    return gate.writing(
        () ->
            asks.lookup(namespace, name)
                .thenCompose(
                    known -> {
                      if (known.isEmpty()
                          || (uid != null && !known.get().key().uid().equals(uid))) {
                        return CompletableFuture.completedFuture(false);
                      }
                      return delete(known.get()).thenApply(last -> true);
                    }));
  }
}
