/* script.c - running commands from scripts, `source`, -c and the prompt.
 *
 * One path for every way a command arrives (script file, sourced file, -c,
 * stdin, the prompt): exec_one runs it, prints its error, and turns the
 * outcome into an exit status. Scripts add comments (#), blank lines and
 * trailing-backslash continuations; an error is `file:line: error: message`
 * with the line the command starts on, and stops the script unless
 * `set bail off`. The exit status remembers the worst outcome either way.
 *
 * `source` nests: each running script is a frame on a stack (innermost
 * first), so a too-deep nesting can name the whole chain, and an error inside
 * a sourced file is reported once, by the innermost runner, with that file's
 * line; the `source` command itself then fails "already reported" (an empty
 * message) so the outer levels stop (or go on) without printing it again. */
#include "repl_internal.h"

#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- errors and exit statuses -------------------------------------------- */

bool repl_error_reported(const mpx_error *err) { return err->status != MPX_OK && !err->msg[0]; }

void repl_print_error(const mpx_session *s, const char *where, int line, const mpx_error *err) {
    if (repl_error_reported(err)) return;
    char msg[2048];
    mpx_error_format(err, msg, sizeof msg);
    /* Results go to stdout, errors to stderr: flush so a log that merges the
     * two shows the error after the output that preceded it. */
    fflush(s->out);
    /* Colour only when results are for a person (s->color) and the error
     * itself goes to a terminal too. */
    bool red = s->color && isatty(STDERR_FILENO);
    /* On a terminal, start at the left of a clean line: a run's progress
     * line (or the ^C the terminal echoed) may still be there. */
    if (s->progress) fputs("\r\033[K", stderr);
    const char *word = red ? "\033[1;31merror:\033[0m" : "error:";
    if (where && line > 0) fprintf(stderr, "%s:%d: %s %s\n", where, line, word, msg);
    else if (where) fprintf(stderr, "%s: %s %s\n", where, word, msg);
    else fprintf(stderr, "%s %s\n", word, msg);
}

/* A command error (1) outranks an assert failure (2): with `set bail off` a
 * script that also broke may not have checked what its asserts meant to. */
int repl_exit_worst(int a, int b) {
    if (a == MPX_EXIT_ERROR || b == MPX_EXIT_ERROR) return MPX_EXIT_ERROR;
    if (a == MPX_EXIT_ASSERT || b == MPX_EXIT_ASSERT) return MPX_EXIT_ASSERT;
    return a ? a : b;
}

static int exit_of(mpx_status st) {
    if (st == MPX_OK) return MPX_EXIT_OK;
    return st == MPX_E_ASSERT ? MPX_EXIT_ASSERT : MPX_EXIT_ERROR;
}

static bool cancelled(const mpx_session *s) { return s->cancel && *s->cancel; }

/* Run one command (comment already stripped); where/line name it in the
 * error message (where NULL: the prompt). Returns its exit status. */
static int exec_one(mpx_session *s, const char *where, int line, const char *cmd) {
    const char *saved_file = s->cur_file;
    int saved_line = s->cur_line;
    s->cur_file = where;
    s->cur_line = line;
    mpx_error err;
    mpx_status st = mpx_session_exec(s, cmd, &err);
    s->cur_file = saved_file;
    s->cur_line = saved_line;
    if (st != MPX_OK) repl_print_error(s, where, line, &err);
    return exit_of(st);
}

int repl_run_line(mpx_session *s, const char *line) {
    char *copy = strdup(line);
    if (!copy) {
        fprintf(stderr, "error: out of memory\n");
        return MPX_EXIT_ERROR;
    }
    repl_strip_comment(copy);
    int rc = exec_one(s, NULL, 0, copy);
    free(copy);
    return rc;
}

/* ---- scripts ---------------------------------------------------------------- */

/* The scripts running now, innermost first (one session per process). */
typedef struct script_frame {
    const char *path;
    const struct script_frame *up;
} script_frame;
static const script_frame *running;

