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
#include <malloc.h>
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
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
    }
}

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
    FILE *f = fopen(hist_path, "r");
    if (!f) {
        if (errno != ENOENT) hist_warn("read", errno);
        return;
    }
    fclose(f);
    read_history(hist_path);
}

/* Written after every line, so a crash or a kill keeps what was typed. */
static void history_add(const char *line) {
    /* Skip a repeat of the previous line (Up-Enter loops). */
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last && last->line && strcmp(last->line, line) == 0) return;
    add_history(line);
    if (!hist_path[0] || hist_warned) return;
    int e = write_history(hist_path);
    if (e) hist_warn("write", e);
}

/* ---- tab completion ----------------------------------------------------------------- */

/* What completes depends on the command and the word's position: command
 * names first, then op types, node names, formats, colours, file paths. The
 * candidates are gathered (those starting with the word) into one list that
 * the generator hands to libedit one by one. */

static const mpx_session *completing; /* the session the prompt belongs to */

static struct {
    char **v;
    int n, cap, next;
} cands;

static bool cands_grow(void) {
    int cap = cands.cap ? cands.cap * 2 : 64;
    char **grown = realloc(cands.v, (size_t)cap * sizeof *grown);
    if (!grown) return false;
    cands.v = grown;
    cands.cap = cap;
    return true;
}

static void cands_reset(void) {
    for (int i = 0; i < cands.n; i++) free(cands.v[i]);
    cands.n = cands.next = 0;
}

/* Add head + word when it starts with prefix (head: the part of the word
 * before the item completed, e.g. "Conv," in a selector list). */
static void cand2(const char *prefix, const char *head, const char *word) {
    size_t hl = strlen(head), wl = strlen(word);
    char *c = malloc(hl + wl + 1);
    if (!c) return;
    memcpy(c, head, hl);
    memcpy(c + hl, word, wl + 1);
    if (strncmp(c, prefix, strlen(prefix)) != 0 || (cands.n == cands.cap && !cands_grow())) {
        free(c);
        return;
    }
    cands.v[cands.n++] = c;
}

static void cand(const char *prefix, const char *word) { cand2(prefix, "", word); }

static void cand_list(const char *prefix, const char *const *words) {
    for (; *words; words++) cand(prefix, *words);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted, each once (an op type is both in the registry and the graph). */
static void cands_unique(void) {
    qsort(cands.v, (size_t)cands.n, sizeof *cands.v, cmp_str);
    int k = 0;
    for (int i = 0; i < cands.n; i++) {
        if (k && strcmp(cands.v[k - 1], cands.v[i]) == 0) free(cands.v[i]);
        else cands.v[k++] = cands.v[i];
    }
    cands.n = k;
}

static char *cand_next(const char *text, int state) {
    (void)text;
    (void)state;
    if (cands.next >= cands.n) return NULL;
    char *c = cands.v[cands.next];
    cands.v[cands.next++] = NULL; /* libedit frees what it gets */
    return c;
}

static const char *const on_off[] = {"on", "off", NULL};

/* Names come from the tables that define them: formats (numerics), colours
 * and rule figures (colour), metrics (numerics/metrics.def). */
static void cand_formats(const char *text) {
    for (size_t i = 0; mpx_format_at(i); i++) cand(text, mpx_format_at(i)->name);
}

static void cand_colours(const char *text) {
    for (int c = 1; c < MPX_COLOUR_COUNT; c++) cand(text, mpx_colour_name((mpx_colour)c));
}

static void cand_figures(const char *text) {
    for (size_t i = 0; mpx_rule_figure_at(i); i++) cand(text, mpx_rule_figure_at(i));
}

static void cand_metrics(const char *text) {
    for (int m = 0; m < MPX_METRIC_COUNT; m++) cand(text, mpx_metric_info_of((mpx_metric_id)m)->name);
}

static void cand_commands(const char *text) {
    int n = 0;
    const mpx_command *c = mpx_commands(&n);
    for (int i = 0; i < n; i++) cand(text, c[i].name);
    cand(text, "exit");
}

/* Op types a selector may name: the registry's and the model's own. */
static void cand_ops(const char *text, const char *head) {
    for (int op = 1; op < MPX_OP_COUNT; op++) cand2(text, head, mpx_op_name((mpx_op)op));
    const mpx_graph *g = completing ? completing->graph : NULL;
    for (int i = 0; g && i < g->n_nodes; i++) cand2(text, head, g->nodes[i]->op_type);
}

static void cand_nodes(const char *text, const char *head) {
    const mpx_graph *g = completing ? completing->graph : NULL;
    for (int i = 0; g && i < g->n_nodes; i++) cand2(text, head, g->nodes[i]->name);
}

static void cand_tensors(const char *text) {
    const mpx_graph *g = completing ? completing->graph : NULL;
    for (int i = 0; g && i < g->n_tensors; i++) cand(text, g->tensors[i]->name);
}

static void cand_inputs(const char *text) {
    const mpx_graph *g = completing ? completing->graph : NULL;
    for (int i = 0; g && i < g->n_inputs; i++) cand(text, g->inputs[i]->name);
}

/* A selector: items separated by commas; complete the last one, an op type
 * or name:<node>. */
static void cand_selector(const char *text) {
    const char *comma = strrchr(text, ',');
    size_t hl = comma ? (size_t)(comma - text) + 1 : 0;
    char head[512];
    if (hl >= sizeof head) return;
    memcpy(head, text, hl);
    head[hl] = '\0';
    const char *item = text + hl;
    if (strncmp(item, "name:", 5) == 0) {
        if (hl + 5 >= sizeof head) return;
        memcpy(head + hl, "name:", 6);
        cand_nodes(text, head);
    } else {
        cand_ops(text, head);
        cand2(text, head, "*");
    }
}

/* Paths: entries of the word's folder; folders end in '/'. Hidden entries
 * only when the word asks for them. */
static void cand_files(const char *text) {
    const char *slash = strrchr(text, '/');
    char dir[4096];
    size_t dl = slash ? (size_t)(slash - text) + 1 : 0;
    if (dl >= sizeof dir) return;
    memcpy(dir, text, dl);
    dir[dl] = '\0';
    const char *base = text + dl;
    DIR *d = opendir(dl ? dir : ".");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0) continue;
        if (nm[0] == '.' && base[0] != '.') continue;
        if (strncmp(nm, base, strlen(base)) != 0) continue;
        char full[8192];
        snprintf(full, sizeof full, "%s%s", dir, nm);
        struct stat st;
        bool is_dir = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
        if (is_dir) strncat(full, "/", sizeof full - strlen(full) - 1);
        cand(text, full);
    }
    closedir(d);
}

