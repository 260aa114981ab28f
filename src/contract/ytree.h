/* ytree.h — a small YAML document tree built from libyaml's events, with limits that make
 * hostile input fail fast in bounded memory: no anchors or aliases, core-schema tags only,
 * bounded nesting, node count and scalar length, one document. Internal to src/contract. */
#ifndef XPU_YTREE_H
#define XPU_YTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define YT_MAX_DEPTH 8
#define YT_MAX_NODES 20000
#define YT_MAX_SCALAR 4096

enum { YT_SCALAR, YT_MAP, YT_SEQ };
/* Explicit core-schema tags (!!str, ...); YT_TAG_NONE when the scalar's type is implicit. */
enum { YT_TAG_NONE, YT_TAG_STR, YT_TAG_INT, YT_TAG_FLOAT, YT_TAG_BOOL, YT_TAG_NULL, YT_TAG_MAP, YT_TAG_SEQ };

struct ynode {
	uint8_t kind;
	uint8_t tag;
	bool plain;         /* a plain scalar: its type is resolved by the core schema */
	int line;           /* 1-based, in the file */
	char *s;            /* scalars: NUL-terminated text */
	size_t len;
	bool key_pending;   /* building: a map's key waits for its value */
	int n, cap;         /* maps: n key/value pairs in kids[2i], kids[2i+1]; sequences: n items */
	struct ynode **kids;
};

struct yarena;

struct ydoc {
	struct yarena *arena;
	struct ynode *root; /* NULL for an empty document */
};

/* Where a parse failed: the file line, the key path reached ("accept.inputs[0]") and why. */
struct yerror {
	int line;
	char key[128];
	char msg[192];
};

/* Parses text whose first line is line `first_line` of its file. 0, or -1 with *e filled
 * (the arena is freed either way on failure). */
int ydoc_parse(struct ydoc *d, const char *text, size_t len, int first_line, struct yerror *e);
void ydoc_free(struct ydoc *d);

/* The value of `key` in a map, or NULL. */
const struct ynode *ymap_get(const struct ynode *map, const char *key);

#endif
