// gpushare dashboard: vanilla JS, no build step, nothing loaded from elsewhere.
//
// Data: GET /v1/nodes, /v1/nodes/{n}, /v1/nodes/{n}/queue, /v1/pods and /v1/clock (API.md), read
// again whenever GET /v1/watch (Server-Sent Events, read with fetch so that it can carry the
// Authorization header) says that a node or a pod changed. Queue wait times tick here every second
// from the last waitingSeconds. The occupancy timeline is built from what this page observes,
// seeded from each Running pod's runningSeconds and the pods' preemption Events.
'use strict';

(function () {
  const TOKEN_KEY = 'gpushare.dashboard.token';
  const DEBOUNCE_MS = 200;
  const DEBOUNCE_MAX_MS = 1000;
  const RESYNC_MS = 60000;
  const STALL_MS = 45000; // three missed heartbeats: reconnect
  const KEEP_MS = 6 * 3600 * 1000; // timeline history kept
  const SVG = 'http://www.w3.org/2000/svg';

  // ---------------------------------------------------------------- state

  const state = {
    nodes: new Map(), // name -> NodeView
    queues: new Map(), // name -> {items, at}
    pods: new Map(), // "ns/name" -> PodView
    podsAt: 0,
    clockOffset: 0, // server ms - client ms
  };
  const timeline = {
    openedAt: Date.now(),
    segs: new Map(), // "node/index" -> [{pod, name, start, end, core}]
    open: new Map(), // pod key -> seg
    marks: new Map(), // "node/index" -> [{t, victim, by}]
    seenEvents: new Map(), // pod key -> Set of event ids
    range: 'auto',
  };
  let token = null;

  // ---------------------------------------------------------------- token

  function readToken() {
    const hash = window.location.hash.replace(/^#/, '');
    if (hash) {
      const fromUrl = new URLSearchParams(hash).get('token');
      if (fromUrl) {
        try {
          sessionStorage.setItem(TOKEN_KEY, fromUrl);
        } catch (e) {
          /* storage off: keep it in memory */
        }
        history.replaceState(null, '', window.location.pathname + window.location.search);
        return fromUrl;
      }
    }
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch (e) {
      return null;
    }
  }

  function headers(extra) {
    const h = Object.assign({ Accept: 'application/json' }, extra || {});
    if (token) h.Authorization = 'Bearer ' + token;
    return h;
  }

  class AuthError extends Error {}

  function refusal(error) {
    if (error.message === '403') {
      return 'This token may not do what the dashboard needs (403): list and get nodes and pods, watch changes. Paste another one.';
    }
    return token ? 'The token was not accepted (401). Paste a valid one.' : 'This API needs a token.';
  }

  function showTokenForm(reason) {
    const form = document.getElementById('token-form');
    form.hidden = false;
    form.querySelector('label').textContent = reason;
    setConn('token', token ? 'token refused' : 'token needed');
    document.getElementById('token-input').focus();
  }

  // ---------------------------------------------------------------- API

  async function api(path) {
    const res = await fetch(path, { headers: headers(), cache: 'no-store' });
    if (res.status === 401 || res.status === 403) {
      throw new AuthError(String(res.status));
    }
    if (res.status === 404) return null;
    if (!res.ok) {
      let detail = '';
      try {
        detail = (await res.json()).detail || '';
      } catch (e) {
        /* not a problem document */
      }
      throw new Error('GET ' + path + ' answered ' + res.status + (detail ? ': ' + detail : ''));
    }
    return res.json();
  }

  const enc = encodeURIComponent;

  async function refreshAll() {
    const [nodes, pods, clock] = await Promise.all([
      api('/v1/nodes'),
      api('/v1/pods'),
      api('/v1/clock').catch(() => null),
    ]);
    const now = Date.now();
    state.nodes = new Map();
    state.queues = new Map();
    for (const n of (nodes && nodes.items) || []) {
      state.nodes.set(n.name, n);
      state.queues.set(n.name, { items: n.queue || [], at: now });
    }
    observeClock(clock, now);
    observePods((pods && pods.items) || [], now);
  }

  async function refreshNode(name) {
    const [node, queue] = await Promise.all([
      api('/v1/nodes/' + enc(name)),
      api('/v1/nodes/' + enc(name) + '/queue'),
    ]);
    if (!node) {
      state.nodes.delete(name);
      state.queues.delete(name);
      return;
    }
    state.nodes.set(name, node);
    state.queues.set(name, { items: (queue && queue.items) || node.queue || [], at: Date.now() });
  }

  async function refreshPods() {
    const [pods, clock] = await Promise.all([api('/v1/pods'), api('/v1/clock').catch(() => null)]);
    const now = Date.now();
    observeClock(clock, now);
    observePods((pods && pods.items) || [], now);
  }

  function observeClock(clock, now) {
    if (clock && clock.now) {
      const server = Date.parse(clock.now);
      if (!Number.isNaN(server)) state.clockOffset = server - now;
    }
  }

  /** A server instant (an Event's time) on this page's clock. */
  function toLocal(instant) {
    const t = Date.parse(instant);
    return Number.isNaN(t) ? null : t - state.clockOffset;
  }

  // ---------------------------------------------------------------- timeline bookkeeping

  function podKey(p) {
    return p.namespace + '/' + p.name;
  }

  function heldShare(p) {
    const s = p.policy === 'static' ? p.requests : p.limits;
    return s || p.limits || p.requests || { core: 0, memory: 0 };
  }

  function eventId(e) {
    return e.reason + '|' + e.time + '|' + e.message;
  }

  function named(message, pattern) {
    const m = pattern.exec(message || '');
    return m ? m[1] : '?';
  }
  const PREEMPTED_BY = /preempted by (.+?)\.?$/;
  const PREEMPTED_FROM = /preempted from (.+?)\.?$/;

  function addMark(gpu, t, victim, by) {
    const list = timeline.marks.get(gpu) || [];
    if (list.some((m) => m.victim === victim && m.by === by && Math.abs(m.t - t) < 15000)) return;
    list.push({ t, victim, by });
    timeline.marks.set(gpu, list);
  }

  function closeSeg(seg, now) {
    seg.end = Math.max(now, seg.start);
  }

  /** What changed in the pods since the last look: segments open and close, preemptions. */
  function observePods(list, now) {
    const seen = new Set();
    for (const p of list) {
      const key = podKey(p);
      seen.add(key);
      const events = p.events || [];
      const first = !timeline.seenEvents.has(key);
      const known = timeline.seenEvents.get(key) || new Set();
      const fresh = events.filter((e) => !known.has(eventId(e)));
      fresh.forEach((e) => known.add(eventId(e)));
      timeline.seenEvents.set(key, known);

      const running = p.state === 'Running' && p.gpu != null;
      const gpu = running ? p.node + '/' + p.gpu.index : null;
      const open = timeline.open.get(key);
      if (open && open.gpu !== gpu) {
        closeSeg(open, now);
        timeline.open.delete(key);
        const preempted = fresh.find((e) => e.reason === 'GPUSharePreempted');
        if (preempted) addMark(open.gpu, open.end, p.name, named(preempted.message, PREEMPTED_BY));
      }
      if (running && (!open || open.gpu !== gpu)) {
        const share = heldShare(p);
        let start = now - (p.runningSeconds || 0) * 1000;
        const segs = timeline.segs.get(gpu) || [];
        for (const s of segs) {
          if (s.pod === key && s.end != null && s.end > start) start = s.end;
        }
        const seg = { pod: key, name: p.name, gpu, start, end: null, core: share.core, memory: share.memory };
        segs.push(seg);
        timeline.segs.set(gpu, segs);
        timeline.open.set(key, seg);
        for (const e of first ? events : fresh) {
          if (e.reason !== 'GPUSharePreempt') continue;
          const t = first ? toLocal(e.time) : start;
          if (t != null && Math.abs(t - start) < 10000) addMark(gpu, start, named(e.message, PREEMPTED_FROM), p.name);
        }
      } else if (running && open) {
        const share = heldShare(p);
        open.core = share.core;
        open.memory = share.memory;
      }
    }
    for (const [key, seg] of timeline.open) {
      if (!seen.has(key)) {
        closeSeg(seg, now);
        timeline.open.delete(key);
      }
    }
    for (const key of timeline.seenEvents.keys()) {
      if (!seen.has(key)) timeline.seenEvents.delete(key);
    }
    // forget what is older than the longest window
    for (const [gpu, segs] of timeline.segs) {
      timeline.segs.set(gpu, segs.filter((s) => s.end == null || s.end > now - KEEP_MS));
    }
    for (const [gpu, marks] of timeline.marks) {
      timeline.marks.set(gpu, marks.filter((m) => m.t > now - KEEP_MS));
    }
    state.pods = new Map(list.map((p) => [podKey(p), p]));
    state.podsAt = now;
    assignColours(
      list.map(podKey).filter((k) => !colours.has(k)),
      state.pods.keys()
    );
  }

  // ---------------------------------------------------------------- the change stream

  const pending = { nodes: new Set(), pods: new Set(), full: false };
  let debounceTimer = null;
  let firstPendingAt = 0;
  let flushing = false;
  let flushAgain = false;

  function changed(change) {
    if (change.kind === 'node' && change.node) {
      pending.nodes.add(change.node);
    } else if (change.kind === 'pod' && change.name) {
      const key = change.namespace + '/' + change.name;
      pending.pods.add(key);
      const known = state.pods.get(key);
      if (known && known.node) pending.nodes.add(known.node);
    } else {
      pending.full = true;
    }
    schedule();
  }

  function schedule() {
    const now = Date.now();
    if (!debounceTimer) firstPendingAt = now;
    clearTimeout(debounceTimer);
    const wait = Math.max(0, Math.min(DEBOUNCE_MS, firstPendingAt + DEBOUNCE_MAX_MS - now));
    debounceTimer = setTimeout(flush, wait);
  }

  async function flush() {
    debounceTimer = null;
    if (flushing) {
      flushAgain = true;
      return;
    }
    flushing = true;
    const full = pending.full;
    const nodes = new Set(pending.nodes);
    const pods = new Set(pending.pods);
    pending.full = false;
    pending.nodes.clear();
    pending.pods.clear();
    try {
      if (full) {
        await refreshAll();
      } else {
        if (pods.size > 0) {
          await refreshPods();
          for (const key of pods) {
            const p = state.pods.get(key);
            if (p && p.node) nodes.add(p.node);
          }
        }
        for (const p of state.pods.values()) {
          if (p.node && !state.nodes.has(p.node)) nodes.add(p.node);
        }
        await Promise.all([...nodes].map(refreshNode));
      }
      showMessage(null);
      render();
    } catch (e) {
      failed(e);
    } finally {
      flushing = false;
      if (flushAgain) {
        flushAgain = false;
        schedule();
      }
    }
  }

  let stream = null; // {controller}
  let retryMs = 1000;
  let reconnectTimer = null;

  function connect() {
    clearTimeout(reconnectTimer);
    if (stream) stream.controller.abort();
    const controller = new AbortController();
    stream = { controller };
    setConn(retryMs > 1000 ? 'reconnecting' : 'connecting', retryMs > 1000 ? 'reconnecting…' : 'connecting…');
    watch(controller).then(
      () => reconnect(controller, null),
      (e) => reconnect(controller, e)
    );
  }

  function reconnect(controller, error) {
    if (controller.signal.aborted && (!stream || stream.controller !== controller)) return; // replaced
    if (error instanceof AuthError) {
      showTokenForm(refusal(error));
      return;
    }
    setConn('reconnecting', 'reconnecting…');
    if (error && error.name !== 'AbortError') {
      showMessage('The change stream failed (' + (error.message || error) + '); retrying in ' + retryMs / 1000 + ' s.');
    }
    reconnectTimer = setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 15000);
  }

  async function watch(controller) {
    let lastByte = Date.now();
    const stall = setInterval(() => {
      if (Date.now() - lastByte > STALL_MS) controller.abort();
    }, 5000);
    try {
      const res = await fetch('/v1/watch', {
        headers: headers({ Accept: 'text/event-stream' }),
        cache: 'no-store',
        signal: controller.signal,
      });
      if (res.status === 401 || res.status === 403) throw new AuthError(String(res.status));
      if (!res.ok || !res.body) throw new Error('GET /v1/watch answered ' + res.status);
      // Live from here: read everything once, then follow the changes.
      retryMs = 1000;
      document.getElementById('token-form').hidden = true;
      await refreshAll();
      render();
      showMessage(null);
      setConn('live', 'live');
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      let event = { type: 'message', data: [] };
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        lastByte = Date.now();
        buffer += decoder.decode(value, { stream: true });
        let nl;
        while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
          if (line === '') {
            if (event.data.length > 0) dispatch(event.type, event.data.join('\n'));
            event = { type: 'message', data: [] };
          } else if (line.startsWith(':')) {
            // a comment: the heartbeat
          } else {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            let val = colon < 0 ? '' : line.slice(colon + 1);
            if (val.startsWith(' ')) val = val.slice(1);
            if (field === 'event') event.type = val;
            else if (field === 'data') event.data.push(val);
          }
        }
      }
    } finally {
      clearInterval(stall);
    }
  }

  function dispatch(type, data) {
    if (type !== 'change') return;
    try {
      changed(JSON.parse(data));
    } catch (e) {
      pending.full = true;
      schedule();
    }
  }

  function failed(e) {
    if (e instanceof AuthError) {
      showTokenForm(refusal(e));
      return;
    }
    showMessage(String(e.message || e));
  }

  // ---------------------------------------------------------------- rendering helpers

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }

  function hash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 16777619);
    }
    return h >>> 0;
  }

  // Well-separated colours that dark text reads on, none of them the red of preemptions.
  const PALETTE = [
    '#7aa6d8', // blue
    '#f5a55a', // orange
    '#86c46f', // green
    '#c49bc0', // purple
    '#eed566', // yellow
    '#7cc7c0', // teal
    '#ff9da7', // pink
    '#c4a08a', // brown
    '#a3a0ec', // violet
  ];
  const colours = new Map(); // pod key -> palette index, for the page's life

  /**
   * Gives pods seen for the first time the colour fewest other present pods have (all distinct up
   * to the palette's size); among those, the one the pod's name hashes to, or the next.
   */
  function assignColours(keys, present) {
    present = [...present];
    for (const key of keys) {
      if (colours.has(key)) continue;
      const count = new Array(PALETTE.length).fill(0);
      for (const other of present) if (other !== key && colours.has(other)) count[colours.get(other)]++;
      const fewest = Math.min(...count);
      const preferred = hash(key) % PALETTE.length;
      let chosen = preferred;
      for (let i = 0; i < PALETTE.length; i++) {
        const c = (preferred + i) % PALETTE.length;
        if (count[c] === fewest) {
          chosen = c;
          break;
        }
      }
      colours.set(key, chosen);
    }
  }

  /** The colour of a pod: the same in the bars, the queue and the timeline. */
  function colour(key) {
    if (!colours.has(key)) assignColours([key], state.pods.keys());
    return PALETTE[colours.get(key)];
  }

  function duration(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    const h = Math.floor(seconds / 3600);
    const m = Math.floor((seconds % 3600) / 60);
    const s = seconds % 60;
    const two = (n) => (n < 10 ? '0' : '') + n;
    if (h > 0) return h + 'h ' + two(m) + 'm ' + two(s) + 's';
    if (m > 0) return m + 'm ' + two(s) + 's';
    return s + 's';
  }

  function clockText(t, withSeconds) {
    const d = new Date(t);
    const two = (n) => (n < 10 ? '0' : '') + n;
    return two(d.getHours()) + ':' + two(d.getMinutes()) + (withSeconds ? ':' + two(d.getSeconds()) : '');
  }

  function setConn(stateName, text) {
    const c = document.getElementById('conn');
    c.dataset.state = stateName;
    document.getElementById('conn-text').textContent = text;
  }

  function showMessage(text) {
    const m = document.getElementById('message');
    m.hidden = !text;
    m.textContent = text || '';
  }

  function shortModel(model) {
    return (model || '').replace(/^NVIDIA\s+/, '');
  }

  // ---------------------------------------------------------------- nodes, GPUs, queues

  function render() {
    renderSummary();
    renderNodes();
    renderTimeline();
  }

  function renderSummary() {
    const s = document.getElementById('summary');
    s.replaceChildren();
    let gpus = 0;
    let healthy = 0;
    for (const n of state.nodes.values()) {
      for (const g of n.gpus || []) {
        gpus++;
        if (g.health === 'Healthy') healthy++;
      }
    }
    const count = (st) => [...state.pods.values()].filter((p) => p.state === st).length;
    const item = (value, label) => {
      const span = el('span');
      span.append(el('b', null, String(value)), document.createTextNode(label));
      s.append(span);
    };
    item(state.nodes.size, state.nodes.size === 1 ? 'node' : 'nodes');
    item(gpus, 'GPUs' + (healthy < gpus ? ' (' + (gpus - healthy) + ' unhealthy)' : ''));
    item(count('Running'), 'running');
    item(count('Ready'), 'waiting');
    item(count('Hibernation'), 'hibernating');
  }

  function podsOn(node) {
    return [...state.pods.values()].filter((p) => p.node === node);
  }

  function renderNodes() {
    const root = document.getElementById('nodes');
    const names = [...state.nodes.keys()].sort();
    document.getElementById('empty').hidden = names.length > 0;
    root.replaceChildren(...names.map((name) => renderNode(state.nodes.get(name))));
    tick();
  }

  function renderNode(n) {
    const card = el('article', 'node');
    card.dataset.node = n.name;
    const pods = podsOn(n.name);

    const head = el('div', 'node-head');
    head.append(el('h2', null, n.name));
    const policy = n.policy || 'none';
    head.append(el('span', 'badge policy-' + policy, policy === 'none' ? 'sharing off' : policy));
    if (policy === 'share-pool' && n.qos) {
      head.append(
        el(
          'span',
          'badge',
          n.qos.preemptEnabled ? 'preempts after ' + n.qos.podMaxDurationMinutes + ' min' : 'no preemption'
        )
      );
    }
    const models = new Map();
    for (const g of n.gpus || []) models.set(shortModel(g.model), (models.get(shortModel(g.model)) || 0) + 1);
    for (const [model, k] of models) head.append(el('span', 'badge', k + ' × ' + (model || 'GPU')));
    const unhealthy = (n.gpus || []).filter((g) => g.health !== 'Healthy').length;
    if (unhealthy > 0) head.append(el('span', 'badge bad', unhealthy + ' unhealthy'));

    const stats = el('div', 'node-stats');
    for (const [label, st] of [
      ['running', 'Running'],
      ['waiting', 'Ready'],
      ['hibernating', 'Hibernation'],
    ]) {
      const span = el('span');
      span.append(el('b', null, String(pods.filter((p) => p.state === st).length)), document.createTextNode(' ' + label));
      stats.append(span);
    }
    head.append(stats);
    card.append(head);

    const conditions = (n.status && n.status.conditions) || [];
    const invalid = conditions.find((c) => c.type === 'GPUSharePolicyValid' && c.status === 'False');
    if (invalid) card.append(el('div', 'node-warning', invalid.reason + ': ' + invalid.message));

    const body = el('div', 'node-body');
    const gpus = el('div', 'gpus');
    const sorted = [...(n.gpus || [])].sort((a, b) => a.index - b.index);
    for (const g of sorted) gpus.append(renderGpu(n, g));
    if (sorted.length === 0) gpus.append(el('div', 'empty', 'no GPUs'));
    body.append(gpus, renderQueue(n, pods));
    card.append(body);
    return card;
  }

  function renderGpu(n, g) {
    const row = el('div', 'gpu');
    row.dataset.gpu = n.name + '/' + g.index;
    row.dataset.health = g.health;
    const label = el('div', 'gpu-label');
    const idx = el('span', 'idx');
    idx.append(el('span', 'health'), document.createTextNode('GPU ' + g.index + ' '));
    label.append(idx);
    const gib = g.memoryMiB ? ' · ' + Math.round(g.memoryMiB / 1024) + ' GiB' : '';
    label.append(el('span', 'model', shortModel(g.model) + gib));
    label.title = g.uuid + '\n' + g.model + gib + '\n' + g.health;
    row.append(label);

    const holders = (g.pods || []).map((ref) => {
      const p = state.pods.get(ref);
      const share = p ? heldShare(p) : null;
      return { ref, pod: p, core: share ? share.core : null, memory: share ? share.memory : null };
    });
    // the longest holder first (left), as on the timeline
    const since = (h) => {
      const seg = timeline.open.get(h.ref);
      return seg ? seg.start : Infinity;
    };
    holders.sort((a, b) => since(a) - since(b) || a.ref.localeCompare(b.ref));
    // pods not (yet) known: split what is left of inUse between them
    const unknown = holders.filter((h) => h.core == null);
    if (unknown.length > 0) {
      const knownCore = holders.reduce((a, h) => a + (h.core || 0), 0);
      const knownMem = holders.reduce((a, h) => a + (h.memory || 0), 0);
      const inUse = g.inUse || { core: 0, memory: 0 };
      for (const h of unknown) {
        h.core = Math.max(0, (inUse.core - knownCore) / unknown.length);
        h.memory = Math.max(0, (inUse.memory - knownMem) / unknown.length);
      }
    }

    const bars = el('div', 'bars');
    const bar = el('div', 'bar');
    const mem = el('div', 'mem');
    for (const h of holders) {
      const name = h.ref.slice(h.ref.indexOf('/') + 1);
      const seg = el('div', 'seg');
      seg.dataset.pod = h.ref;
      seg.style.width = Math.min(100, h.core) + '%';
      seg.style.background = colour(h.ref);
      seg.append(el('span', 'pod', name), el('span', 'pct', Math.round(h.core) + '%'));
      const running = h.pod && h.pod.runningSeconds != null ? ' — running ' + duration(h.pod.runningSeconds) : '';
      seg.title = h.ref + '\ncore ' + Math.round(h.core) + ' %, memory ' + Math.round(h.memory) + ' %' + running;
      bar.append(seg);
      const m = el('div', 'mseg');
      m.style.width = Math.min(100, h.memory) + '%';
      m.style.background = colour(h.ref);
      mem.append(m);
    }
    bar.title = 'core share held, per pod';
    mem.title = 'memory share held, per pod';
    bars.append(bar, mem);
    row.append(bars);

    const use = el('div', 'gpu-use');
    const inUse = g.inUse || { core: 0, memory: 0 };
    use.append(el('b', null, inUse.core + '%'), el('br'), document.createTextNode('mem ' + inUse.memory + '%'));
    use.title = 'core and memory in use (sum of the holders\' shares)';
    row.append(use);
    return row;
  }

  function renderQueue(n, pods) {
    const box = el('div', 'queue');
    const q = state.queues.get(n.name) || { items: n.queue || [], at: Date.now() };
    const title = el('h3', null, 'Ready queue');
    title.append(el('span', 'count' + (q.items.length > 0 ? ' some' : ''), String(q.items.length)));
    box.append(title);
    if (q.items.length === 0) {
      box.append(el('div', 'none', n.policy === 'share-pool' ? 'nobody waits' : 'no queue (' + (n.policy || 'none') + ')'));
    } else {
      const ol = el('ol');
      for (const item of [...q.items].sort((a, b) => a.position - b.position)) {
        const li = el('li');
        li.dataset.queuePod = item.pod;
        li.append(el('span', 'pos', String(item.position)));
        const sw = el('span', 'swatch');
        sw.style.background = colour(item.pod);
        li.append(sw);
        li.append(el('span', 'qname', item.pod.slice(item.pod.indexOf('/') + 1)));
        const lim = item.limits ? item.limits.core + '% / ' + item.limits.memory + '%' : '';
        const limEl = el('span', 'lim', lim);
        limEl.title = 'limits: core / memory';
        li.append(limEl);
        const wait = el('span', 'wait');
        wait.dataset.waiting = String(item.waitingSeconds || 0);
        wait.dataset.at = String(q.at);
        wait.title = 'waiting in Ready';
        li.append(wait);
        li.title = item.pod + ' — position ' + item.position;
        ol.append(li);
      }
      box.append(ol);
    }
    const sleeping = pods.filter((p) => p.state === 'Hibernation').map((p) => p.name).sort();
    if (sleeping.length > 0) {
      const s = el('div', 'sleeping', 'Hibernation ');
      for (const name of sleeping.slice(0, 24)) s.append(el('span', 'chip', name));
      if (sleeping.length > 24) s.append(document.createTextNode('+' + (sleeping.length - 24)));
      box.append(s);
    }
    return box;
  }

  /** Every second: queue wait times move on, the timeline's "now" moves right. */
  function tick() {
    const now = Date.now();
    for (const w of document.querySelectorAll('.queue .wait')) {
      const seconds = Number(w.dataset.waiting) + Math.floor((now - Number(w.dataset.at)) / 1000);
      w.dataset.seconds = String(seconds);
      w.textContent = duration(seconds);
    }
  }

  // ---------------------------------------------------------------- timeline

  const STEPS = [5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];

  function window_(now) {
    if (timeline.range !== 'auto') return Number(timeline.range) * 1000;
    let earliest = timeline.openedAt;
    for (const segs of timeline.segs.values()) for (const s of segs) earliest = Math.min(earliest, s.start);
    for (const marks of timeline.marks.values()) for (const m of marks) earliest = Math.min(earliest, m.t);
    const span = (now - earliest) * 1.08;
    return Math.min(Math.max(span, 30000), KEEP_MS);
  }

  function lanes(segs) {
    const ends = [];
    const sorted = [...segs].sort((a, b) => a.start - b.start);
    for (const s of sorted) {
      let lane = ends.findIndex((end) => end != null && end <= s.start);
      if (lane < 0) {
        lane = ends.length;
        ends.push(null);
      }
      ends[lane] = s.end == null ? Infinity : s.end;
      s.lane = lane;
    }
    return Math.max(1, ends.length);
  }

  /** [0,1,2,5,7,8] -> "0–2, 5, 7–8". */
  function ranges(indices) {
    const parts = [];
    for (let i = 0; i < indices.length; i++) {
      let j = i;
      while (j + 1 < indices.length && indices[j + 1] === indices[j] + 1) j++;
      parts.push(j > i ? indices[i] + '–' + indices[j] : String(indices[i]));
      i = j;
    }
    return parts.join(', ');
  }

  function renderTimeline() {
    const box = document.getElementById('timeline');
    const width = Math.max(480, box.clientWidth - 32);
    const now = Date.now();
    const span = window_(now);
    const from = now - span;
    const labelW = 150;
    const plotW = width - labelW - 12;
    const x = (t) => labelW + ((Math.max(t, from) - from) / span) * plotW;
    const LANE = 18;
    const AXIS = 22;

    const root = svg('svg', { role: 'img', 'aria-label': 'GPU occupancy over time' });
    const rows = [];
    let y = AXIS;
    const names = [...state.nodes.keys()].sort();
    for (const name of names) {
      const n = state.nodes.get(name);
      rows.push({ kind: 'node', name, y });
      y += 20;
      const idle = [];
      for (const g of [...(n.gpus || [])].sort((a, b) => a.index - b.index)) {
        const key = name + '/' + g.index;
        const segs = (timeline.segs.get(key) || []).filter((s) => s.end == null || s.end > from);
        const marked = (timeline.marks.get(key) || []).some((m) => m.t >= from);
        if (segs.length === 0 && !marked) {
          idle.push(g.index);
          continue;
        }
        const k = lanes(segs);
        const h = k * LANE + 4;
        rows.push({ kind: 'gpu', key, g, segs, y, h });
        y += h + 3;
      }
      if (idle.length > 0) {
        rows.push({ kind: 'idle', indices: idle, y, h: 16 });
        y += 19;
      }
      y += 6;
    }
    const height = Math.max(y + 4, AXIS + 40);
    root.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    root.setAttribute('height', String(height));

    // axis and grid
    const step = STEPS.find((s) => (span / 1000) / s <= 8) || 7200;
    const first = Math.ceil(from / (step * 1000)) * step * 1000;
    for (let t = first; t <= now; t += step * 1000) {
      const tx = x(t);
      root.append(svg('line', { x1: tx, x2: tx, y1: AXIS - 4, y2: height, class: 'tl-grid' }));
      root.append(svg('text', { x: tx, y: AXIS - 8, 'text-anchor': 'middle', class: 'tl-axis' }, clockText(t, step < 60)));
    }

    if (names.length === 0) {
      root.append(svg('text', { x: labelW, y: AXIS + 24, class: 'tl-empty' }, 'no nodes'));
    }

    for (const r of rows) {
      if (r.kind === 'node') {
        root.append(svg('text', { x: 0, y: r.y + 14, class: 'tl-node' }, r.name));
        continue;
      }
      if (r.kind === 'idle') {
        const label = (r.indices.length === 1 ? 'GPU ' : 'GPUs ') + ranges(r.indices);
        root.append(svg('text', { x: 12, y: r.y + 12, class: 'tl-gpu tl-idle' }, label));
        root.append(svg('text', { x: labelW + 6, y: r.y + 12, class: 'tl-idle' }, 'no holder in this window'));
        continue;
      }
      const g = svg('g', { 'data-gpu': r.key });
      g.append(svg('rect', { x: labelW, y: r.y, width: plotW, height: r.h, rx: 4, class: 'tl-row' }));
      const lbl = svg('text', { x: 12, y: r.y + r.h / 2 + 4, class: 'tl-gpu' }, 'GPU ' + r.g.index);
      g.append(lbl);
      for (const s of r.segs) {
        const x1 = x(s.start);
        const x2 = x(s.end == null ? now : s.end);
        const w = Math.max(2, x2 - x1);
        const sy = r.y + 2 + s.lane * LANE;
        const rect = svg('rect', {
          x: x1,
          y: sy,
          width: w,
          height: LANE - 2,
          rx: 3,
          fill: colour(s.pod),
          'data-pod': s.pod,
        });
        const until = s.end == null ? 'now' : clockText(s.end, true);
        rect.append(
          svg(
            'title',
            null,
            s.pod + ' on GPU ' + r.g.index + ' (' + s.core + ' % core)\n' + clockText(s.start, true) + ' – ' + until +
              ' (' + duration(((s.end == null ? now : s.end) - s.start) / 1000) + ')'
          )
        );
        g.append(rect);
        const text = s.name + ' ' + s.core + '%';
        const fits = Math.floor((w - 8) / 7.2);
        if (fits >= 3) {
          const shown = text.length <= fits ? text : text.slice(0, fits - 1) + '…';
          g.append(svg('text', { x: x1 + 5, y: sy + LANE - 6, class: 'tl-seg-label' }, shown));
        }
      }
      for (const m of timeline.marks.get(r.key) || []) {
        if (m.t < from) continue;
        const mx = x(m.t);
        const mark = svg('g', { class: 'tl-preempt', 'data-preemption': m.victim + '>' + m.by });
        mark.append(svg('line', { x1: mx, x2: mx, y1: r.y - 2, y2: r.y + r.h + 1 }));
        mark.append(svg('path', { d: 'M' + (mx - 5) + ' ' + (r.y - 6) + ' h10 l-5 6 z' }));
        mark.append(svg('title', null, m.victim + ' preempted by ' + m.by + ' at ' + clockText(m.t, true)));
        g.append(mark);
      }
      root.append(g);
    }
    root.append(svg('line', { x1: x(now), x2: x(now), y1: AXIS - 4, y2: height, class: 'tl-now' }));
    box.replaceChildren(root);
  }

  // ---------------------------------------------------------------- start

  function start() {
    token = readToken();
    document.getElementById('token-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const value = document.getElementById('token-input').value.trim();
      token = value || null;
      try {
        if (token) sessionStorage.setItem(TOKEN_KEY, token);
        else sessionStorage.removeItem(TOKEN_KEY);
      } catch (e) {
        /* storage off */
      }
      document.getElementById('token-form').hidden = true;
      retryMs = 1000;
      connect();
    });
    document.getElementById('token-button').addEventListener('click', () => {
      const form = document.getElementById('token-form');
      if (form.hidden) {
        form.hidden = false;
        form.querySelector('label').textContent = token ? 'Replace the API token:' : 'Set the API token:';
        document.getElementById('token-input').focus();
      } else {
        form.hidden = true;
      }
    });
    for (const b of document.querySelectorAll('#range button')) {
      b.addEventListener('click', () => {
        timeline.range = b.dataset.range;
        for (const o of document.querySelectorAll('#range button')) o.classList.toggle('on', o === b);
        renderTimeline();
      });
    }
    window.addEventListener('resize', () => renderTimeline());
    setInterval(() => {
      tick();
      renderTimeline();
    }, 1000);
    setInterval(() => {
      if (document.getElementById('conn').dataset.state === 'live') {
        pending.full = true;
        schedule();
      }
    }, RESYNC_MS);
    render();
    connect();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
