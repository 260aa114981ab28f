/* reader.c — the FKC reader: a contract file's front matter and every ```fkc block, read
 * into contract objects; a block's sections are read by reader_accept.c, reader_return.c
 * and reader_caps.c through reader.h. Every refusal names file, line, kernel and key; unknown
 * keys are refused by name. Uses ytree (libyaml) and the backend registry. */
#include "reader.h"
#include "core/device.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_BLOCKS 256

/* ---- one block ---------------------------------------------------------------------------- */

static const char *const top_keys[] = { "kernel", "op_kind", "backend", "entry_point", "accept", "return", "caps",
					"cost", "precision", "determinism", "blurb", "kernel_source",
					"kernel_revision_hash", NULL };

static int read_backend(struct fkr *r, const struct ynode *n)
{
	char s[16], known[96] = "";
	if (fkr_str(r, n, "backend", s, sizeof s))
		return -1;
	for (int i = 0; i < xpu_backend_count(); i++) {
		const char *b = xpu_backend_at(i)->name;
		if (strcasecmp(s, b) == 0)
			return snprintf(r->c->backend, sizeof r->c->backend, "%s", b), 0;
		snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", b);
	}
	return fkr_fail(r, n->line, "backend", "unknown backend '%s' (known: %s)", s, known);
}

static int read_ids(struct fkr *r, const struct ynode *root)
{
	const struct ynode *n;
	if (fkr_str(r, ymap_get(root, "op_kind"), "op_kind", r->c->op_kind, sizeof r->c->op_kind) ||
	    read_backend(r, ymap_get(root, "backend")) ||
	    fkr_str(r, ymap_get(root, "entry_point"), "entry_point", r->c->entry_point, sizeof r->c->entry_point))
		return -1;
	if ((n = ymap_get(root, "blurb")) && fkr_strdup(r, n, "blurb", &r->c->blurb))
		return -1;
	if ((n = ymap_get(root, "kernel_source")) &&
	    fkr_str(r, n, "kernel_source", r->c->kernel_source, sizeof r->c->kernel_source))
		return -1;
	if ((n = ymap_get(root, "kernel_revision_hash")) &&
	    fkr_str(r, n, "kernel_revision_hash", r->c->revision_hash, sizeof r->c->revision_hash))
		return -1;
	return 0;
}

static int read_contract(struct fkr *r, const struct ynode *root, int fence_line)
{
	static const char *const dets[] = { "bitwise", "same_hardware_bitwise", "nondeterministic" };
	int v;
	if (!root || root->kind != YT_MAP)
		return fkr_fail(r, root ? root->line : fence_line + 1, "(block)", "a ```fkc block holds one map of keys, "
			     "got %s", fkr_type_word(root));
	const struct ynode *k = ymap_get(root, "kernel");
	if (k && k->kind == YT_SCALAR && fkr_scalar_type(k) == S_STR && k->len < sizeof r->kernel && fkr_is_name(k->s))
		snprintf(r->kernel, sizeof r->kernel, "%s", k->s);
	if (fkr_check_map(r, root, "", top_keys, 10))
		return -1;
	if (!r->kernel[0] || strcmp(r->kernel, "?") == 0)
		return fkr_fail(r, k->line, "kernel", "expected a kernel name (letters, digits, _), got %s", fkr_type_word(k));
	snprintf(r->c->kernel, sizeof r->c->kernel, "%s", r->kernel);
	r->c->line = fence_line;
	if (read_ids(r, root) || fkr_accept(r, ymap_get(root, "accept")) || fkr_return(r, ymap_get(root, "return")) ||
	    fkr_caps(r, ymap_get(root, "caps")) || fkr_cost(r, ymap_get(root, "cost")) ||
	    fkr_precision(r, ymap_get(root, "precision")) ||
	    fkr_word(r, ymap_get(root, "determinism"), "determinism", dets, 3, &v))
		return -1;
	r->c->determinism = (enum xpu_determinism)v;
	return 0;
}

/* ---- the file ----------------------------------------------------------------------------- */

struct span {
	size_t off, len;
	int first_line; /* of the text; the fence is the line before */
};

