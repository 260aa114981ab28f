/* vocab.c — the words a route table accepts, so a misspelt one is an error naming the
 * closest valid ones (edit distance, case-insensitive) instead of a row that never fires.
 *
 * What is valid, and why:
 *   format, regime — a name already registered: formats from GGUF's type table and the
 *     element dtypes, regimes the seed's four plus any a package declares (xpu.regime) or a
 *     contract registers under its op. A row or a query cannot introduce one.
 *   capability — one a device can report: the list below (what the backends' probes add),
 *     wave<N> for any subgroup size, or any a live device has reported.
 *   query fact — one that some registered row declares it reads: a Lua or C row's `facts`,
 *     a C row's `multiple`, every field and operand fact of a contract row. The set only
 *     grows, so a query accepted once stays accepted.
 * Registration is rare and takes a lock; nothing here runs during resolution. */
#include "route.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Capabilities the probes can report ('#': a run of digits). */
static const char *const device_caps[] = {
	"code.host", "code.ptx", "code.cubin", "code.spirv", "code.amdgcn", "unified_memory",
	"int64_atomics", "int64", "int8_storage", "f64", "f16", "f16_denorm_preserve", "bf16",
	"dot4_i8", "dot4_i8.accelerated", "mma_int8", "simd.avx2", "simd.avx512", "subgroup_shuffle",
	"subgroup_arith", "graph_replay", "wave#",
};

#define MAX_READS 1024

static struct {
	pthread_mutex_t lock;
	int n;
	char name[MAX_READS][XPU_NAME_MAX];
} reads = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* name against pattern: '#' in the pattern takes one or more digits. */
static bool matches(const char *pat, const char *name)
{
	while (*pat && *name) {
		if (*pat == '#') {
			if (!isdigit((unsigned char)*name))
				return false;
			while (isdigit((unsigned char)*name))
				name++;
			pat++;
		} else if (*pat++ != *name++)
			return false;
	}
	return !*pat && !*name;
}

int xpu_facts_declare(const char *pattern)
{
	size_t len = pattern ? strlen(pattern) : 0;
	if (len == 0 || len >= XPU_NAME_MAX)
		return xpu_fail("query fact name '%s' must be 1 to %d bytes", pattern ? pattern : "", XPU_NAME_MAX - 1);
	int rc = 0;
	pthread_mutex_lock(&reads.lock);
	bool known = false;
	for (int i = 0; i < reads.n && !known; i++)
		known = strcmp(reads.name[i], pattern) == 0;
	if (!known && reads.n == MAX_READS)
		rc = xpu_fail("more than %d query fact names are declared", MAX_READS);
	else if (!known)
		memcpy(reads.name[reads.n++], pattern, len + 1);
	pthread_mutex_unlock(&reads.lock);
	return rc;
}

bool xpu_fact_declared(const char *name)
{
	bool known = false;
	pthread_mutex_lock(&reads.lock);
	for (int i = 0; i < reads.n && !known; i++)
		known = matches(reads.name[i], name);
	pthread_mutex_unlock(&reads.lock);
	return known;
}

bool xpu_cap_known(const char *name)
{
	for (size_t i = 0; i < sizeof device_caps / sizeof *device_caps; i++)
		if (matches(device_caps[i], name))
			return true;
	return xpu_name_find(XPU_NAME_CAP, name) >= 0;
}

/* ---- the closest names -------------------------------------------------------------------- */

/* Levenshtein distance, ignoring case; '#' in a pattern stands for one digit. */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[XPU_NAME_MAX + 1];
	if (la > XPU_NAME_MAX || lb > XPU_NAME_MAX)
		return XPU_NAME_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			bool same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ||
				    (b[j - 1] == '#' && isdigit((unsigned char)a[i - 1]));
			int best = diag + !same;
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* A pattern as people read it: dim# -> dim<n>. */
static void shown(const char *name, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = name; *p && o + 4 < n; p++) {
		if (*p == '#') {
			memcpy(out + o, "<n>", 3);
			o += 3;
		} else
			out[o++] = *p;
	}
	out[o] = 0;
}

#define SUGGEST_MAX 3
#define LIST_MAX 24

/* Close enough to be a slip of the keys rather than another word. */
static bool near(const char *word, int d)
{
	int len = (int)strlen(word);
	return d <= (len / 2 > 2 ? len / 2 : 2);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void quoted(char *out, size_t outn, const char *name, const char *sep)
{
	char shown_name[XPU_NAME_MAX + 16];
	shown(name, shown_name, sizeof shown_name);
	size_t used = strlen(out);
	if (used < outn)
		snprintf(out + used, outn - used, "%s'%s'", sep, shown_name);
}

/* "(did you mean 'a' or 'b'?)": the closest of cands (up to three, at the least distance, in
 * name order) when they are near; else "(known: 'x', 'y', ...)", in name order. */
static void closest(const char *word, const char **cands, int n, char *out, size_t outn)
{
	const char *best[SUGGEST_MAX];
	int nbest = 0, least = XPU_NAME_MAX + 1;
	qsort(cands, (size_t)n, sizeof *cands, by_name);
	for (int i = 0; i < n; i++) {
		if (i > 0 && strcmp(cands[i], cands[i - 1]) == 0)
			continue;
		int d = distance(word, cands[i]);
		if (d < least) {
			least = d;
			nbest = 0;
		}
		if (d == least && nbest < SUGGEST_MAX)
			best[nbest++] = cands[i];
	}
	out[0] = 0;
	if (n == 0)
		return;
	if (near(word, least)) {
		snprintf(out, outn, "(did you mean ");
		for (int i = 0; i < nbest; i++)
			quoted(out, outn, best[i], i == 0 ? "" : i + 1 == nbest ? " or " : ", ");
		size_t used = strlen(out);
		snprintf(out + used, outn - used, "?)");
		return;
	}
	snprintf(out, outn, "(known: ");
	int shown_n = 0;
	for (int i = 0; i < n && shown_n < LIST_MAX; i++)
		if (i == 0 || strcmp(cands[i], cands[i - 1]) != 0)
			quoted(out, outn, cands[i], shown_n++ ? ", " : "");
	size_t used = strlen(out);
	snprintf(out + used, outn - used, "%s)", shown_n == LIST_MAX ? ", ..." : "");
}

static int gather(enum xpu_name_kind kind, const char **cands, int max)
{
	int n = 0;
	if (kind == XPU_NAME_KEY) {
		pthread_mutex_lock(&reads.lock);
		for (int i = 0; i < reads.n && n < max; i++)
			cands[n++] = reads.name[i]; /* declared names never move or go */
		pthread_mutex_unlock(&reads.lock);
		return n;
	}
	if (kind == XPU_NAME_CAP)
		for (size_t i = 0; i < sizeof device_caps / sizeof *device_caps && n < max; i++)
			cands[n++] = device_caps[i];
	int have = xpu_name_list(kind, cands + n, max - n);
	return n + (have < max - n ? have : max - n);
}

void xpu_suggest(enum xpu_name_kind kind, const char *word, char *out, size_t n)
{
	const char *cands[MAX_READS + XPU_NAMES_PER_KIND];
	closest(word, cands, gather(kind, cands, (int)(sizeof cands / sizeof *cands)), out, n);
}

void xpu_suggest_among(const char *word, const char *const *cands, char *out, size_t n)
{
	const char *copy[256];
	int count = 0;
	while (cands[count] && count < 256) {
		copy[count] = cands[count];
		count++;
	}
	closest(word, copy, count, out, n);
}
