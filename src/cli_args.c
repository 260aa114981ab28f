/* cli_args.c — the xpulua command line read into a plan (cli_args.h); main.c runs the plan. */
#include "cli_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#define IGNORE_MARK "-" /* `-l mod-v2` sets global `mod` */

enum { has_error = 1, has_i = 2, has_v = 4, has_e = 8, has_E = 16 };

/* Scans the options; *first becomes the script's index (0: none), or the bad option's. */
static int collectargs(char **argv, int *first)
{
	int args = 0;
	*first = 0;
	if (argv[0] == NULL)
		return 0;
	for (int i = 1; argv[i] != NULL; i++) {
		*first = i;
		if (argv[i][0] != '-')
			return args;
		switch (argv[i][1]) {
		case '-':                      /* `--` */
			if (argv[i][2] != '\0')
				return has_error;
			*first = argv[i + 1] ? i + 1 : 0;
			return args;
		case '\0':                     /* `-`: stdin is the script */
			return args;
		case 'E':
			if (argv[i][2] != '\0')
				return has_error;
			args |= has_E;
			break;
		case 'W':
			if (argv[i][2] != '\0')
				return has_error;
			break;
		case 'i':
			args |= has_i;         /* -i implies -v */
			/* fall through */
		case 'v':
			if (argv[i][2] != '\0')
				return has_error;
			args |= has_v;
			break;
		case 'e':
			args |= has_e;
			/* fall through */
		case 'l':                      /* both take an argument, joined or next */
			if (argv[i][2] == '\0') {
				i++;
				if (argv[i] == NULL || argv[i][0] == '-')
					return has_error;
			}
			break;
		default:
			return has_error;
		}
	}
	*first = 0;
	return args;
}

/* -l's argument: `g=mod` sets g, `mod-suffix` sets mod, `mod` sets mod. */
static void library_step(struct cli_step *s, const char *spec)
{
	const char *eq = strchr(spec, '=');
	s->kind = CLI_LIBRARY;
	s->text = eq ? eq + 1 : spec;
	s->global = spec;
	s->global_len = eq ? (size_t)(eq - spec) : strcspn(spec, IGNORE_MARK);
}

/* The -e, -l and -W options before argv[end], in order, into plan->steps. */
static int collect_steps(char **argv, int end, struct cli_plan *plan)
{
	plan->steps = calloc(end > 0 ? (size_t)end : 1, sizeof *plan->steps);
	if (!plan->steps)
		return -1;
	for (int i = 1; i < end; i++) {
		int option = argv[i][1];
		struct cli_step *s = &plan->steps[plan->nsteps];
		if (option == 'e' || option == 'l') {
			const char *extra = argv[i] + 2;
			if (*extra == '\0')
				extra = argv[++i];
			if (option == 'e')
				*s = (struct cli_step){ .kind = CLI_EXEC, .text = extra };
			else
				library_step(s, extra);
			plan->nsteps++;
		} else if (option == 'W') {
			*s = (struct cli_step){ .kind = CLI_WARNINGS };
			plan->nsteps++;
		}
	}
	return 0;
}

int cli_parse(int argc, char **argv, struct cli_plan *plan)
{
	*plan = (struct cli_plan){ .after = CLI_AFTER_NOTHING };
	int script;
	int args = collectargs(argv, &script);
	if (args == has_error) {
		plan->bad = script;
		return 0;
	}
	plan->version = (args & has_v) != 0;
	plan->ignore_env = (args & has_E) != 0;
	plan->script = script;
	plan->script_stdin = script > 0 && strcmp(argv[script], "-") == 0 && strcmp(argv[script - 1], "--") != 0;
	plan->options_end = script > 0 ? script : argc;
	if (args & has_i)
		plan->after = CLI_AFTER_REPL;
	else if (script < 1 && !(args & (has_e | has_v)))
		plan->after = CLI_AFTER_DEFAULT;
	if (collect_steps(argv, plan->options_end, plan)) {
		*plan = (struct cli_plan){ 0 };
		return -1;
	}
	return 0;
}

void cli_plan_free(struct cli_plan *plan)
{
	free(plan->steps);
	plan->steps = NULL;
	plan->nsteps = 0;
}

void cli_bad_option_text(const char *option, char *buf, size_t n)
{
	if (option[0] == '-' && (option[1] == 'e' || option[1] == 'l') && option[2] == '\0')
		snprintf(buf, n, "'%s' needs argument", option);
	else
		snprintf(buf, n, "unrecognized option '%s'", option);
}

void cli_set_arg_table(lua_State *L, int argc, char **argv, const struct cli_plan *plan)
{
	int script = plan->script > 0 ? plan->script : 0;
	int narg = argc - (script + 1); /* -1 with no argument at all: none positive */
	lua_createtable(L, narg > 0 ? narg : 0, script + 1);
	for (int i = 0; i < argc; i++) {
		lua_pushstring(L, argv[i]);
		lua_rawseti(L, -2, i - script);
	}
	lua_setglobal(L, "arg");
}
