/* cli_args.h — the xpulua command line read into a plan, as lua.c reads its options: the
 * -e chunks and -l libraries in their order, the script and its arguments, and what follows
 * (a REPL, stdin, nothing). Reading runs nothing and never exits, so main.c and the fuzz
 * target spec/fuzz/fuzz_cli.c share it. Uses libc, and Lua for the `arg` table alone. */
#ifndef XPULUA_CLI_ARGS_H
#define XPULUA_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include <lua.h>

enum cli_step_kind {
	CLI_EXEC,     /* -e stat: run text as a chunk */
	CLI_LIBRARY,  /* -l mod, -l g=mod: set global [global, global + global_len) to require(text) */
	CLI_WARNINGS, /* -W: warnings on */
};

struct cli_step {
	enum cli_step_kind kind;
	const char *text;   /* the chunk, or the module's name (inside argv) */
	const char *global; /* CLI_LIBRARY: the global's name, not terminated (inside argv) */
	size_t global_len;
};

/* What runs after the options and the script. */
enum cli_after {
	CLI_AFTER_NOTHING, /* a script or -e / -v ran, and no -i */
	CLI_AFTER_REPL,    /* -i */
	CLI_AFTER_DEFAULT, /* neither: a REPL on a terminal, else stdin as the chunk */
};

struct cli_plan {
	int bad;            /* > 0: argv[bad] is a bad option (unknown, or missing its argument) */
	bool version;       /* -v or -i: print the version line first */
	bool ignore_env;    /* -E: no LUA_INIT, no LUA_PATH* */
	int script;         /* argv[script] is the script (0: none) */
	bool script_stdin;  /* the script is "-" (not after "--"): stdin */
	int options_end;    /* the first argument that is not an option (argc where none) */
	enum cli_after after;
	int nsteps;
	struct cli_step *steps; /* nsteps of them, in command-line order (owned) */
};

/* Reads argv[0..argc) (argv[argc] NULL) into *plan. 0; -1 when out of memory for its steps
 * (plan left empty). A bad option is not a failure: plan->bad says which. */
int cli_parse(int argc, char **argv, struct cli_plan *plan);
void cli_plan_free(struct cli_plan *plan);

/* The first line of the usage message for a bad option: "'-e' needs argument" or
 * "unrecognized option '-x'". */
void cli_bad_option_text(const char *option, char *buf, size_t n);

/* Sets the global `arg`: arg[0] the script (argv[plan->script]), negative indices the
 * interpreter and the options, positive ones the script's arguments (with no script, every
 * argument after the interpreter is negative or zero, as in lua). */
void cli_set_arg_table(lua_State *L, int argc, char **argv, const struct cli_plan *plan);

#endif
