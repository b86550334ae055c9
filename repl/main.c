/* main.c - the mpx program: arguments, Ctrl-C, the interactive prompt with
 * its history and tab completion. Running scripts is script.c's.
 *
 *   mpx                      interactive on a terminal; else commands from stdin
 *   mpx file.mpx ...         run scripts, then exit
 *   mpx -c 'cmd; cmd'        run commands, then exit
 *   mpx -i file.mpx          run the script, then stay interactive
 */
#include "repl_internal.h"
#include "mpx_version.h"

#include <dirent.h>
#include <editline/readline.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wchar.h>

/* ---- Ctrl-C ------------------------------------------------------------------ */

/* Set by SIGINT; the session's s->cancel points here, and long commands
 * (runs) look at it and stop with MPX_E_CANCELLED. Cleared before each
 * command typed at the prompt (not between a script's commands: there it
 * stops the script). */
static volatile int interrupted;
/* A command is running (not the prompt). */
static volatile int in_command;
/* The terminal changed size while the prompt was up. */
static volatile int resized;

static void on_sigint(int sig) {
    (void)sig;
    interrupted++;
    /* A command that never looks at the flag would leave the user stuck:
     * the third Ctrl-C during one command ends mpx the default way. */
    if (in_command && interrupted >= 3) {
        static const char msg[] = "\nmpx: interrupted three times, leaving\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
        mpx_file_remove_pending();
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
    }
}

/* A signal that ends mpx (SIGTERM, SIGHUP; SIGINT when no person is at a
 * prompt) ends it the default way, but first removes the temporary file of
 * any write under way: an interrupted `svg` or `export` leaves the old
 * target and nothing else. */
static void on_fatal(int sig) {
    mpx_file_remove_pending();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* A script run (no person at a prompt): the first SIGINT, SIGTERM or SIGHUP
 * stops the command under way as Ctrl-C at a prompt does (a search reports
 * its best plan and writes its --json, an --eval folder is removed), the
 * script stops there, and mpx then ends by that signal (exit status 128 +
 * sig, as a shell expects). A second signal ends mpx at once (on_fatal):
 * the way out of a command that never looks at the flag. */
static volatile sig_atomic_t stop_sig;

static void on_stop(int sig) {
    if (stop_sig) on_fatal(sig);
    stop_sig = sig;
    interrupted++;
}

static void catch_with(int sig, void (*handler)(int)) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = handler;
    /* A signal ignored by whoever started mpx (nohup) stays ignored. */
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN) return;
    sigaction(sig, &sa, NULL);
}

static void catch_stop(int sig) { catch_with(sig, on_stop); }
static void catch_fatal(int sig) { catch_with(sig, on_fatal); }

static void on_sigwinch(int sig) {
    (void)sig;
    resized = 1;
}

/* No SA_RESTART: a signal interrupts the prompt's wait for a key (see
 * prompt_getc). */
static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_sigwinch;
    sigaction(SIGWINCH, &sa, NULL);
}

/* One byte of the terminal, or -1: end of input, or Ctrl-C. SIGINT is
 * blocked except inside pselect, so a Ctrl-C that comes while libedit is
 * busy (completing, redrawing) is seen before the next wait instead of
 * being lost until the next key. A byte read just as Ctrl-C came was typed
 * after it (the terminal drops what came before): it is kept for the next
 * line. */
static int prompt_byte(int fd) {
    static int kept = -1;
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGWINCH);
    for (;;) {
        sigprocmask(SIG_BLOCK, &block, &old);
        if (resized) {
            resized = 0;
            rl_resize_terminal();
        }
        if (interrupted) {
            sigprocmask(SIG_SETMASK, &old, NULL);
            return -1;
        }
        if (kept >= 0) {
            int c = kept;
            kept = -1;
            sigprocmask(SIG_SETMASK, &old, NULL);
            return c;
        }
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(fd, &rd);
        /* Waits with the signals unblocked; they are blocked again after. */
        int n = pselect(fd + 1, &rd, NULL, NULL, NULL, &old);
        int e = errno;
        unsigned char c;
        ssize_t got = n > 0 ? read(fd, &c, 1) : -1;
        if (n > 0) e = errno;
        sigprocmask(SIG_SETMASK, &old, NULL); /* a pending Ctrl-C lands here */
        if (got == 1) {
            if (!interrupted) return c;
            kept = c;
            return -1;
        }
        if (got < 0 && (e == EINTR || e == EAGAIN)) continue;
        return -1;
    }
}