/* A kernel name for messages before the YAML is read: the block's `kernel:` line, if any. */
static void sniff_kernel(const char *text, size_t len, char *out, size_t n)
{
	snprintf(out, n, "?");
	for (size_t i = 0; i < len;) {
		const char *line = text + i, *nl = memchr(line, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - line) : len - i;
		if (ll > 7 && strncmp(line, "kernel:", 7) == 0) {
			size_t b = 7, e;
			while (b < ll && line[b] == ' ')
				b++;
			for (e = b; e < ll && (isalnum((unsigned char)line[e]) || line[e] == '_'); e++)
				;
			if (e > b && e - b < n)
				snprintf(out, n, "%.*s", (int)(e - b), line + b);
			return;
		}
		i += ll + 1;
	}
}

static int parse_yaml(struct fkr *r, const char *text, const struct span *s, struct ydoc *doc)
{
	struct yerror e;
	if (ydoc_parse(doc, text + s->off, s->len, s->first_line, &e) == 0)
		return 0;
	return fkr_fail(r, e.line, e.key, "%s", e.msg);
}

static const char *const front_keys[] = { "fkc_version", "provider", NULL };
static const char *const provider_keys[] = { "name", "backend", "kernel_source", "link_registry", "revision_base", NULL };

static int read_provider(struct fkr *r, struct xpu_fkc_file *f, const struct ynode *p)
{
	const struct ynode *n;
	if (fkr_check_map(r, p, "provider", provider_keys, 1) ||
	    fkr_str(r, ymap_get(p, "name"), "provider.name", f->provider, sizeof f->provider))
		return -1;
	if ((n = ymap_get(p, "backend")) && fkr_str(r, n, "provider.backend", f->provider_backend, sizeof f->provider_backend))
		return -1;
	if ((n = ymap_get(p, "revision_base")) &&
	    fkr_str(r, n, "provider.revision_base", f->revision_base, sizeof f->revision_base))
		return -1;
	if ((n = ymap_get(p, "kernel_source")) && fkr_check_str(r, n, "provider.kernel_source"))
		return -1;
	if ((n = ymap_get(p, "link_registry")) && fkr_check_str(r, n, "provider.link_registry"))
		return -1;
	return 0;
}

static int read_front(struct fkr *r, struct xpu_fkc_file *f, const char *text, const struct span *s)
{
	struct ydoc doc;
	if (parse_yaml(r, text, s, &doc))
		return -1;
	const struct ynode *root = doc.root;
	int64_t v = 0;
	int rc = -1;
	if (!root || root->kind != YT_MAP)
		fkr_fail(r, s->first_line, "(front matter)", "expected a map of keys, got %s", fkr_type_word(root));
	else if (fkr_check_map(r, root, "", front_keys, 2) == 0 &&
		 fkr_int(r, ymap_get(root, "fkc_version"), "fkc_version", 1, 1, &v) == 0)
		rc = read_provider(r, f, ymap_get(root, "provider"));
	f->version = (int)v;
	ydoc_free(&doc);
	return rc;
}

