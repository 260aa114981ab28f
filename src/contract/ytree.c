/* ytree.c — YAML text to a ytree (ytree.h) through libyaml's event API. Every node lives in
 * one arena freed at once, so a refusal half-way leaks nothing. Uses libyaml and core/xpu.h. */
#include "ytree.h"
#include "core/xpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

/* ---- the arena ------------------------------------------------------------------------------ */

struct yblock {
	struct yblock *next;
	size_t used, cap;
	char data[];
};

struct yarena {
	struct yblock *head;
};

static void *arena_alloc(struct yarena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct yblock *b = a->head;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 16384 ? n : 16384;
		b = xpu_malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->cap = cap;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	return p;
}

static void arena_free(struct yarena *a)
{
	if (!a)
		return;
	for (struct yblock *b = a->head, *next; b; b = next) {
		next = b->next;
		xpu_free(b);
	}
	xpu_free(a);
}

/* ---- building ------------------------------------------------------------------------------- */

struct builder {
	yaml_parser_t parser;
	struct yarena *arena;
	struct ynode *stack[YT_MAX_DEPTH + 1];
	int depth, nodes, docs, first_line;
	struct ynode *root;
	struct yerror *e;
};

/* The key path reached: map levels show their last key, sequence levels their index. */
static void key_path(struct builder *b, char *out, size_t n)
{
	size_t used = 0;
	out[0] = 0;
	for (int d = 0; d < b->depth && used < n; d++) {
		const struct ynode *nd = b->stack[d];
		int w = 0;
		if (nd->kind == YT_SEQ && nd->n > 0)
			w = snprintf(out + used, n - used, "[%d]", nd->n - 1);
		else if (nd->kind == YT_MAP && (nd->n > 0 || nd->key_pending))
			w = snprintf(out + used, n - used, "%s%s", used ? "." : "",
				     nd->kids[nd->key_pending ? 2 * nd->n : 2 * (nd->n - 1)]->s);
		if (w > 0)
			used += (size_t)w;
	}
	if (!out[0])
		snprintf(out, n, "(top level)");
}

static int fail(struct builder *b, int line0, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct builder *b, int line0, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->e->msg, sizeof b->e->msg, fmt, ap);
	va_end(ap);
	b->e->line = b->first_line + line0;
	key_path(b, b->e->key, sizeof b->e->key);
	return -1;
}

static int tag_code(const char *tag)
{
	static const char *const names[] = { NULL, "str", "int", "float", "bool", "null", "map", "seq" };
	const char *core = "tag:yaml.org,2002:";
	if (!tag)
		return YT_TAG_NONE;
	if (strncmp(tag, core, strlen(core)) != 0)
		return -1;
	for (int i = 1; i < 8; i++)
		if (strcmp(tag + strlen(core), names[i]) == 0)
			return i;
	return -1;
}

static int check_node_props(struct builder *b, const yaml_event_t *ev, const yaml_char_t *anchor,
			    const yaml_char_t *tag, int *code)
{
	int line0 = (int)ev->start_mark.line;
	if (anchor)
		return fail(b, line0, "anchor '&%.40s' refused: contracts use no anchors or aliases", (const char *)anchor);
	*code = tag_code((const char *)tag);
	if (*code < 0)
		return fail(b, line0, "tag '%.60s' refused: only the core schema's tags are allowed", (const char *)tag);
	return 0;
}

/* A map's key waits in kids[2n] (key_pending) until its value arrives. */
static int add_child(struct builder *b, struct ynode *parent, struct ynode *child)
{
	int used = parent->kind == YT_MAP ? 2 * parent->n + parent->key_pending : parent->n;
	if (used == parent->cap) {
		int ncap = parent->cap ? parent->cap * 2 : 8;
		struct ynode **k = arena_alloc(b->arena, (size_t)ncap * sizeof *k);
		if (!k)
			return fail(b, child->line - b->first_line, "out of memory");
		if (used)
			memcpy(k, parent->kids, (size_t)used * sizeof *k);
		parent->kids = k;
		parent->cap = ncap;
	}
	if (parent->kind == YT_SEQ) {
		parent->kids[parent->n++] = child;
		return 0;
	}
	if (parent->key_pending) {
		parent->kids[2 * parent->n + 1] = child;
		parent->n++;
		parent->key_pending = false;
		return 0;
	}
	if (child->kind != YT_SCALAR)
		return fail(b, child->line - b->first_line, "a key must be a plain name, not a %s",
			    child->kind == YT_MAP ? "map" : "sequence");
	for (int i = 0; i < parent->n; i++)
		if (strcmp(parent->kids[2 * i]->s, child->s) == 0)
			return fail(b, child->line - b->first_line, "key '%.60s' appears twice", child->s);
	parent->kids[2 * parent->n] = child;
	parent->key_pending = true;
	return 0;
}

static struct ynode *new_node(struct builder *b, int kind, const yaml_event_t *ev)
{
	if (++b->nodes > YT_MAX_NODES) {
		fail(b, (int)ev->start_mark.line, "more than %d nodes", YT_MAX_NODES);
		return NULL;
	}
	struct ynode *n = arena_alloc(b->arena, sizeof *n);
	if (!n) {
		fail(b, (int)ev->start_mark.line, "out of memory");
		return NULL;
	}
	memset(n, 0, sizeof *n);
	n->kind = (uint8_t)kind;
	n->line = b->first_line + (int)ev->start_mark.line;
	return n;
}

