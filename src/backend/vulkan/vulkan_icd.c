/* vulkan_icd.c — why the Vulkan loader found no driver: the ICD manifests it would read (the
 * loader's own search: VK_DRIVER_FILES / VK_ICD_FILENAMES, else the XDG config and data
 * folders' vulkan/icd.d), and for each the library it names, opened here to get dlerror's
 * words. Only asked after vkCreateInstance failed. Uses dlopen and the C library. */
#include "vulkan_api.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The "library_path" value of a manifest ("" when it has none); -1 where no file opens. */
static int manifest_library(const char *path, char *lib, size_t n)
{
	lib[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char text[8192];
	size_t len = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[len] = 0;
	char *key = strstr(text, "\"library_path\"");
	char *open = key ? strchr(key + 14, '"') : NULL;
	char *close = open ? strchr(open + 1, '"') : NULL;
	if (close && (size_t)(close - open) < n)
		snprintf(lib, n, "%.*s", (int)(close - open - 1), open + 1);
	return 0;
}

struct icd_scan {
	int manifests, opened, refused;
	char first_failure[200]; /* "<manifest>: <dlerror>" of the first library that did not open */
	char first_refusal[300]; /* the first library that opened but gave no vkCreateInstance */
};

typedef void *(*icd_proc_fn)(void *instance, const char *name);

/* A driver whose vk_icdGetInstanceProcAddr gives no vkCreateInstance did not initialise:
 * the loader then reports no driver at all, with no word of why. */
static bool gives_create_instance(void *lib)
{
	icd_proc_fn proc = (icd_proc_fn)dlsym(lib, "vk_icdGetInstanceProcAddr");
	return !proc || proc(NULL, "vkCreateInstance") != NULL;
}

static void scan_manifest(struct icd_scan *s, const char *path)
{
	size_t len = strlen(path);
	if (len < 5 || strcmp(path + len - 5, ".json") != 0)
		return;
	char lib[256];
	if (manifest_library(path, lib, sizeof lib))
		return;
	s->manifests++;
	void *h = lib[0] ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (h) {
		s->opened++;
		if (!gives_create_instance(h) && !s->refused++)
			snprintf(s->first_refusal, sizeof s->first_refusal, "%s (%s)", lib, path);
		dlclose(h);
	} else if (!s->first_failure[0]) {
		const char *why = lib[0] ? dlerror() : "names no library_path";
		snprintf(s->first_failure, sizeof s->first_failure, "%s: %s", path, why ? why : "?");
	}
}

/* A manifest file, or every manifest in a folder. */
static void scan_entry(struct icd_scan *s, const char *path)
{
	DIR *dir = opendir(path);
	if (!dir) {
		scan_manifest(s, path);
		return;
	}
	struct dirent *e;
	char full[1536];
	while ((e = readdir(dir))) {
		snprintf(full, sizeof full, "%s/%s", path, e->d_name);
		scan_manifest(s, full);
	}
	closedir(dir);
}

/* Each element of a colon-separated list, with suffix appended ("" or "/vulkan/icd.d"). */
static void scan_list(struct icd_scan *s, const char *list, const char *suffix)
{
	char item[1024];
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ":");
		if (n > 0 && n + strlen(suffix) < sizeof item) {
			snprintf(item, sizeof item, "%.*s%s", (int)n, p, suffix);
			scan_entry(s, item);
		}
		p += n + (p[n] == ':');
	}
}

/* What the kernel shows of NVIDIA's modules: on the hosts where NVIDIA's Vulkan driver loaded
 * but did not start, nvidia and nvidia_uvm were loaded and nvidia_modeset was not. */
static const char *kernel_note(void)
{
	DIR *d = opendir("/sys/module/nvidia");
	if (!d)
		return "";
	closedir(d);
	if ((d = opendir("/sys/module/nvidia_modeset"))) {
		closedir(d);
		return "";
	}
	return "; this host's kernel has nvidia loaded but not nvidia_modeset, which only the host "
	       "can load (modprobe nvidia-modeset); CUDA does not need it";
}

void xpu_vk_why_no_driver(char *out, size_t n)
{
	struct icd_scan s = { 0 };
	const char *files = getenv("VK_DRIVER_FILES");
	if (!files || !*files)
		files = getenv("VK_ICD_FILENAMES");
	const char *where;
	if (files && *files) {
		scan_list(&s, files, "");
		where = "VK_DRIVER_FILES";
	} else {
		const char *config = getenv("XDG_CONFIG_DIRS"), *data = getenv("XDG_DATA_DIRS");
		scan_list(&s, config && *config ? config : "/etc/xdg", "/vulkan/icd.d");
		scan_list(&s, "/etc", "/vulkan/icd.d");
		scan_list(&s, data && *data ? data : "/usr/local/share:/usr/share", "/vulkan/icd.d");
		where = "the vulkan/icd.d folders (/etc, /usr/share, XDG_DATA_DIRS)";
	}
	if (s.manifests == 0)
		snprintf(out, n, "no driver manifest (ICD .json) in %s: install the GPU vendor's Vulkan "
			 "driver, or set VK_DRIVER_FILES to its icd.json", where);
	else if (s.refused)
		snprintf(out, n, "the driver %s loaded but did not start (it gives no vkCreateInstance)%s",
			 s.first_refusal, kernel_note());
	else if (s.first_failure[0])
		snprintf(out, n, "%d driver manifest%s, %d whose library opens; %s", s.manifests,
			 s.manifests == 1 ? "" : "s", s.opened, s.first_failure);
	else
		snprintf(out, n, "%d driver manifest%s, every library opens, none took the instance "
			 "(a driver older than the loader, or no device node it can use); "
			 "VK_LOADER_DEBUG=driver shows why", s.manifests, s.manifests == 1 ? "" : "s");
}
