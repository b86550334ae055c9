/* main.c - the mpx program: arguments, scripts, the interactive loop.
 *
 *   mpx                      interactive on a terminal; else commands from stdin
 *   mpx file.mpx ...         run scripts, then exit
 *   mpx -c 'cmd; cmd'        run commands, then exit
 *   mpx -i file.mpx          run the script, then stay interactive
 */
#include "mpx_repl.h"

#include <editline/readline.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_error(const char *where, int line, const mpx_error *err) {
    char msg[2048];
    mpx_error_format(err, msg, sizeof msg);
    /* Results go to stdout, errors to stderr: flush so a log that merges the
     * two shows the error after the output that preceded it. */
    fflush(stdout);
    if (where && line > 0) fprintf(stderr, "%s:%d: error: %s\n", where, line, msg);
    else fprintf(stderr, "error: %s\n", msg);
}

/* Strip a trailing comment (a # outside double quotes). */
static void strip_comment(char *s) {
    bool quoted = false;
    for (; *s; s++) {
        if (*s == '"') quoted = !quoted;
        else if (*s == '#' && !quoted) {
            *s = '\0';
            return;
        }
    }
}

/* Run a script: comments, blank lines, trailing-backslash continuations.
 * Stops at the first error with its file:line. */
static int run_script(mpx_session *s, const char *path, FILE *in) {
    char *line = NULL, *cmd = NULL;
    size_t cap = 0, cmd_len = 0;
    int lineno = 0, cmd_line = 0, rc = MPX_EXIT_OK;
    ssize_t got;
    while ((got = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
        bool cont = got > 0 && line[got - 1] == '\\';
        if (cont) line[--got] = '\0';
        if (!cmd_len) cmd_line = lineno;
        char *grown = realloc(cmd, cmd_len + (size_t)got + 2);
        if (!grown) {
            fprintf(stderr, "%s:%d: error: out of memory\n", path, lineno);
            rc = MPX_EXIT_ERROR;
            break;
        }
        cmd = grown;
        memcpy(cmd + cmd_len, line, (size_t)got);
        cmd_len += (size_t)got;
        cmd[cmd_len++] = ' ';
        cmd[cmd_len] = '\0';
        if (cont) continue;
        strip_comment(cmd);
        mpx_error err;
        if (mpx_session_exec(s, cmd, &err) != MPX_OK) {
            print_error(path, cmd_line, &err);
            rc = MPX_EXIT_ERROR;
            break;
        }
        cmd_len = 0;
        if (s->quit) break;
    }
    free(line);
    free(cmd);
    return rc;
}

static int run_file(mpx_session *s, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "error: cannot open script %s\n", path);
        return MPX_EXIT_ERROR;
    }
    int rc = run_script(s, path, f);
    fclose(f);
    return rc;
}

/* -c 'a; b': split on ; outside quotes. */
static int run_inline(mpx_session *s, const char *text) {
    char *copy = strdup(text);
    if (!copy) return MPX_EXIT_ERROR;
    int rc = MPX_EXIT_OK, k = 0;
    bool quoted = false;
    char *start = copy;
    for (char *p = copy;; p++) {
        if (*p == '"') quoted = !quoted;
        if ((*p == ';' && !quoted) || !*p) {
            bool end = !*p;
            *p = '\0';
            k++;
            mpx_error err;
            if (mpx_session_exec(s, start, &err) != MPX_OK) {
                print_error("-c", k, &err);
                rc = MPX_EXIT_ERROR;
                break;
            }
            if (end || s->quit) break;
            start = p + 1;
        }
    }
    free(copy);
    return rc;
}

static void interactive(mpx_session *s) {
    char *line;
    while (!s->quit && (line = readline("mpx> ")) != NULL) {
        if (*line) add_history(line);
        strip_comment(line);
        mpx_error err;
        if (mpx_session_exec(s, line, &err) != MPX_OK) print_error(NULL, 0, &err);
        free(line);
    }
}

static void usage(void) {
    fprintf(stderr,
            "usage: mpx [-i] [-c 'cmd; cmd'] [script.mpx ...]\n"
            "  (no arguments)  interactive session on a terminal; commands from stdin otherwise\n"
            "  script.mpx      run the script(s), then exit\n"
            "  -c 'cmd; cmd'   run the commands, then exit\n"
            "  -i              stay interactive after the scripts / commands\n"
            "exit status: 0 ok, 1 a command failed, 2 an assert failed, 64 usage\n");
}

int main(int argc, char **argv) {
    bool stay = false;
    const char *inline_cmds = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "ic:h")) != -1) {
        switch (opt) {
        case 'i': stay = true; break;
        case 'c': inline_cmds = optarg; break;
        case 'h': usage(); return MPX_EXIT_OK;
        default: usage(); return MPX_EXIT_USAGE;
        }
    }
    mpx_session s;
    mpx_session_init(&s, stdout);
    int rc = MPX_EXIT_OK;
    for (int i = optind; i < argc && rc == MPX_EXIT_OK && !s.quit; i++) rc = run_file(&s, argv[i]);
    if (rc == MPX_EXIT_OK && inline_cmds && !s.quit) rc = run_inline(&s, inline_cmds);
    bool ran = optind < argc || inline_cmds;
    if (!s.quit && (stay || !ran)) {
        if (isatty(STDIN_FILENO)) interactive(&s);
        else if (!ran || stay) rc = run_script(&s, "<stdin>", stdin);
    }
    mpx_session_free(&s);
    return rc;
}