/* The --options in a command's usage line (e.g. "--top", "--json"). */
static void cand_options(const char *text, const char *cmd) {
    int n = 0;
    const mpx_command *c = mpx_commands(&n);
    for (int i = 0; i < n; i++) {
        if (strcmp(c[i].name, cmd) != 0) continue;
        for (const char *p = strstr(c[i].usage, "--"); p; p = strstr(p + 2, "--")) {
            char opt[64];
            size_t k = 0;
            while (k < sizeof opt - 1 && (p[k] == '-' || (p[k] >= 'a' && p[k] <= 'z'))) {
                opt[k] = p[k];
                k++;
            }
            opt[k] = '\0';
            if (k > 2) cand(text, opt);
        }
    }
}

static bool is(const char *a, const char *b) { return a && strcmp(a, b) == 0; }

/* Candidates for word number pos (0 = the command) given the words before. */
static void gather(const char *text, int pos, char **w) {
    if (pos == 0) {
        cand_commands(text);
        return;
    }
    const char *cmd = w[0], *prev = w[pos - 1];
    if (text[0] == '-') {
        cand_options(text, cmd);
        return;
    }
    if (is(prev, "--csv") || is(prev, "--json") || is(prev, "--save") || is(prev, "--save-ref")) {
        cand_files(text);
    } else if (is(prev, "--around")) {
        cand_nodes(text, "");
    } else if (is(cmd, "load") || is(cmd, "source") || is(cmd, "save") || is(cmd, "dot") || is(cmd, "svg") ||
               is(cmd, "html") || is(cmd, "export")) {
        if (pos == 1) cand_files(text);
    } else if (is(cmd, "input")) {
        static const char *const kinds[] = {"shape", "random", "const", "file", "image", "audio", "files", NULL};
        static const char *const dists[] = {"normal", "uniform", "seed", NULL};
        static const char *const image_opts[] = {"size", "layout", "channels", "scale", "mean", "std", NULL};
        static const char *const audio_opts[] = {"rate", "length", "scale", NULL};
        static const char *const file_kinds[] = {"npy", "image", "audio", NULL};
        static const char *const layouts[] = {"nchw", "nhwc", NULL};
        static const char *const channels[] = {"rgb", "bgr", "gray", NULL};
        static const char *const set_opts[] = {"limit", "shuffle", NULL};
        /* input x files '<glob>' image [options]: the kind is the fifth word */
        bool per_file = pos >= 5 && is(w[2], "files");
        const char *kind = per_file ? w[4] : pos >= 3 ? w[2] : "";
        if (pos == 1) cand_inputs(text);
        else if (pos == 2) cand_list(text, kinds);
        else if (pos == 3 && is(w[2], "random")) cand_list(text, dists);
        else if (pos == 3 && (is(w[2], "file") || is(w[2], "image") || is(w[2], "audio") || is(w[2], "files")))
            cand_files(text);
        else if (pos == 4 && is(w[2], "files")) cand_list(text, file_kinds);
        else if (pos == 4 && is(w[2], "file")) cand(text, "convert");
        else if (is(prev, "layout")) cand_list(text, layouts);
        else if (is(prev, "channels")) cand_list(text, channels);
        else if (pos >= 4 && (is(kind, "image") || is(kind, "audio"))) {
            cand_list(text, is(kind, "image") ? image_opts : audio_opts);
            if (per_file) cand_list(text, set_opts);
        }
    } else if (is(cmd, "data")) {
        static const char *const data_opts[] = {"stacked", "limit", "shuffle", NULL};
        if (pos == 1) {
            cand_files(text);
            cand(text, "off");
        } else {
            cand_list(text, data_opts);
        }
    } else if (is(cmd, "merge")) {
        cand_files(text);
    } else if (is(cmd, "colour") || is(cmd, "color") || is(cmd, "accum")) {
        if (pos == 1) cand_selector(text);
        else if ((pos == 2 || is(prev, "else")) && cmd[0] == 'a') cand_formats(text);
        else if (pos == 2 || is(prev, "else")) cand_colours(text);
        else if (pos == 3) cand(text, "when");
        else if (is(prev, "when") || is(prev, "and") || is(prev, "or") || is(prev, "not") || is(prev, "("))
            cand_figures(text);
    } else if (is(cmd, "target")) {
        if (pos == 1) cand_formats(text);
        else if (pos == 2) cand(text, "block");
    } else if (is(cmd, "compare")) {
        cand_formats(text);
    } else if (is(cmd, "keep-io")) {
        if (pos == 1) cand_list(text, on_off);
    } else if (is(cmd, "set")) {
        static const char *const names[] = {"bail", "top", "cache", "pager", NULL};
        if (pos == 1) cand_list(text, names);
        else if (pos == 2 && (is(w[1], "bail") || is(w[1], "pager"))) cand_list(text, on_off);
    } else if (is(cmd, "show") || is(cmd, "why")) {
        if (pos == 1) cand_nodes(text, "");
    } else if (is(cmd, "tensor")) {
        if (pos == 1) {
            cand_nodes(text, "");
            cand_tensors(text);
        }
    } else if (is(cmd, "report") && is(prev, "--sort")) {
        cand_metrics(text);
        cand(text, "local");
        cand(text, "order");
    } else if (is(cmd, "plot")) {
        if (pos == 1) cand_files(text);
        else if (pos == 2) cand_metrics(text);
    } else if (is(cmd, "help")) {
        if (pos == 1) cand_commands(text);
    }
}

