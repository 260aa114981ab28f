/* names.c — interned names: formats, regimes, capabilities and query fact keys.
 * Registration is rare (start-up, row declaration); lookups by id print refusals. */
#include "xpu.h"

#include <pthread.h>
#include <string.h>

struct name_entry {
	int32_t id;
	char name[XPU_NAME_MAX];
};

/* Both lookups are hashed (open addressing, slot = entry index + 1): launchers and contract
 * rows look fact keys up by name on every call. */
#define SLOTS (4 * XPU_NAMES_PER_KIND)

struct name_space {
	int count;
	int32_t next_id;
	struct name_entry entries[XPU_NAMES_PER_KIND];
	uint16_t by_name[SLOTS], by_id[SLOTS];
};

static struct name_space spaces[XPU_NAME_KINDS];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static const char *const kind_words[XPU_NAME_KINDS] = {
	[XPU_NAME_FORMAT] = "format",
	[XPU_NAME_REGIME] = "regime",
	[XPU_NAME_CAP] = "capability",
	[XPU_NAME_KEY] = "query key",
};

const char *xpu_name_kind_word(enum xpu_name_kind kind)
{
	return kind_words[kind];
}

static uint32_t name_hash(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

static struct name_entry *find_by_name(struct name_space *s, const char *name)
{
	for (uint32_t h = name_hash(name) % SLOTS;; h = (h + 1) % SLOTS) {
		if (!s->by_name[h])
			return NULL;
		struct name_entry *e = &s->entries[s->by_name[h] - 1];
		if (strcmp(e->name, name) == 0)
			return e;
	}
}

static struct name_entry *find_by_id(struct name_space *s, int32_t id)
{
	for (uint32_t h = (uint32_t)id % SLOTS;; h = (h + 1) % SLOTS) {
		if (!s->by_id[h])
			return NULL;
		struct name_entry *e = &s->entries[s->by_id[h] - 1];
		if (e->id == id)
			return e;
	}
}

/* Entry i into both indexes (a quarter full at most: every probe ends at an empty slot). */
static void index_entry(struct name_space *s, int i)
{
	uint32_t h = name_hash(s->entries[i].name) % SLOTS;
	while (s->by_name[h])
		h = (h + 1) % SLOTS;
	s->by_name[h] = (uint16_t)(i + 1);
	for (h = (uint32_t)s->entries[i].id % SLOTS; s->by_id[h]; h = (h + 1) % SLOTS)
		;
	s->by_id[h] = (uint16_t)(i + 1);
}

static int check_name(enum xpu_name_kind kind, const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0)
		return xpu_fail("%s name is empty", kind_words[kind]);
	if (n >= XPU_NAME_MAX)
		return xpu_fail("%s name '%.40s...' is longer than %d bytes", kind_words[kind], name,
				XPU_NAME_MAX - 1);
	return 0;
}

static int32_t add_locked(enum xpu_name_kind kind, const char *name, int32_t id)
{
	struct name_space *s = &spaces[kind];
	if (s->count == XPU_NAMES_PER_KIND)
		return xpu_fail("too many %s names (at most %d)", kind_words[kind], XPU_NAMES_PER_KIND);
	struct name_entry *e = &s->entries[s->count++];
	e->id = id;
	strcpy(e->name, name);
	index_entry(s, s->count - 1);
	if (id >= s->next_id)
		s->next_id = id + 1;
	return id;
}

static void init_once(void);

int32_t xpu_name_find(enum xpu_name_kind kind, const char *name)
{
	pthread_once(&names_once, init_once);
	if (!name)
		return -1;
	pthread_mutex_lock(&names_lock);
	struct name_entry *e = find_by_name(&spaces[kind], name);
	int32_t id = e ? e->id : -1;
	pthread_mutex_unlock(&names_lock);
	return id;
}

int32_t xpu_name_id(enum xpu_name_kind kind, const char *name)
{
	pthread_once(&names_once, init_once);
	if (check_name(kind, name))
		return -1;
	pthread_mutex_lock(&names_lock);
	struct name_entry *e = find_by_name(&spaces[kind], name);
	int32_t id = e ? e->id : add_locked(kind, name, spaces[kind].next_id);
	pthread_mutex_unlock(&names_lock);
	return id;
}

static int fixed_locked(enum xpu_name_kind kind, const char *name, int32_t id)
{
	struct name_space *s = &spaces[kind];
	struct name_entry *by_name = find_by_name(s, name);
	struct name_entry *by_id = find_by_id(s, id);
	if (by_name && by_name->id == id)
		return 0;
	if (by_name)
		return xpu_fail("%s '%s' is already id %d, not %d", kind_words[kind], name, by_name->id, id);
	if (by_id)
		return xpu_fail("%s id %d is already '%s', not '%s'", kind_words[kind], id, by_id->name, name);
	return add_locked(kind, name, id) < 0 ? -1 : 0;
}

int xpu_name_fixed(enum xpu_name_kind kind, const char *name, int32_t id)
{
	pthread_once(&names_once, init_once);
	if (check_name(kind, name))
		return -1;
	if (id < 0)
		return xpu_fail("%s '%s': id %d is negative", kind_words[kind], name, id);
	pthread_mutex_lock(&names_lock);
	int rc = fixed_locked(kind, name, id);
	pthread_mutex_unlock(&names_lock);
	return rc;
}

int xpu_name_list(enum xpu_name_kind kind, const char **out, int max)
{
	pthread_once(&names_once, init_once);
	pthread_mutex_lock(&names_lock);
	int n = spaces[kind].count;
	for (int i = 0; i < n && i < max; i++)
		out[i] = spaces[kind].entries[i].name; /* entries never move or go */
	pthread_mutex_unlock(&names_lock);
	return n;
}

const char *xpu_name_of(enum xpu_name_kind kind, int32_t id)
{
	pthread_once(&names_once, init_once);
	pthread_mutex_lock(&names_lock);
	struct name_entry *e = find_by_id(&spaces[kind], id);
	pthread_mutex_unlock(&names_lock);
	return e ? e->name : NULL;
}

/* Formats registered by name get ids from here up, clear of GGUF's type numbers. */
#define XPU_FIRST_FREE_FORMAT_ID 1000
#define XPU_FIRST_FREE_REGIME_ID 16

static void init_once(void)
{
	spaces[XPU_NAME_FORMAT].next_id = XPU_FIRST_FREE_FORMAT_ID;
	add_locked(XPU_NAME_REGIME, "decode", XPU_REGIME_DECODE);
	add_locked(XPU_NAME_REGIME, "prefill", XPU_REGIME_PREFILL);
	add_locked(XPU_NAME_REGIME, "bind", XPU_REGIME_BIND);
	add_locked(XPU_NAME_REGIME, "fused_tail", XPU_REGIME_FUSED_TAIL);
	spaces[XPU_NAME_REGIME].next_id = XPU_FIRST_FREE_REGIME_ID;
}

void xpu_names_init(void)
{
	pthread_once(&names_once, init_once);
}
