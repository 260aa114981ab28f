/* main.c — the `xpulua` command: Lua 5.4's stand-alone interpreter (options, `arg`, LUA_INIT,
 * the REPL) on a state that xpu_lua_install makes an xpulua state. Uses Lua and readline. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#ifdef XPULUA_READLINE
#include <readline/readline.h>
#include <readline/history.h>
#endif

#include "cli_args.h"
#include "core/xpu.h"
#include "lua/xpu_lua.h"

#define PROGNAME "xpulua"
#define VERSION_LINE PROGNAME " " XPU_VERSION " on " LUA_COPYRIGHT
#define INIT_VAR "LUA_INIT"
#define INIT_VAR_VERSION INIT_VAR LUA_VERSUFFIX
#define HISTORY_FILE ".xpulua_history"
#define HISTORY_MAX 1000

/* ---- Ctrl-C ----------------------------------------------------------------------------- */

/* The state a running chunk belongs to, for laction; the only way a signal reaches Lua. */
static lua_State *globalL;
/* Set when Ctrl-C arrives while the REPL waits for a line. */
static volatile sig_atomic_t prompt_interrupted;

static void setsignal(int sig, void (*handler)(int))
{
	struct sigaction sa;
	sa.sa_handler = handler;
	sa.sa_flags = 0;           /* no SA_RESTART: a read at the prompt must see EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

/* Runs inside Lua at the next hook event, where raising an error is safe. */
static void lstop(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	lua_sethook(L, NULL, 0, 0);
	luaL_error(L, "interrupted!");
}

/* A signal handler may not touch the state, only ask it to stop at its next step. */
static void laction(int sig)
{
	int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
	setsignal(sig, SIG_DFL);   /* a second Ctrl-C ends the process */
	lua_sethook(globalL, lstop, flag, 1);
}

static void prompt_action(int sig)
{
	(void)sig;
	prompt_interrupted = 1;
}

/* ---- messages ---------------------------------------------------------------------------- */

/* Messages start with the name the command was run by (argv[0]), as lua's do. */
static const char *progname = PROGNAME;

static void l_message(const char *pname, const char *msg)
{
	if (pname)
		fprintf(stderr, "%s: ", pname);
	fprintf(stderr, "%s\n", msg);
	fflush(stderr);
}

/* Prints the error on top of the stack, if any; pname is NULL in the REPL. */
static int report_as(lua_State *L, int status, const char *pname)
{
	if (status != LUA_OK) {
		l_message(pname, lua_tostring(L, -1));
		lua_pop(L, 1);
	}
	return status;
}

static int report(lua_State *L, int status)
{
	return report_as(L, status, progname);
}

static void print_usage(const char *badoption)
{
	char first[256];
	cli_bad_option_text(badoption, first, sizeof first);
	fprintf(stderr, "%s: %s\n", progname, first);
	fprintf(stderr, "usage: %s [options] [script [args]]\n"
		"Available options are:\n"
		"  -e stat   execute string 'stat'\n"
		"  -i        enter interactive mode after executing 'script'\n"
		"  -l mod    require library 'mod' into global 'mod'\n"
		"  -l g=mod  require library 'mod' into global 'g'\n"
		"  -v        show version information\n"
		"  -E        ignore environment variables\n"
		"  -W        turn warnings on\n"
		"  --        stop handling options\n"
		"  -         stop handling options and execute stdin\n", progname);
	fflush(stderr);
}

static void print_version(void)
{
	fputs(VERSION_LINE "\n", stdout);
	fflush(stdout);
}

/* ---- running chunks ---------------------------------------------------------------------- */

/* Error objects that are not strings are named by __tostring or by their type. */
static int msghandler(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);
	if (xpu_lua_is_input_error(L, 1))
		return 1; /* a bad declaration: its message says where; no traceback */
	if (msg == NULL) {
		if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
			return 1;
		msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	}
	luaL_traceback(L, L, msg, 1);
	return 1;
}