enum { COMPLETE_WORDS = 64 };

static char **complete(const char *text, int start, int end) {
    (void)end;
    rl_attempted_completion_over = 1; /* no fallback to libedit's own file names */
    rl_completion_append_character = ' ';
    cands_reset();
    /* The words before the one being completed, read as commands are. */
    char line[4096];
    size_t n = (size_t)start < sizeof line - 1 ? (size_t)start : sizeof line - 1;
    memcpy(line, rl_line_buffer, n);
    line[n] = '\0';
    char *w[COMPLETE_WORDS];
    int pos = 0;
    mpx_error err;
    if (repl_split_words(line, &pos, w, COMPLETE_WORDS, true, &err)) return NULL;
    if (pos == COMPLETE_WORDS) return NULL;
    gather(text, pos, w);
    cands_unique();
    if (!cands.n) return NULL;
    /* A folder goes on into itself: no blank after it. */
    if (cands.n == 1) {
        size_t l = strlen(cands.v[0]);
        if (l && cands.v[0][l - 1] == '/') rl_completion_append_character = '\0';
    }
    return rl_completion_matches(text, cand_next);
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
        if (cmd[strspn(cmd, " \t")]) history_add(cmd);
        interrupted = 0;
        in_command = 1;
        run_typed(s, cmd);
        in_command = 0;
        free(cmd);
        fflush(stdout);
        if (s->quit) break;
    }
    free(pending);
    cands_reset();
    free(cands.v);
    completing = NULL;
}

/* ---- main ------------------------------------------------------------------------- */

static void usage(FILE *to) { fputs(repl_usage_text, to); }

static int merge_main(int argc, char **argv) {
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
    mpx_session s;
    mpx_session_init(&s, stdout);
    s.info = stderr;
    mpx_error err;
    mpx_error_clear(&err);
    mpx_status st = mpx_session_exec(&s, line, &err);
    if (st) repl_print_error(&s, NULL, 0, &err);
    mpx_session_free(&s);
    free(line);
    return st ? MPX_EXIT_ERROR : MPX_EXIT_OK;
}

int main(int argc, char **argv) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    /* A run allocates and frees activations of up to tens of MB per node.
     * glibc would hand each large block back to the kernel (mmap/munmap) and
     * fault it in again on the next run: on PP-OCRv4 det that page-faulting
     * cost more system time than all the kernels. Keep freed memory in the
     * process instead (a few hundred MB stay mapped between runs). */
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    /* `mpx merge a.json b.json ...`: the shards of a sweep joined (the same
     * as the command `merge`), for schedulers that run shards as processes. */
    if (argc >= 2 && strcmp(argv[1], "merge") == 0) return merge_main(argc, argv);
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

    bool ran = optind < argc || inline_cmds;
    bool prompt = isatty(STDIN_FILENO) && (stay || !ran);
    /* Ctrl-C is ours only when a person is at a prompt (it stops the command
     * and returns there); a plain script run keeps the default: Ctrl-C ends it. */
    if (prompt) catch_signals();

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
    return rc;
}