static bool line_is(const char *line, size_t ll, const char *word)
{
	size_t wl = strlen(word);
	if (ll < wl || strncmp(line, word, wl) != 0)
		return false;
	for (size_t i = wl; i < ll; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			return false;
	return true;
}

/* Front matter (--- at line 1 up to the next ---) and ```fkc blocks; other fenced blocks are
 * skipped whole, so an ```fkc inside a ```markdown example is not a contract. */
static int scan(struct fkr *r, const char *text, size_t len, struct span *front, struct span *blocks, int *nblocks)
{
	int line = 0, open_line = 0;
	enum { BODY, FRONT, FKC, OTHER } state = BODY;
	size_t open_off = 0;
	front->len = 0;
	front->first_line = 0;
	for (size_t i = 0; i < len;) {
		const char *l = text + i, *nl = memchr(l, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - l) : len - i, next = i + ll + 1;
		line++;
		if (line == 1 && line_is(l, ll, "---")) {
			state = FRONT;
			open_off = next;
			open_line = 1;
		} else if (state == FRONT && line_is(l, ll, "---")) {
			*front = (struct span){ open_off, i - open_off, 2 };
			state = BODY;
		} else if (state == BODY && line_is(l, ll, "```fkc")) {
			state = FKC;
			open_off = next;
			open_line = line;
		} else if (state == BODY && ll >= 3 && strncmp(l, "```", 3) == 0) {
			state = OTHER;
			open_line = line;
		} else if ((state == FKC || state == OTHER) && line_is(l, ll, "```")) {
			if (state == FKC) {
				if (*nblocks == MAX_BLOCKS)
					return fkr_fail(r, line, "(file)", "more than %d ```fkc blocks", MAX_BLOCKS);
				blocks[(*nblocks)++] = (struct span){ open_off, i - open_off, open_line + 1 };
			}
			state = BODY;
		}
		i = next;
	}
	if (state == FRONT)
		return fkr_fail(r, 1, "(front matter)", "opened with --- and never closed");
	if (state != BODY)
		return fkr_fail(r, open_line, "(file)", "%s block opened here is never closed",
			     state == FKC ? "the ```fkc" : "a fenced");
	if (front->first_line == 0)
		return fkr_fail(r, 1, "(front matter)", "missing: a contract file opens with ---, fkc_version: 1, "
			     "provider: {name: ...}, ---");
	if (*nblocks == 0)
		return fkr_fail(r, line, "(file)", "no ```fkc blocks");
	return 0;
}

static int read_blocks(struct fkr *r, struct xpu_fkc_file *f, const char *text, const struct span *b, int n)
{
	for (int i = 0; i < n; i++) {
		struct xpu_contract *c = &f->contracts[i];
		struct ydoc doc;
		c->file = f;
		r->c = c;
		sniff_kernel(text + b[i].off, b[i].len, r->kernel, sizeof r->kernel);
		if (parse_yaml(r, text, &b[i], &doc))
			return -1;
		int rc = read_contract(r, doc.root, b[i].first_line - 1);
		ydoc_free(&doc);
		f->ncontracts = i + 1;
		if (rc)
			return -1;
		for (int j = 0; j < i; j++)
			if (strcmp(f->contracts[j].kernel, c->kernel) == 0 && strcmp(f->contracts[j].backend, c->backend) == 0)
				return fkr_fail(r, c->line, "backend", "a second contract for kernel '%s' on %s (the first is at "
					     "line %d)", c->kernel, c->backend, f->contracts[j].line);
	}
	return 0;
}

struct xpu_fkc_file *xpu_fkc_parse(const char *path, const char *text, size_t len)
{
	struct fkr r = { .path = path };
	if (len > XPU_FKC_FILE_LIMIT) {
		fkr_fail(&r, 1, "(file)", "%zu bytes, more than the %d a contract file may hold", len, XPU_FKC_FILE_LIMIT);
		return NULL;
	}
	const char *nul = memchr(text, 0, len);
	if (nul) {
		int line = 1;
		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		fkr_fail(&r, line, "(file)", "a NUL byte: not a text file");
		return NULL;
	}
	struct span front = { 0, 0, 0 }, *blocks = xpu_malloc(sizeof *blocks * MAX_BLOCKS);
	struct xpu_fkc_file *f = xpu_calloc(1, sizeof *f);
	int nblocks = 0;
	bool ok = blocks && f && (f->path = xpu_strdup(path));
	if (!ok)
		xpu_fail("%s: out of memory", path);
	if (f)
		f->refs = 1;
	ok = ok && scan(&r, text, len, &front, blocks, &nblocks) == 0 && read_front(&r, f, text, &front) == 0;
	if (ok && !(f->contracts = xpu_calloc((size_t)nblocks, sizeof *f->contracts)))
		ok = xpu_fail("%s: out of memory", path) == 0;
	ok = ok && read_blocks(&r, f, text, blocks, nblocks) == 0;
	xpu_free(blocks);
	if (!ok) {
		xpu_fkc_release(f);
		return NULL;
	}
	return f;
}

struct xpu_fkc_file *xpu_fkc_load(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		xpu_fail("%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fileno(fp), &st) || !S_ISREG(st.st_mode)) {
		fclose(fp);
		xpu_fail("%s: not a regular file", path);
		return NULL;
	}
	if (st.st_size > XPU_FKC_FILE_LIMIT) {
		fclose(fp);
		xpu_fail("%s:1: (file): %lld bytes, more than the %d a contract file may hold", path,
			 (long long)st.st_size, XPU_FKC_FILE_LIMIT);
		return NULL;
	}
	char *text = xpu_malloc((size_t)st.st_size + 1);
	size_t got = text ? fread(text, 1, (size_t)st.st_size, fp) : 0;
	fclose(fp);
	if (!text || got != (size_t)st.st_size) {
		xpu_free(text);
		xpu_fail("%s: cannot read", path);
		return NULL;
	}
	struct xpu_fkc_file *f = xpu_fkc_parse(path, text, got);
	xpu_free(text);
	return f;
}
