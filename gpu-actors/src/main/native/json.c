/*
 * The few fields of a PodView this library reads (state, gpu.index, gpu.uuid, limits.core, ...),
 * found by a dotted path. A validating skipper, not a DOM: the text is walked once per look-up,
 * nothing is allocated, and anything that is not JSON is said to be so (-1), so that an answer the
 * library cannot read is reported as such and never half-read.
 */
#include <stdlib.h>
#include <string.h>

#include "gpushare.h"

struct cursor {
  const char *p, *end;
  int depth;
};

static void ws(struct cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int skip_value(struct cursor *c);

/* Skips a string at c->p (the opening quote); 0 or -1. */
static int skip_string(struct cursor *c) {
  if (c->p >= c->end || *c->p != '"') return -1;
  for (c->p++; c->p < c->end; c->p++) {
    unsigned char ch = (unsigned char)*c->p;
    if (ch == '"') {
      c->p++;
      return 0;
    }
    if (ch < 0x20) return -1;
    if (ch == '\\') {
      if (++c->p >= c->end) return -1;
      if (*c->p == 'u') {
        for (int i = 0; i < 4; i++) {
          if (++c->p >= c->end || !strchr("0123456789abcdefABCDEF", *c->p)) return -1;
        }
      } else if (!strchr("\"\\/bfnrt", *c->p)) {
        return -1;
      }
    }
  }
  return -1;
}

static int literal(struct cursor *c, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return -1;
  c->p += n;
  return 0;
}

static int skip_number(struct cursor *c) {
  const char *start = c->p;
  if (c->p < c->end && *c->p == '-') c->p++;
  int digits = 0;
  while (c->p < c->end && strchr("0123456789.eE+-", *c->p) && *c->p) c->p++, digits++;
  return digits > 0 && c->p > start ? 0 : -1;
}

/* Skips an object or array; the first key (objects) is not looked at. */
static int skip_container(struct cursor *c, char open, char close) {
  if (++c->depth > 64) return -1;
  c->p++; /* open */
  ws(c);
  if (c->p < c->end && *c->p == close) {
    c->p++;
    c->depth--;
    return 0;
  }
  for (;;) {
    ws(c);
    if (open == '{') {
      if (skip_string(c) < 0) return -1;
      ws(c);
      if (c->p >= c->end || *c->p++ != ':') return -1;
      ws(c);
    }
    if (skip_value(c) < 0) return -1;
    ws(c);
    if (c->p >= c->end) return -1;
    if (*c->p == ',') {
      c->p++;
      continue;
    }
    if (*c->p == close) {
      c->p++;
      c->depth--;
      return 0;
    }
    return -1;
  }
}

static int skip_value(struct cursor *c) {
  ws(c);
  if (c->p >= c->end) return -1;
  switch (*c->p) {
    case '"': return skip_string(c);
    case '{': return skip_container(c, '{', '}');
    case '[': return skip_container(c, '[', ']');
    case 't': return literal(c, "true");
    case 'f': return literal(c, "false");
    case 'n': return literal(c, "null");
    default: return skip_number(c);
  }
}

/* Whether the string at c->p (its opening quote) equals key[0..n); c->p is left after it. */
static int key_is(struct cursor *c, const char *key, size_t n) {
  const char *start = c->p + 1;
  if (skip_string(c) < 0) return -1;
  size_t len = (size_t)(c->p - 1 - start);
  return len == n && memcmp(start, key, n) == 0;
}

/* Finds the value at `path` in the whole text: its first character in *value, or NULL when the
 * path is absent; -1 when the text is not JSON. The whole document is validated, so that a
 * truncated answer is never read as a good one. */
static int find(const char *json, size_t len, const char *path, const char **value) {
  struct cursor whole = {json, json + len, 0};
  if (skip_value(&whole) < 0) return -1;
  ws(&whole);
  if (whole.p != whole.end) return -1;

  struct cursor c = {json, json + len, 0};
  *value = NULL;
  const char *seg = path;
  ws(&c);
  for (;;) {
    size_t n = strcspn(seg, ".");
    if (c.p >= c.end || *c.p != '{') return 0;
    c.p++;
    ws(&c);
    const char *found = NULL;
    while (c.p < c.end && *c.p != '}') {
      ws(&c);
      int is = key_is(&c, seg, n);
      if (is < 0) return -1;
      ws(&c);
      c.p++; /* ':' (validated above) */
      ws(&c);
      if (is) {
        found = c.p;
        break;
      }
      if (skip_value(&c) < 0) return -1;
      ws(&c);
      if (c.p < c.end && *c.p == ',') c.p++;
      ws(&c);
    }
    if (!found) return 0;
    if (seg[n] == '\0') {
      *value = found;
      return 0;
    }
    seg += n + 1;
    c.p = found;
  }
}

int gs_json_string(const char *json, size_t len, const char *path, char *out, size_t n) {
  const char *v;
  if (find(json, len, path, &v) < 0) return -1;
  if (v == NULL || *v == 'n') return 0;
  if (*v != '"') return -1;
  size_t o = 0;
  for (const char *p = v + 1; *p != '"'; p++) {
    char ch = *p;
    if (ch == '\\') {
      p++;
      switch (*p) {
        case 'n': ch = '\n'; break;
        case 't': ch = '\t'; break;
        case 'r': ch = '\r'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'u': {
          char hex[5] = {p[1], p[2], p[3], p[4], 0};
          long code = strtol(hex, NULL, 16);
          ch = code < 0x80 ? (char)code : '?';
          p += 4;
          break;
        }
        default: ch = *p; break; /* " \ / */
      }
    }
    if (o + 1 < n) out[o++] = ch;
  }
  if (n) out[o] = '\0';
  return 1;
}

int gs_json_long(const char *json, size_t len, const char *path, long long *out) {
  const char *v;
  if (find(json, len, path, &v) < 0) return -1;
  if (v == NULL || *v == 'n') return 0;
  char *stop;
  long long x = strtoll(v, &stop, 10);
  if (stop == v || *stop == '.' || *stop == 'e' || *stop == 'E') return -1;
  *out = x;
  return 1;
}

int gs_json_longs(const char *json, size_t len, const char *path, long long *out, int max) {
  const char *v;
  if (find(json, len, path, &v) < 0) return -1;
  if (v == NULL || *v == 'n') return 0;
  if (*v != '[') return -1;
  int n = 0;
  const char *p = v + 1;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (*p == ']') return n;
    char *stop;
    long long x = strtoll(p, &stop, 10);
    if (stop == p || *stop == '.' || *stop == 'e' || *stop == 'E') return -1;
    if (n < max) out[n] = x;
    n++;
    p = stop;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (*p == ',') p++;
    else if (*p != ']') return -1;
  }
}