/* Calls the function under narg arguments with a traceback; Ctrl-C interrupts it. */
static int docall(lua_State *L, int narg, int nres)
{
	int base = lua_gettop(L) - narg;
	lua_pushcfunction(L, msghandler);
	lua_insert(L, base);
	globalL = L;
	setsignal(SIGINT, laction);
	int status = lua_pcall(L, narg, nres, base);
	setsignal(SIGINT, SIG_DFL);
	lua_remove(L, base);
	return status;
}

static int dochunk(lua_State *L, int status)
{
	if (status == LUA_OK)
		status = docall(L, 0, 0);
	return report(L, status);
}

static int dofile(lua_State *L, const char *name)
{
	return dochunk(L, luaL_loadfile(L, name));
}

static int dostring(lua_State *L, const char *s, const char *name)
{
	return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* `-l mod`, `-l g=mod` and `-l mod-suffix` (cli_args.c read which global is set): the
 * global is set to require(mod). */
static int dolibrary(lua_State *L, const struct cli_step *step)
{
	lua_getglobal(L, "require");
	lua_pushstring(L, step->text);
	int status = docall(L, 1, 1);
	if (status == LUA_OK) {
		lua_pushglobaltable(L);
		lua_pushlstring(L, step->global, step->global_len);
		lua_rotate(L, -3, -1);         /* globals, name, module */
		lua_settable(L, -3);
		lua_pop(L, 1);
	}
	return report(L, status);
}

/* Pushes arg[1..n], the script's `...`. */
static int pushargs(lua_State *L)
{
	if (lua_getglobal(L, "arg") != LUA_TTABLE)
		luaL_error(L, "'arg' is not a table");
	int n = (int)luaL_len(L, -1);
	luaL_checkstack(L, n + 3, "too many arguments to script");
	int i;
	for (i = 1; i <= n; i++)
		lua_rawgeti(L, -i, i);
	lua_remove(L, -i);
	return n;
}

static int handle_script(lua_State *L, const char *fname)
{
	/* fname NULL: stdin; luaL_loadfile skips a first line starting with '#' */
	int status = luaL_loadfile(L, fname);
	if (status == LUA_OK) {
		int n = pushargs(L);
		status = docall(L, n, LUA_MULTRET);
	}
	return report(L, status);
}

/* An init variable's value is code, or `@file`. Unset counts as success. */
static int run_init(lua_State *L, const char *name)
{
	const char *init = getenv(name + 1);
	if (init == NULL)
		return LUA_OK;
	if (init[0] == '@')
		return dofile(L, init + 1);
	return dostring(L, init, name);
}

/* LUA_INIT_5_4, or else LUA_INIT, as lua does; then XPULUA_INIT for this command alone. */
static int handle_inits(lua_State *L)
{
	const char *name = getenv(INIT_VAR_VERSION) ? "=" INIT_VAR_VERSION : "=" INIT_VAR;
	int status = run_init(L, name);
	if (status == LUA_OK)
		status = run_init(L, "=XPULUA_INIT");
	return status;
}

/* ---- options ----------------------------------------------------------------------------- */

/* Runs the -e, -l and -W steps in order (cli_args.c read them); 0 when one failed. */
static int runsteps(lua_State *L, const struct cli_plan *plan)
{
	for (int i = 0; i < plan->nsteps; i++) {
		const struct cli_step *step = &plan->steps[i];
		int status = LUA_OK;
		if (step->kind == CLI_EXEC)
			status = dostring(L, step->text, "=(command line)");
		else if (step->kind == CLI_LIBRARY)
			status = dolibrary(L, step);
		else
			lua_warning(L, "@on", 0);
		if (status != LUA_OK)
			return 0;
	}
	return 1;
}

/* ---- reading lines ----------------------------------------------------------------------- */

/* Where the REPL reads from: readline on a terminal when built with it, plain lines otherwise. */
struct repl {
	bool editing;
	char history[PATH_MAX];    /* empty: no history file */
};

#ifdef XPULUA_READLINE
/* readline's getc, ending the line when Ctrl-C arrives at the prompt. */
static int getc_or_interrupt(FILE *in)
{
	for (;;) {
		rl_check_signals();    /* readline resets the terminal and passes SIGINT on */
		if (prompt_interrupted) {
			rl_replace_line("", 0);
			return '\n';
		}
		unsigned char c;
		ssize_t n = read(fileno(in), &c, 1);
		if (n == 1)
			return c;
		if (n == 0 || errno != EINTR)
			return EOF;
	}
}

/* Line editing on, and the history file read when $HOME has one. */
static void editing_open(struct repl *r)
{
	const char *home = getenv("HOME");
	rl_readline_name = PROGNAME;
	rl_getc_function = getc_or_interrupt;
	r->history[0] = '\0';
	if (home == NULL || *home == '\0')
		return;
	int n = snprintf(r->history, sizeof r->history, "%s/%s", home, HISTORY_FILE);
	if (n < 0 || (size_t)n >= sizeof r->history) {
		r->history[0] = '\0';
		return;
	}
	stifle_history(HISTORY_MAX);
	read_history(r->history);
}

/* Each entry goes to the file at once, so os.exit() and a second Ctrl-C lose nothing. */
static void history_add(struct repl *r, const char *line)
{
	if (!r->editing || line[0] == '\0')
		return;
	add_history(line);
	if (r->history[0] && append_history(1, r->history) != 0)
		write_history(r->history);     /* the file did not exist yet */
}

static void editing_close(struct repl *r)
{
	if (r->history[0])
		history_truncate_file(r->history, HISTORY_MAX);
}

static char *read_edited(const char *prompt)
{
	return readline(prompt);
}
#else
static void editing_open(struct repl *r)
{
	r->history[0] = '\0';
}

static void history_add(struct repl *r, const char *line)
{
	(void)r;
	(void)line;
}

static void editing_close(struct repl *r)
{
	(void)r;
}

static char *read_edited(const char *prompt)
{
	(void)prompt;
	return NULL;
}
#endif

/* Off a terminal the line is echoed after its prompt, as lua's readline does, so that the
 * output of a piped session reads as a transcript. */
static char *read_plain(const char *prompt)
{
	char *line = NULL;
	size_t cap = 0;
	fputs(prompt, stdout);
	fflush(stdout);
	ssize_t len = getline(&line, &cap, stdin);
	if (len >= 0) {
		if (!isatty(STDIN_FILENO)) {
			fputs(line, stdout);
			if (len == 0 || line[len - 1] != '\n')
				fputc('\n', stdout);
			fflush(stdout);
		}
		return line;
	}
	free(line);
	clearerr(stdin);           /* an interrupted read is not the end of input */
	return NULL;
}

/* Reads a line into *line (malloc'd): 1 read, 0 end of input, -1 Ctrl-C at the prompt. */
static int read_line(struct repl *r, const char *prompt, char **line)
{
	prompt_interrupted = 0;
	setsignal(SIGINT, prompt_action);
	*line = r->editing ? read_edited(prompt) : read_plain(prompt);
	setsignal(SIGINT, SIG_DFL);
	if (prompt_interrupted) {
		free(*line);
		if (!r->editing)
			fputc('\n', stdout);
		return -1;
	}
	return *line != NULL;
}

/* ---- the REPL ---------------------------------------------------------------------------- */

#define REPL_INTERRUPTED (-2)

/* _PROMPT / _PROMPT2 through tostring, or the defaults; left on the stack. */
static const char *get_prompt(lua_State *L, int firstline)
{
	if (lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2") == LUA_TNIL) {
		lua_pop(L, 1);
		lua_pushstring(L, firstline ? "> " : ">> ");
		return lua_tostring(L, -1);
	}
	const char *p = luaL_tolstring(L, -1, NULL);
	lua_remove(L, -2);
	return p;
}

/* Pushes the next line without its newline; `=expr` on a first line means `return expr`. */
static int pushline(lua_State *L, struct repl *r, int firstline)
{
	char *line;
	int got = read_line(r, get_prompt(L, firstline), &line);
	lua_pop(L, 1);
	if (got <= 0)
		return got;
	size_t len = strlen(line);
	if (len > 0 && line[len - 1] == '\n')
		line[--len] = '\0';
	lua_pushlstring(L, line, len);
	free(line);
	if (firstline && lua_tostring(L, -1)[0] == '=') {
		lua_pushfstring(L, "return %s", lua_tostring(L, -1) + 1);
		lua_remove(L, -2);
	}
	return 1;
}

/* A syntax error at <eof> means the chunk may go on in the next line. */
static int incomplete(lua_State *L, int status)
{
	static const char mark[] = "<eof>";
	size_t marklen = sizeof mark - 1, lmsg;
	if (status != LUA_ERRSYNTAX)
		return 0;
	const char *msg = lua_tolstring(L, -1, &lmsg);
	return lmsg >= marklen && strcmp(msg + lmsg - marklen, mark) == 0;
}

/* Tries the line at index 1 as `return line;` so that an expression prints its values. */
static int addreturn(lua_State *L, struct repl *r)
{
	const char *line = lua_tostring(L, 1);
	const char *retline = lua_pushfstring(L, "return %s;", line);
	int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
	if (status == LUA_OK) {
		lua_remove(L, -2);
		history_add(r, line);
	} else {
		lua_pop(L, 2);
	}
	return status;
}

/* Compiles the chunk at index 1 as a statement, reading continuation lines while incomplete. */
static int multiline(lua_State *L, struct repl *r)
{
	for (;;) {
		size_t len;
		const char *chunk = lua_tolstring(L, 1, &len);
		int status = luaL_loadbuffer(L, chunk, len, "=stdin");
		int more = incomplete(L, status) ? pushline(L, r, 0) : 0;
		if (more < 0)
			return REPL_INTERRUPTED;
		if (more == 0) {
			history_add(r, chunk);
			return status;
		}
		lua_remove(L, -2);             /* the incomplete chunk's message */
		lua_pushliteral(L, "\n");
		lua_insert(L, -2);
		lua_concat(L, 3);
	}
}

/* Leaves one compiled chunk (or its error) on an emptied stack; -1 at the end of input.
 * Ctrl-C while reading drops what was typed and starts over. */
static int loadline(lua_State *L, struct repl *r)
{
	for (;;) {
		lua_settop(L, 0);
		int got = pushline(L, r, 1);
		if (got == 0)
			return -1;
		if (got < 0)
			continue;
		int status = addreturn(L, r);
		if (status != LUA_OK)
			status = multiline(L, r);
		if (status == REPL_INTERRUPTED)
			continue;
		lua_remove(L, 1);
		return status;
	}
}

static int show_value(lua_State *L)
{
	xpu_lua_show(L, 1);
	return 1;
}

/* Prints what the chunk returned through the global print, as lua does, except that a plain
 * table is laid out first (xpu_lua_show): a list of records as columns, a map a key a line. */
static void l_print(lua_State *L)
{
	int n = lua_gettop(L);
	if (n == 0)
		return;
	luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
	for (int i = 1; i <= n; i++) {
		if (lua_type(L, i) != LUA_TTABLE)
			continue;
		lua_pushcfunction(L, show_value);
		lua_pushvalue(L, i);
		if (lua_pcall(L, 1, 1, 0) == LUA_OK)
			lua_replace(L, i);
		else
			lua_pop(L, 1);         /* a __tostring that fails: print says why */
	}
	lua_getglobal(L, "print");
	lua_insert(L, 1);
	if (lua_pcall(L, n, 0, 0) != LUA_OK)
		l_message(progname, lua_pushfstring(L, "error calling 'print' (%s)",
						      lua_tostring(L, -1)));
}

/* The REPL is where devices and routes are poked at: `xpu` and `help` are globals there
 * (unless already set), never in a script, so scripts see the globals lua gives them. */
static void repl_globals(lua_State *L)
{
	if (lua_getglobal(L, "xpu") == LUA_TNIL) {
		lua_getglobal(L, "require");
		lua_pushliteral(L, "xpu");
		if (report(L, docall(L, 1, 1)) != LUA_OK) {
			lua_pop(L, 1);
			return;
		}
		lua_pushvalue(L, -1);
		lua_setglobal(L, "xpu");
		lua_replace(L, -2);            /* the module where the nil global was */
	}
	if (lua_getglobal(L, "help") == LUA_TNIL && lua_type(L, -2) == LUA_TTABLE) {
		lua_getfield(L, -2, "help");
		lua_setglobal(L, "help");
	}
	lua_pop(L, 2);
}

static void doREPL(lua_State *L)
{
	struct repl r = { .editing = false };
	repl_globals(L);
#ifdef XPULUA_READLINE
	r.editing = isatty(STDIN_FILENO);
#endif
	if (r.editing)
		editing_open(&r);
	int status;
	while ((status = loadline(L, &r)) != -1) {
		if (status == LUA_OK)
			status = docall(L, 0, LUA_MULTRET);
		if (status == LUA_OK)
			l_print(L);
		else
			report_as(L, status, NULL);
	}
	if (r.editing)
		editing_close(&r);
	lua_settop(L, 0);
	fputc('\n', stdout);
	fflush(stdout);
}

/* ---- main -------------------------------------------------------------------------------- */

/* Everything but making the state runs here, protected: libraries, options, script, REPL. */
static int pmain(lua_State *L)
{
	int argc = (int)lua_tointeger(L, 1);
	char **argv = lua_touserdata(L, 2);
	struct cli_plan *plan = lua_touserdata(L, 3);
	luaL_checkversion(L);
	if (plan->bad) {
		print_usage(argv[plan->bad]);
		return 0;
	}
	if (plan->version)
		print_version();
	if (plan->ignore_env) {        /* before the libraries, so package ignores LUA_PATH* */
		lua_pushboolean(L, 1);
		lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
	}
	luaL_openlibs(L);
	xpu_lua_install(L);
	cli_set_arg_table(L, argc, argv, plan);
	lua_gc(L, LUA_GCRESTART);
	lua_gc(L, LUA_GCGEN, 0, 0);
	if (!plan->ignore_env && handle_inits(L) != LUA_OK)
		return 0;
	if (!runsteps(L, plan))
		return 0;
	if (plan->script > 0 && handle_script(L, plan->script_stdin ? NULL : argv[plan->script]) != LUA_OK)
		return 0;
	if (plan->after == CLI_AFTER_REPL) {
		doREPL(L);
	} else if (plan->after == CLI_AFTER_DEFAULT) {
		if (isatty(STDIN_FILENO)) {
			print_version();
			doREPL(L);
		} else if (dofile(L, NULL) != LUA_OK) {
			return 0;      /* lua exits 0 here; a failed pipeline should not */
		}
	}
	lua_pushboolean(L, 1);
	return 1;
}

int main(int argc, char **argv)
{
	if (argv[0] && argv[0][0])
		progname = argv[0];
	lua_State *L = luaL_newstate();
	if (L == NULL) {
		l_message(progname, "cannot create state: not enough memory");
		return EXIT_FAILURE;
	}
	struct cli_plan plan;
	if (cli_parse(argc, argv, &plan)) {
		l_message(progname, "cannot read the command line: not enough memory");
		lua_close(L);
		return EXIT_FAILURE;
	}
	lua_gc(L, LUA_GCSTOP);         /* no collection while the libraries are built */
	lua_pushcfunction(L, pmain);
	lua_pushinteger(L, argc);
	lua_pushlightuserdata(L, argv);
	lua_pushlightuserdata(L, &plan);
	int status = lua_pcall(L, 3, 1, 0);
	int result = lua_toboolean(L, -1);
	report(L, status);
	lua_close(L);
	cli_plan_free(&plan);
	return result && status == LUA_OK ? EXIT_SUCCESS : EXIT_FAILURE;
}