/* libedit's key reader (rl_getc_function): a character, decoded from the
 * locale's multibyte encoding as libedit's own reader does; -1 makes
 * readline return NULL. */
static int prompt_getc(FILE *in) {
    mbstate_t st;
    memset(&st, 0, sizeof st);
    for (;;) {
        int b = prompt_byte(fileno(in));
        if (b < 0) return -1;
        char c = (char)b;
        wchar_t wc;
        size_t r = mbrtowc(&wc, &c, 1, &st);
        if (r == (size_t)-2) continue; /* more bytes to come */
        if (r == (size_t)-1) return b; /* not of this locale: the byte */
        return (int)wc;
    }
}

/* ---- history ------------------------------------------------------------------- */

enum { HISTORY_MAX = 1000 };

static char hist_path[4096];
static bool hist_warned; /* one warning per session is enough */

static void hist_warn(const char *what, int e) {
    if (hist_warned) return;
    hist_warned = true;
    fprintf(stderr, "mpx: warning: cannot %s history %s: %s (history is not kept)\n", what, hist_path,
            strerror(e));
}

/* mkdir -p for the folder part of path. */
static int make_parents(const char *path) {
    char buf[sizeof hist_path];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) return errno;
        *p = '/';
    }
    return 0;
}

/* $MPX_HISTORY, else $XDG_DATA_HOME/mpx/history, else
 * ~/.local/share/mpx/history (the XDG default). Reads it if it exists. */
static void history_open(void) {
    using_history();
    stifle_history(HISTORY_MAX);
    const char *env = getenv("MPX_HISTORY"), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (env && *env) snprintf(hist_path, sizeof hist_path, "%s", env);
    else if (xdg && xdg[0] == '/') snprintf(hist_path, sizeof hist_path, "%s/mpx/history", xdg);
    else if (home && *home) snprintf(hist_path, sizeof hist_path, "%s/.local/share/mpx/history", home);
    else {
        fprintf(stderr, "mpx: warning: HOME is not set: history is not kept (set MPX_HISTORY)\n");
        hist_warned = true;
        return;
    }
    int e = make_parents(hist_path);
    if (e) {
        hist_warn("create the folder of", e);
        return;
    }
    /* libedit's read_history returns a count on success, so check the file
     * first: a missing one is a first session, anything else a warning. */
    struct stat sb;
    if (stat(hist_path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        hist_warned = true;
        fprintf(stderr, "mpx: warning: history %s is not a regular file (history is not kept)\n", hist_path);
        return;
    }
    FILE *f = fopen(hist_path, "r");
    if (!f) {
        if (errno != ENOENT) hist_warn("read", errno);
        return;
    }
    /* A file that is not libedit's history (MPX_HISTORY naming the model, a
     * typo) is never written over: history is then not kept. */
    char head[16] = "";
    const bool empty = !fgets(head, sizeof head, f);
    fclose(f);
    if (!empty && strcmp(head, "_HiStOrY_V2_\n") != 0) {
        hist_warned = true;
        fprintf(stderr, "mpx: warning: %s is not a history file (libedit's \"_HiStOrY_V2_\" first line): it is left "
                "as it is and history is not kept\n", hist_path);
        return;
    }
    read_history(hist_path);
}

/* Written after every line, so a crash or a kill keeps what was typed:
 * whole or not at all, and never over a file the session read. */
static void history_add(const mpx_session *s, const char *line) {
    /* Skip a repeat of the previous line (Up-Enter loops). */
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last && last->line && strcmp(last->line, line) == 0) return;
    add_history(line);
    if (!hist_path[0] || hist_warned) return;
    /* the one safe write path (graph/file_write.c: the guard, a temporary
     * file a signal removes, the rename); libedit writes by name, so it is
     * given the temporary file's descriptor as a path */
    mpx_error err;
    mpx_out_file *o = NULL;
    FILE *fs = NULL;
    mpx_status st = mpx_file_open_write(hist_path, s->guard, &o, &err);
    if (!st && !(fs = mpx_out_file_stream(o))) st = mpx_error_set(&err, MPX_E_NOMEM, "out of memory");
    if (!st) {
        char fdpath[64];
        snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fileno(fs));
        if (fchmod(fileno(fs), 0600) != 0 || write_history(fdpath) != 0) /* what was typed is private */
            st = mpx_error_set(&err, MPX_E_IO, "cannot write %s: %s", hist_path, strerror(errno ? errno : EIO));
    }
    if (!st) st = mpx_out_file_commit(o, s->guard, &err);
    else mpx_out_file_abort(o);
    if (st) {
        hist_warned = true;
        fprintf(stderr, "mpx: warning: history %s: %s (history is not kept)\n", hist_path, err.msg);
    }
}