int repl_run_stream(mpx_session *s, const char *path, FILE *in) {
    script_frame frame = {path, running};
    running = &frame;
    s->depth++;
    char *line = NULL, *cmd = NULL;
    size_t cap = 0, cmd_len = 0;
    int lineno = 0, cmd_line = 0, rc = MPX_EXIT_OK;
    size_t got;
    int rl;
    while ((rl = repl_read_line(in, &line, &cap, &got)) != -1) {
        lineno++;
        if (rl == -2) {
            fprintf(stderr, "%s:%d: error: out of memory\n", path, lineno);
            rc = MPX_EXIT_ERROR;
            break;
        }
        /* A NUL byte: binary data, not a script (a script linked to
         * /dev/zero): nothing more is read, whatever bail says. */
        if (rl == 2) {
            fflush(s->out);
            fprintf(stderr, "%s:%d: error: a NUL byte: not a text script; stopped\n", path, lineno);
            rc = MPX_EXIT_ERROR;
            break;
        }
        /* A command longer than the limit (one line, or continued lines
         * together) is not run: a failed command, as bail says. */
        if (rl == 1 || cmd_len + got > REPL_LINE_MAX) {
            fflush(s->out);
            fprintf(stderr, "%s:%d: error: line longer than %zu bytes (1 MiB): not run\n", path,
                    cmd_len ? cmd_line : lineno, REPL_LINE_MAX);
            cmd_len = 0;
            rc = repl_exit_worst(rc, MPX_EXIT_ERROR);
            if (s->bail) break;
            if (rl == 1 && repl_skip_line(in) == 2) {
                fprintf(stderr, "%s:%d: error: a NUL byte: not a text script; stopped\n", path, lineno);
                break;
            }
            continue;
        }
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
        bool cont = got > 0 && line[got - 1] == '\\';
        if (cont) line[--got] = '\0';
        if (!cmd_len) cmd_line = lineno;
        char *grown = realloc(cmd, cmd_len + got + 2);
        if (!grown) {
            fprintf(stderr, "%s:%d: error: out of memory\n", path, lineno);
            rc = MPX_EXIT_ERROR;
            break;
        }
        cmd = grown;
        memcpy(cmd + cmd_len, line, got);
        cmd_len += got;
        cmd[cmd_len++] = ' ';
        cmd[cmd_len] = '\0';
        if (cont) continue;
        cmd_len = 0;
        repl_strip_comment(cmd);
        /* Ctrl-C between two commands (or in a command that does not look at
         * s->cancel) stops the whole script, whatever `bail` says. */
        if (cancelled(s)) {
            fflush(s->out);
            fprintf(stderr, "%s:%d: interrupted\n", path, cmd_line);
            rc = MPX_EXIT_ERROR;
            break;
        }
        int r = exec_one(s, path, cmd_line, cmd);
        rc = repl_exit_worst(rc, r);
        if (s->quit || cancelled(s) || (r != MPX_EXIT_OK && s->bail)) break;
    }
    /* A continuation on the last line: run what was gathered (rare; a file
     * without its final newline still ends its last command). */
    bool stopped = s->quit || cancelled(s) || (rc != MPX_EXIT_OK && s->bail);
    if (cmd_len && !stopped) {
        repl_strip_comment(cmd);
        rc = repl_exit_worst(rc, exec_one(s, path, cmd_line, cmd));
    }
    free(line);
    free(cmd);
    s->depth--;
    running = frame.up;
    return rc;
}

/* A script by name: a regular file, or a pipe (`mpx <(cmd)`); a FIFO without
 * a writer reads as empty rather than waiting. */