static int attach(struct builder *b, struct ynode *n)
{
	if (b->depth == 0) {
		b->root = n;
		return 0;
	}
	return add_child(b, b->stack[b->depth - 1], n);
}

static int on_scalar(struct builder *b, const yaml_event_t *ev)
{
	int tag;
	if (check_node_props(b, ev, ev->data.scalar.anchor, ev->data.scalar.tag, &tag))
		return -1;
	if (ev->data.scalar.length > YT_MAX_SCALAR)
		return fail(b, (int)ev->start_mark.line, "a scalar of %zu bytes (at most %d)",
			    ev->data.scalar.length, YT_MAX_SCALAR);
	if (tag == YT_TAG_MAP || tag == YT_TAG_SEQ)
		return fail(b, (int)ev->start_mark.line, "a scalar tagged as a collection");
	struct ynode *n = new_node(b, YT_SCALAR, ev);
	if (!n || !(n->s = arena_alloc(b->arena, ev->data.scalar.length + 1)))
		return n ? fail(b, (int)ev->start_mark.line, "out of memory") : -1;
	memcpy(n->s, ev->data.scalar.value, ev->data.scalar.length);
	n->s[ev->data.scalar.length] = 0;
	n->len = ev->data.scalar.length;
	if (strlen(n->s) != n->len)
		return fail(b, (int)ev->start_mark.line, "a scalar holds a NUL byte");
	n->tag = (uint8_t)tag;
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && tag == YT_TAG_NONE;
	return attach(b, n);
}

static int on_open(struct builder *b, const yaml_event_t *ev, int kind)
{
	const yaml_char_t *anchor = kind == YT_MAP ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
	const yaml_char_t *tagp = kind == YT_MAP ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
	int tag;
	if (check_node_props(b, ev, anchor, tagp, &tag))
		return -1;
	if (tag != YT_TAG_NONE && tag != (kind == YT_MAP ? YT_TAG_MAP : YT_TAG_SEQ))
		return fail(b, (int)ev->start_mark.line, "a collection tagged as a scalar");
	if (b->depth == YT_MAX_DEPTH)
		return fail(b, (int)ev->start_mark.line, "nesting deeper than %d levels", YT_MAX_DEPTH);
	struct ynode *n = new_node(b, kind, ev);
	if (!n || attach(b, n))
		return -1;
	b->stack[b->depth++] = n;
	return 0;
}

static int on_event(struct builder *b, const yaml_event_t *ev, bool *done)
{
	int line0 = (int)ev->start_mark.line;
	switch (ev->type) {
	case YAML_STREAM_END_EVENT: *done = true; return 0;
	case YAML_DOCUMENT_START_EVENT:
		if (++b->docs > 1)
			return fail(b, line0, "more than one YAML document (a stray '---'?)");
		return 0;
	case YAML_ALIAS_EVENT:
		return fail(b, line0, "alias '*%.40s' refused: contracts use no anchors or aliases",
			    (const char *)ev->data.alias.anchor);
	case YAML_SCALAR_EVENT: return on_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT: return on_open(b, ev, YT_SEQ);
	case YAML_MAPPING_START_EVENT: return on_open(b, ev, YT_MAP);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: b->depth--; return 0;
	default: return 0;
	}
}

static int parse_error(struct builder *b)
{
	const yaml_parser_t *p = &b->parser;
	int line0 = (int)(p->problem ? p->problem_mark.line : p->mark.line);
	if (p->error == YAML_MEMORY_ERROR)
		return fail(b, line0, "out of memory");
	if (p->context)
		return fail(b, line0, "YAML: %s %s", p->problem ? p->problem : "syntax error", p->context);
	return fail(b, line0, "YAML: %s", p->problem ? p->problem : "syntax error");
}

int ydoc_parse(struct ydoc *d, const char *text, size_t len, int first_line, struct yerror *e)
{
	struct builder *b = xpu_calloc(1, sizeof *b);
	d->arena = NULL;
	d->root = NULL;
	if (!b || !(d->arena = xpu_calloc(1, sizeof *d->arena))) {
		xpu_free(b);
		snprintf(e->msg, sizeof e->msg, "out of memory");
		e->line = first_line;
		snprintf(e->key, sizeof e->key, "(top level)");
		return -1;
	}
	b->arena = d->arena;
	b->first_line = first_line;
	b->e = e;
	int rc = 0;
	if (!yaml_parser_initialize(&b->parser)) {
		rc = fail(b, 0, "out of memory");
	} else {
		yaml_parser_set_input_string(&b->parser, (const unsigned char *)text, len);
		for (bool done = false; !done && rc == 0;) {
			yaml_event_t ev;
			if (!yaml_parser_parse(&b->parser, &ev)) {
				rc = parse_error(b);
				break;
			}
			rc = on_event(b, &ev, &done);
			yaml_event_delete(&ev);
		}
		yaml_parser_delete(&b->parser);
	}
	d->root = b->root;
	xpu_free(b);
	if (rc)
		ydoc_free(d);
	return rc;
}

void ydoc_free(struct ydoc *d)
{
	arena_free(d->arena);
	d->arena = NULL;
	d->root = NULL;
}

const struct ynode *ymap_get(const struct ynode *map, const char *key)
{
	if (!map || map->kind != YT_MAP)
		return NULL;
	for (int i = 0; i < map->n; i++)
		if (strcmp(map->kids[2 * i]->s, key) == 0)
			return map->kids[2 * i + 1];
	return NULL;
}