/* ---- tab completion (repl/complete.c gathers, libedit shows) -------------------- */

enum { COMPLETE_WORDS = 64 };

static const mpx_session *completing; /* the session the prompt belongs to */

/* The candidates as they go on the line, handed to libedit one by one (it
 * frees what it gets). */
static char **quoted_cands;
static int n_quoted, next_quoted;

static char *quoted_next(const char *text, int state) {
    (void)text;
    if (state == 0) next_quoted = 0;
    if (next_quoted < n_quoted) return quoted_cands[next_quoted++];
    free(quoted_cands);
    quoted_cands = NULL;
    n_quoted = next_quoted = 0;
    return NULL;
}

static char **complete(const char *text, int start, int end) {
    (void)end;
    rl_attempted_completion_over = 1; /* no fallback to libedit's own file names */
    rl_completion_append_character = ' ';
    /* The word being completed as the command lexer reads it (libedit's
     * word ends at any blank, quoted or not, and at quotes), and the words
     * before it. */
    char line[4096], word[4096];
    size_t n = (size_t)end < sizeof line - 1 ? (size_t)end : sizeof line - 1, ws;
    memcpy(line, rl_line_buffer, n);
    line[n] = '\0';
    char q = repl_last_word(line, &ws, word, sizeof word);
    if ((size_t)start > n) return NULL;
    char typed[4096];
    snprintf(typed, sizeof typed, "%s", line + ws);
    line[ws] = '\0';
    char *w[COMPLETE_WORDS];
    int pos = 0;
    mpx_error err;
    if (repl_split_words(line, &pos, w, COMPLETE_WORDS, true, &err)) return NULL;
    if (pos == COMPLETE_WORDS) return NULL;
    int n_cands = repl_complete(completing, word, pos, w);
    if (!n_cands) return NULL;
    free(quoted_cands);
    n_quoted = 0;
    quoted_cands = malloc((size_t)n_cands * sizeof *quoted_cands);
    if (!quoted_cands) {
        repl_complete_free();
        return NULL;
    }
    /* Each candidate written back quoted where it needs it (a path with a
     * blank), as the text that replaces libedit's word from start. */
    const char *before = rl_line_buffer + ((size_t)start < ws ? (size_t)start : ws);
    size_t lead = (size_t)start < ws ? ws - (size_t)start : 0, skip = (size_t)start > ws ? (size_t)start - ws : 0;
    for (int i = 0; i < n_cands; i++) {
        char *c = repl_complete_take();
        size_t l = strlen(c);
        /* A folder goes on into itself: its quote stays open, no blank after
         * it; a figure's <what>. goes on into its metric, no blank either. */
        bool open = l && c[l - 1] == '/';
        if (n_cands == 1 && (open || (l && c[l - 1] == '.'))) rl_completion_append_character = '\0';
        char quoted[8192], out[8192];
        bool fits = repl_complete_quoted(typed, q, c, strlen(word), open, quoted, sizeof quoted);
        free(c);
        if (!fits || strlen(quoted) < skip || strncmp(quoted, typed, skip) != 0) continue;
        snprintf(out, sizeof out, "%.*s%s", (int)lead, before, quoted + skip);
        char *dup = strdup(out);
        if (dup) quoted_cands[n_quoted++] = dup;
    }
    repl_complete_free();
    if (!n_quoted) return NULL;
    return rl_completion_matches(text, quoted_next);
}

/* ---- the prompt ------------------------------------------------------------------- */

/* ---- the pager ------------------------------------------------------------------ */

/* text through $PAGER (default less -FRX: quits at once when it fits, keeps
 * colours, leaves the text on the screen). A pager that cannot be started
 * (exit status 127 from the shell) leaves the text on stdout instead. */
static void page(const char *text, size_t len) {
    const char *pager = getenv("PAGER");
    if (!pager || !*pager) pager = "less -FRX";
    fflush(stdout);
    in_command = 0; /* Ctrl-C in the pager is the pager's: it must not count toward leaving mpx */
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN); /* the user may quit the pager early */
    FILE *p = popen(pager, "w");
    int status = -1;
    if (p) {
        fwrite(text, 1, len, p);
        status = pclose(p);
    }
    signal(SIGPIPE, old_pipe);
    if (!p || (WIFEXITED(status) && WEXITSTATUS(status) == 127)) fwrite(text, 1, len, stdout);
    interrupted = 0; /* a Ctrl-C inside the pager was the pager's */
}