static FILE *open_script(const char *path, mpx_error *err) {
    int fd = mpx_file_open_read(path, true, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        mpx_error_set(err, MPX_E_IO, "cannot read %s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

int repl_run_file(mpx_session *s, const char *path) {
    mpx_error err;
    FILE *f = open_script(path, &err);
    if (!f) {
        fflush(s->out);
        char why[1600];
        fprintf(stderr, "error: script %s\n", mpx_error_format(&err, why, sizeof why));
        /* A script named on the command line that cannot be run (missing, a
         * folder, a device) is a bad command line, not a script that failed:
         * a CI gate given the wrong path must not look like a failed gate. */
        return MPX_EXIT_USAGE;
    }
    mpx_error perr;
    if (repl_protect(s, path, "a script this session ran", &perr)) {
        fclose(f);
        fprintf(stderr, "error: %s\n", perr.msg);
        return MPX_EXIT_ERROR;
    }
    /* protected for the rest of the session, as every file it read: a
     * `save` over a script it ran would lose the script */
    int rc = repl_run_stream(s, path, f);
    fclose(f);
    return rc;
}

/* -c 'a; b': split on ; outside quotes; errors say "-c:<k>" for the k-th. */
int repl_run_inline(mpx_session *s, const char *text) {
    char *copy = strdup(text);
    if (!copy) {
        fprintf(stderr, "error: out of memory\n");
        return MPX_EXIT_ERROR;
    }
    int rc = MPX_EXIT_OK, k = 0;
    for (char *start = copy;;) {
        char *semi = repl_find_unquoted(start, ";");
        if (semi) *semi = '\0';
        k++;
        repl_strip_comment(start);
        int r = exec_one(s, "-c", k, start);
        rc = repl_exit_worst(rc, r);
        if (!semi || s->quit || cancelled(s) || (r != MPX_EXIT_OK && s->bail)) break;
        start = semi + 1;
    }
    free(copy);
    return rc;
}

/* ---- paths beside the script ---------------------------------------------------- */

static bool path_found(const char *path, bool pattern) {
    struct stat sb;
    if (stat(path, &sb) == 0) return true;
    if (!pattern || !strpbrk(path, "*?[")) return false;
    glob_t gl;
    bool any = glob(path, 0, NULL, &gl) == 0 && gl.gl_pathc > 0;
    globfree(&gl);
    return any;
}

const char *repl_beside_script(const mpx_session *s, const char *path, bool pattern, char *buf, size_t n) {
    const char *script = s->cur_file;
    if (!path || !*path || path[0] == '/' || !script || strcmp(script, "-c") == 0 || strcmp(script, "<stdin>") == 0)
        return path;
    const char *slash = strrchr(script, '/');
    if (!slash || path_found(path, pattern)) return path; /* a script in the current folder: the same place */
    int k = snprintf(buf, n, "%.*s/%s", (int)(slash - script), script, path);
    return k > 0 && (size_t)k < n && path_found(buf, pattern) ? buf : path;
}

/* ---- source ------------------------------------------------------------------ */

mpx_status repl_source(mpx_session *s, const char *path, mpx_error *err) {
    if (s->depth >= REPL_SOURCE_DEPTH) {
        /* Name the chain outermost first: "a.mpx -> b.mpx -> ... -> path". */
        const char *names[REPL_SOURCE_DEPTH + 1];
        int n = 0;
        for (const script_frame *f = running; f && n < REPL_SOURCE_DEPTH; f = f->up) names[n++] = f->path;
        char chain[900];
        size_t o = 0;
        chain[0] = '\0';
        for (int i = n - 1; i >= 0 && o < sizeof chain; i--)
            o += (size_t)snprintf(chain + o, sizeof chain - o, "%s -> ", names[i]);
        if (o < sizeof chain) snprintf(chain + o, sizeof chain - o, "%s", path);
        return mpx_error_set(err, MPX_E_LIMIT, "source: scripts nested more than %d deep: %s", REPL_SOURCE_DEPTH,
                             chain);
    }
    char beside[4096];
    path = repl_beside_script(s, path, false, beside, sizeof beside);
    mpx_error oerr;
    FILE *f = open_script(path, &oerr);
    char why[1600];
    if (!f) return mpx_error_set(err, oerr.status, "source: %s", mpx_error_format(&oerr, why, sizeof why));
    mpx_status pst = repl_protect(s, path, "a script this session ran", err);
    if (pst) {
        fclose(f);
        return pst;
    }
    int rc = repl_run_stream(s, path, f);
    fclose(f);
    if (rc == MPX_EXIT_OK) return MPX_OK;
    /* The inner runner printed the error(s) with the inner file's lines. */
    mpx_error_clear(err);
    err->status = rc == MPX_EXIT_ASSERT ? MPX_E_ASSERT : MPX_E_ARG;
    return err->status;
}
