/* fuzz_cli.c — libFuzzer target for the xpulua command line (src/cli_args.c, what main.c
 * runs): the input is split at NUL bytes into the arguments after argv[0] ("xpulua"), read
 * into a plan (cli_parse), the plan checked against argv (every index in range, every step's
 * text and global inside an argument, -e / -l only before the script), the usage line of a bad
 * option formatted, the `arg` table built in a bare Lua state as main.c builds it and read
 * back, and each -e chunk compiled (never run: a chunk from the input could do anything). */
#include "cli_args.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 256

/* The arguments, split at NULs, into one copy of the input (argv points into it). */
static int split(const uint8_t *data, size_t size, char *copy, char **argv)
{
	int argc = 0;
	argv[argc++] = (char *)"xpulua";
	memcpy(copy, data, size);
	copy[size] = '\0';
	if (size == 0)
		goto done;
	for (size_t at = 0; argc < MAX_ARGS && at <= size;) {
		argv[argc++] = copy + at;
		at += strlen(copy + at) + 1;
	}
done:
	argv[argc] = NULL;
	return argc;
}

static bool inside(const char *p, int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (p >= argv[i] && p <= argv[i] + strlen(argv[i]))
			return true;
	return false;
}

static void check_plan(const struct cli_plan *plan, int argc, char **argv)
{
	if (plan->bad) {
		if (plan->bad < 1 || plan->bad >= argc || argv[plan->bad][0] != '-')
			abort();
		char line[128];
		cli_bad_option_text(argv[plan->bad], line, sizeof line);
		return;
	}
	if (plan->script < 0 || plan->script >= argc || plan->options_end > argc || plan->nsteps > argc)
		abort();
	if (plan->script_stdin && strcmp(argv[plan->script], "-") != 0)
		abort();
	for (int i = 0; i < plan->nsteps; i++) {
		const struct cli_step *s = &plan->steps[i];
		if (s->kind == CLI_WARNINGS)
			continue;
		if (!s->text || !inside(s->text, plan->options_end, argv))
			abort();
		if (s->kind == CLI_LIBRARY && (!inside(s->global, plan->options_end, argv) ||
					       s->global_len > strlen(s->global)))
			abort();
	}
}

/* The arg table main.c makes, read back: arg[i - script] is argv[i] for every argument. */
static void check_arg_table(lua_State *L, const struct cli_plan *plan, int argc, char **argv)
{
	cli_set_arg_table(L, argc, argv, plan);
	lua_getglobal(L, "arg");
	int script = plan->script > 0 ? plan->script : 0;
	for (int i = 0; i < argc; i++) {
		lua_rawgeti(L, -1, i - script);
		if (!lua_isstring(L, -1) || strcmp(lua_tostring(L, -1), argv[i]) != 0)
			abort();
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

static int compile_steps(lua_State *L)
{
	const struct cli_plan *plan = lua_touserdata(L, 1);
	for (int i = 0; i < plan->nsteps; i++) {
		const struct cli_step *s = &plan->steps[i];
		if (s->kind == CLI_EXEC) {
			luaL_loadbuffer(L, s->text, strlen(s->text), "=(command line)");
			lua_pop(L, 1);
		} else if (s->kind == CLI_LIBRARY) {
			lua_pushlstring(L, s->global, s->global_len);
			lua_pushstring(L, s->text);
			lua_pop(L, 2);
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	char *copy = malloc(size + 1);
	char *argv[MAX_ARGS + 1];
	if (!copy)
		return 0;
	int argc = split(data, size, copy, argv);
	struct cli_plan plan;
	if (cli_parse(argc, argv, &plan) == 0) {
		check_plan(&plan, argc, argv);
		if (!plan.bad) {
			lua_State *L = luaL_newstate();
			if (L) {
				check_arg_table(L, &plan, argc, argv);
				lua_pushcfunction(L, compile_steps);
				lua_pushlightuserdata(L, &plan);
				lua_pcall(L, 1, 0, 0);
				lua_close(L);
			}
		}
		cli_plan_free(&plan);
	}
	free(copy);
	return 0;
}