/* One command typed at the prompt. With `set pager on` and stdout a
 * terminal, its results are gathered and, when they are taller than the
 * terminal, shown through the pager (plan, diff, report --all of a large
 * model); what the command did and its errors go to stderr as they happen. */
static void run_typed(mpx_session *s, const char *cmd) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = s->pager && isatty(STDOUT_FILENO) ? open_memstream(&buf, &len) : NULL;
    if (!mem) {
        repl_run_line(s, cmd);
        return;
    }
    FILE *saved = s->out;
    s->out = mem;
    repl_run_line(s, cmd);
    s->out = saved;
    if (fclose(mem) != 0 || !buf) {
        free(buf);
        return;
    }
    struct winsize ws;
    size_t rows = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 ? ws.ws_row : 24;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
    if (lines + 1 < rows) fwrite(buf, 1, len, stdout);
    else page(buf, len);
    free(buf);
}

static void interactive(mpx_session *s) {
    completing = s;
    /* Multibyte input (a path with accents) as the terminal sends it;
     * LC_NUMERIC stays "C", so numbers read and print the same everywhere. */
    setlocale(LC_CTYPE, "");
    rl_readline_name = "mpx"; /* ~/.editrc may hold mpx-only bindings */
    rl_attempted_completion_function = complete;
    /* Signals are ours (catch_signals); keys come through prompt_getc. Both
     * before libedit initialises (history_open does), which reads them once. */
    rl_catch_signals = 0;
    rl_getc_function = prompt_getc;
    history_open();
    char *pending = NULL; /* a command continued with a trailing backslash */
    for (;;) {
        interrupted = 0;
        char *line = readline(pending ? "...> " : "mpx> ");
        if (interrupted) {
            /* Ctrl-C at the prompt: abandon the line (and a continuation). */
            free(line);
            free(pending);
            pending = NULL;
            fputc('\n', stdout);
            continue;
        }
        if (!line) {
            fputc('\n', stdout); /* Ctrl-D: end the prompt's line */
            break;
        }
        size_t len = strlen(line), plen = pending ? strlen(pending) : 0;
        bool cont = len > 0 && line[len - 1] == '\\';
        if (cont) line[--len] = '\0';
        char *cmd = realloc(pending, plen + len + 2);
        if (!cmd) {
            free(line);
            fprintf(stderr, "error: out of memory\n");
            break;
        }
        memcpy(cmd + plen, line, len + 1);
        free(line);
        if (cont) {
            cmd[plen + len] = ' ';
            cmd[plen + len + 1] = '\0';
            pending = cmd;
            continue;
        }
        pending = NULL;
        if (cmd[strspn(cmd, " \t")]) history_add(s, cmd);
        interrupted = 0;
        in_command = 1;
        run_typed(s, cmd);
        in_command = 0;
        free(cmd);
        fflush(stdout);
        if (s->quit) break;
    }
    free(pending);
    repl_complete_free();
    completing = NULL;
}

/* ---- main ------------------------------------------------------------------------- */

static void usage(FILE *to) { fputs(repl_usage_text, to); }

static int merge_main(int argc, char **argv, bool quiet) {
    size_t n = 16;
    for (int i = 1; i < argc; i++) n += 2 * strlen(argv[i]) + 3;
    char *line = malloc(n);
    if (!line) return MPX_EXIT_ERROR;
    size_t o = 0;
    for (int i = 1; i < argc; i++) {
        if (i > 1) line[o++] = ' ';
        if (!repl_quote_word(line + o, n - o, argv[i])) {
            fprintf(stderr, "mpx merge: a file name with a line break: %s\n", argv[i]);
            free(line);
            return MPX_EXIT_USAGE;
        }
        o += strlen(line + o);
    }
    catch_fatal(SIGINT);
    catch_fatal(SIGTERM);
    catch_fatal(SIGHUP);
    mpx_session s;
    mpx_session_init(&s, stdout);
    s.info = quiet ? fopen("/dev/null", "w") : stderr;
    if (!s.info) s.info = stderr;
    mpx_error err;
    mpx_error_clear(&err);
    mpx_status st = mpx_session_exec(&s, line, &err);
    if (st) repl_print_error(&s, NULL, 0, &err);
    if (s.info != stderr) fclose(s.info);
    mpx_session_free(&s);
    free(line);
    /* The command line is merge's whole argument list: an argument error
     * (no shard, an unknown option) is a usage error. */
    return st == MPX_E_ARG ? MPX_EXIT_USAGE : st ? MPX_EXIT_ERROR : MPX_EXIT_OK;
}

int main(int argc, char **argv) {
    mpx_numerics_huge_pages(argv); /* glibc's heap on huge pages: may start the program again */
    mpx_numerics_init(); /* constant folding runs the kernels */
    mpx_numerics_keep_memory(); /* runs again and again: keep freed activations */
    /* `mpx merge a.json b.json ...`: the shards of a sweep joined (the same
     * as the command `merge`), for schedulers that run shards as processes. */
    if (argc >= 2 && strcmp(argv[1], "merge") == 0) return merge_main(argc, argv, false);
    if (argc >= 3 && (strcmp(argv[1], "-q") == 0 || strcmp(argv[1], "--quiet") == 0) && strcmp(argv[2], "merge") == 0)
        return merge_main(argc - 1, argv + 1, true);
    bool stay = false;
    const char *inline_cmds = NULL;
    bool quiet = false;
    static const struct option longs[] = {
        {"command", required_argument, NULL, 'c'}, {"interactive", no_argument, NULL, 'i'},
        {"quiet", no_argument, NULL, 'q'},         {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},       {NULL, 0, NULL, 0},
    };
    int opt;
    /* glibc's getopt_long permutes: options may follow the script names. */
    while ((opt = getopt_long(argc, argv, "ic:qhV", longs, NULL)) != -1) {
        switch (opt) {
        case 'i': stay = true; break;
        case 'c': inline_cmds = optarg; break;
        case 'q': quiet = true; break;
        case 'h': usage(stdout); return MPX_EXIT_OK;
        case 'V': printf("mpx %s\n", MPX_VERSION); return MPX_EXIT_OK;
        default: usage(stderr); return MPX_EXIT_USAGE;
        }
    }
    /* Results on stdout, line-buffered so that they interleave with stderr's
     * informational lines in order when both go to one file (2>&1). */
    setvbuf(stdout, NULL, _IOLBF, 0);
    mpx_session s;
    mpx_session_init(&s, stdout);
    s.info = quiet ? fopen("/dev/null", "w") : stderr;
    if (!s.info) s.info = stderr;
    const char *no_color = getenv("NO_COLOR");
    s.color = isatty(STDOUT_FILENO) && !no_color;
    s.progress = isatty(STDERR_FILENO) && !quiet;
    s.cancel = &interrupted;
    mpx_set_cancel_flag(&interrupted); /* also inside Loop and Scan bodies */

    bool ran = optind < argc || inline_cmds;
    bool prompt = isatty(STDIN_FILENO) && (stay || !ran);
    /* At a prompt Ctrl-C stops the command and returns there, and SIGTERM
     * or SIGHUP end mpx; a script run stops its command and then ends by
     * the signal (on_stop). */
    if (prompt) {
        catch_signals();
        catch_fatal(SIGTERM);
        catch_fatal(SIGHUP);
    } else {
        catch_stop(SIGINT);
        catch_stop(SIGTERM);
        catch_stop(SIGHUP);
    }

    int rc = MPX_EXIT_OK;
    for (int i = optind; i < argc && !s.quit && !interrupted; i++) {
        int r = repl_run_file(&s, argv[i]);
        rc = repl_exit_worst(rc, r);
        if (r != MPX_EXIT_OK && s.bail) break;
    }
    bool stopped = rc != MPX_EXIT_OK && s.bail;
    if (inline_cmds && !s.quit && !stopped && !interrupted) {
        rc = repl_exit_worst(rc, repl_run_inline(&s, inline_cmds));
        stopped = rc != MPX_EXIT_OK && s.bail;
    }
    if (!s.quit && (stay || !ran)) {
        if (prompt) interactive(&s);
        else if (!stopped) rc = repl_exit_worst(rc, repl_run_stream(&s, "<stdin>", stdin));
    }
    /* An assert may record its failure without failing its command. */
    if (s.assert_failed && rc == MPX_EXIT_OK) rc = MPX_EXIT_ASSERT;
    if (s.info != stderr) fclose(s.info);
    mpx_session_free(&s);
    if (stop_sig) {
        fflush(NULL);
        signal(stop_sig, SIG_DFL);
        raise(stop_sig);
    }
    return rc;
}
