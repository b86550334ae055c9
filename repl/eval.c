/* eval.c - search --eval "<command>": the user's own accuracy figure.
 *
 * Once per evaluation (not per figure, not per sample) the candidate's and
 * the reference's model outputs are written as .npy files to a folder,
 * the command runs through /bin/sh with MPX_EVAL_DIR naming that folder, and
 * its stdout is read: one number (the figure `eval`) or a JSON object of
 * numbers (the figures `eval.<key>`). Layout of the folder:
 *   $MPX_EVAL_DIR/cand/<output>.npy   the candidate plan's outputs
 *   $MPX_EVAL_DIR/ref/<output>.npy    the fp32 reference's
 * one file per model output, named as the output with '/' and other
 * characters a file name cannot hold made '_'. Over a data set each file
 * holds every sample's output stacked on a new leading axis, in the run's
 * sample order (MPX_EVAL_SAMPLES gives their number; 1 without a data set,
 * where the file holds the output as it is). The files are rewritten for
 * each evaluation; the folder is made for the search and removed after it.
 * Anything else the command prints to stderr goes to the user's terminal. */
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EVAL_OUT_MAX 65536 /* stdout beyond this is an error, not a figure */

struct repl_eval {
    char *command;
    double timeout_s;
    const volatile int *cancel; /* the session's Ctrl-C flag, or NULL */
    char dir[512];
    const mpx_compare *done_for; /* the comparison whose figures `got` holds */
    cJSON *got;                  /* a number or an object of numbers */
};

static void file_name(const char *name, char *buf, size_t n) {
    size_t o = 0;
    for (const char *c = name; *c && o + 1 < n; c++)
        buf[o++] = (*c == '/' || *c == '\\' || *c == ':' || (unsigned char)*c < 32) ? '_' : *c;
    buf[o] = '\0';
    if (!o || strcmp(buf, ".") == 0 || strcmp(buf, "..") == 0) snprintf(buf, n, "output_");
}

mpx_status repl_eval_new(const char *command, double timeout_s, const volatile int *cancel, repl_eval **out,
                         mpx_error *err) {
    *out = NULL;
    if (!command || !command[0]) return mpx_error_set(err, MPX_E_ARG, "--eval: give the command to run, quoted");
    repl_eval *e = calloc(1, sizeof *e);
    if (!e || !(e->command = strdup(command))) {
        free(e);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    e->timeout_s = timeout_s;
    e->cancel = cancel;
    const char *tmp = getenv("TMPDIR");
    snprintf(e->dir, sizeof e->dir, "%s/mpx-eval-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    char sub[600];
    bool ok = mkdtemp(e->dir) != NULL;
    snprintf(sub, sizeof sub, "%s/cand", e->dir);
    ok = ok && mkdir(sub, 0700) == 0;
    snprintf(sub, sizeof sub, "%s/ref", e->dir);
    ok = ok && mkdir(sub, 0700) == 0;
    if (!ok) {
        mpx_status st = mpx_error_set(err, MPX_E_IO, "--eval: cannot make a folder for the outputs (%s): %s", e->dir,
                                      strerror(errno));
        repl_eval_free(e);
        return st;
    }
    *out = e;
    return MPX_OK;
}

/* Removes the folder with the files this module wrote in it. */
static void remove_tree(const char *dir) {
    char sub[600], path[1200];
    for (int k = 0; k < 2; k++) {
        snprintf(sub, sizeof sub, "%s/%s", dir, k ? "ref" : "cand");
        DIR *d = opendir(sub);
        for (struct dirent *f; d && (f = readdir(d));) {
            if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0) continue;
            snprintf(path, sizeof path, "%s/%s", sub, f->d_name);
            unlink(path);
        }
        if (d) closedir(d);
        rmdir(sub);
    }
    rmdir(dir);
}

void repl_eval_free(repl_eval *e) {
    if (!e) return;
    remove_tree(e->dir);
    cJSON_Delete(e->got);
    free(e->command);
    free(e);
}

/* Runs the command; its stdout (at most EVAL_OUT_MAX bytes) into *text. */
static mpx_status run_command(repl_eval *e, int n_samples, char **text, mpx_error *err) {
    int fd[2];
    if (pipe(fd) != 0) return mpx_error_set(err, MPX_E_IO, "--eval: cannot make a pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return mpx_error_set(err, MPX_E_IO, "--eval: cannot start %s: %s", e->command, strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0); /* its own group: a timeout ends the command's children too */
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        setenv("MPX_EVAL_DIR", e->dir, 1);
        char n[32];
        snprintf(n, sizeof n, "%d", n_samples);
        setenv("MPX_EVAL_SAMPLES", n, 1);
        execl("/bin/sh", "sh", "-c", e->command, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    close(fd[1]);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    double end = repl_now_ms() + e->timeout_s * 1000;
    mpx_status st = buf ? MPX_OK : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    bool timed_out = false;
    while (!st) {
        double left = end - repl_now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        /* Ctrl-C (or a script's SIGINT/SIGTERM) stops the command as the
         * timeout does; the wait is in slices so that a signal landing
         * just before poll is seen within one. */
        if (e->cancel && *e->cancel) {
            st = mpx_error_set(err, MPX_E_CANCELLED, "--eval: %s stopped: interrupted", e->command);
            break;
        }
        struct pollfd p = {.fd = fd[0], .events = POLLIN};
        int r = poll(&p, 1, left > 100 ? 100 : (int)left + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) continue; /* the deadline is checked above */
        if (n + 1 >= cap) {
            if (cap >= EVAL_OUT_MAX) {
                st = mpx_error_set(err, MPX_E_INVALID, "--eval: %s printed more than %d bytes; print one number or one "
                                   "JSON object of numbers", e->command, EVAL_OUT_MAX);
                break;
            }
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
                break;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t k = read(fd[0], buf + n, cap - n - 1);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
    }
    close(fd[0]);
    if (timed_out || st) kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!st && timed_out)
        st = mpx_error_set(err, MPX_E_INVALID, "--eval: %s ran past --eval-timeout %g s and was stopped", e->command,
                           e->timeout_s);
    if (!st && WIFEXITED(status) && WEXITSTATUS(status) == 127)
        st = mpx_error_set(err, MPX_E_INVALID, "--eval: %s: command not found (exit status 127)", e->command);
    else if (!st && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
        st = WIFEXITED(status) ? mpx_error_set(err, MPX_E_INVALID, "--eval: %s failed (exit status %d)", e->command,
                                               WEXITSTATUS(status))
                               : mpx_error_set(err, MPX_E_INVALID, "--eval: %s was killed by signal %d", e->command,
                                               WTERMSIG(status));
    if (st) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *text = buf;
    return MPX_OK;
}

/* stdout as figures: one finite number, or an object of finite numbers. */
static mpx_status parse_output(const repl_eval *e, const char *text, cJSON **out, mpx_error *err) {
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) return mpx_error_set(err, MPX_E_INVALID, "--eval: %s printed nothing; print one number or one JSON object "
                                  "of numbers", e->command);
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(p, &end, 0);
    /* one value and nothing after it: "1,5" (a decimal comma), "1 0.2" or
     * "1abc" read as 1 would be a figure the command did not mean */
    if (j && end) {
        const char *t = end + strspn(end, " \t\r\n");
        if (*t) {
            cJSON_Delete(j);
            int len = (int)strcspn(p, "\r\n");
            return mpx_error_set(err, MPX_E_INVALID, "--eval: %s printed \"%.*s\"%s: text after its first value; print "
                                 "one number or one JSON object of numbers", e->command, len < 60 ? len : 60, p,
                                 p[(size_t)len + strspn(p + len, " \t\r\n")] ? " and more lines" : "");
        }
    }
    if (!j || !(cJSON_IsNumber(j) || cJSON_IsObject(j))) {
        cJSON_Delete(j);
        /* A bare nan or inf is no JSON: say what it is. */
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)strcspn(p, " \t\r\n"), p);
        double v = strtod(word, NULL);
        if (word[0] && (isnan(v) || isinf(v)))
            return mpx_error_set(err, MPX_E_INVALID, "--eval: %s printed %s, not a finite number", e->command, word);
        int len = (int)strcspn(p, "\r\n");
        return mpx_error_set(err, MPX_E_INVALID, "--eval: %s printed \"%.*s\", not a number nor a JSON object of "
                             "numbers", e->command, len < 60 ? len : 60, p);
    }
    const cJSON *it;
    if (cJSON_IsObject(j)) {
        if (!j->child) {
            cJSON_Delete(j);
            return mpx_error_set(err, MPX_E_INVALID, "--eval: %s printed an empty object", e->command);
        }
        cJSON_ArrayForEach(it, j) if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) {
            mpx_status st = mpx_error_set(err, MPX_E_INVALID, "--eval: %s printed \"%s\", which is not a finite number",
                                          e->command, it->string);
            cJSON_Delete(j);
            return st;
        }
    } else if (!isfinite(j->valuedouble)) {
        cJSON_Delete(j);
        return mpx_error_set(err, MPX_E_INVALID, "--eval: %s printed a number that is not finite", e->command);
    }
    *out = j;
    return MPX_OK;
}

/* Every sample's values of tensor t (held by the run: mpx_samples_hold)
 * stacked on a new leading axis, into v. */
static mpx_status stack_samples(const mpx_samples *S, const mpx_tensor *t, const char *fig, bool ref, mpx_value *v,
                                mpx_error *err) {
    const mpx_value *first = mpx_samples_held(S, 0, t->index, !ref);
    if (!first) return mpx_error_set(err, MPX_E_INVALID, "%s: the run held no values of output %s", fig, t->name);
    if (first->rank + 1 > MPX_MAX_RANK || first->is_seq)
        return mpx_error_set(err, MPX_E_INVALID, "%s: output %s cannot be stacked over samples", fig, t->name);
    int64_t dims[MPX_MAX_RANK];
    dims[0] = S->n_samples;
    for (int d = 0; d < first->rank; d++) dims[d + 1] = first->dims[d];
    mpx_status st = mpx_value_alloc_raw(v, first->dtype, first->rank + 1, dims, err);
    for (int k = 0; k < S->n_samples && !st; k++) {
        const mpx_value *x = mpx_samples_held(S, k, t->index, !ref);
        if (!x || x->n != first->n || x->dtype != first->dtype)
            st = mpx_error_set(err, MPX_E_INVALID, "%s: sample %d's output %s is missing or has another shape", fig,
                               S->id[k] + 1, t->name);
        else if (v->f)
            memcpy(v->f + (size_t)k * (size_t)first->n, x->f, (size_t)first->n * sizeof *v->f);
        else if (v->d)
            memcpy(v->d + (size_t)k * (size_t)first->n, x->d, (size_t)first->n * sizeof *v->d);
        else
            memcpy(v->i + (size_t)k * (size_t)first->n, x->i, (size_t)first->n * sizeof *v->i);
    }
    if (st) mpx_value_free(v);
    return st;
}

mpx_status repl_eval_figure(void *ctx, const mpx_graph *g, const mpx_compare *c, const char *fig, double *out,
                            mpx_error *err) {
    repl_eval *e = ctx;
    if (e->done_for != c) {
        cJSON_Delete(e->got);
        e->got = NULL;
        e->done_for = NULL;
        char path[1200], name[512];
        for (int k = 0; k < g->n_outputs; k++) {
            const mpx_tensor *t = g->outputs[k];
            if (!t) continue;
            if (!c->samples && (c->ref[t->index].n < 0 || c->cand[t->index].n < 0))
                return mpx_error_set(err, MPX_E_INVALID, "%s: the run kept no values of output %s", fig, t->name);
            file_name(t->name, name, sizeof name);
            for (int side = 0; side < 2; side++) {
                snprintf(path, sizeof path, "%s/%s/%s.npy", e->dir, side ? "ref" : "cand", name);
                mpx_status st;
                if (c->samples) {
                    mpx_value v;
                    st = stack_samples(c->samples, t, fig, side, &v, err);
                    if (!st) st = mpx_npy_write(path, NULL, &v, err);
                    if (!st) mpx_value_free(&v);
                } else {
                    st = mpx_npy_write(path, NULL, side ? &c->ref[t->index] : &c->cand[t->index], err);
                }
                if (st) return st;
            }
        }
        char *text = NULL;
        mpx_status st = run_command(e, c->samples ? c->samples->n_samples : 1, &text, err);
        if (!st) st = parse_output(e, text, &e->got, err);
        free(text);
        if (st) return st;
        e->done_for = c;
    }
    if (strcmp(fig, "eval") == 0) {
        if (cJSON_IsNumber(e->got)) return *out = e->got->valuedouble, MPX_OK;
        return mpx_error_set(err, MPX_E_ARG, "eval: %s printed an object; name one of its figures: eval.<key>",
                             e->command);
    }
    const char *key = fig + 5; /* past "eval." */
    const cJSON *v = cJSON_IsObject(e->got) ? cJSON_GetObjectItemCaseSensitive(e->got, key) : NULL;
    if (!v) return mpx_error_set(err, MPX_E_ARG, "%s: %s printed no figure \"%s\"", fig, e->command, key);
    *out = v->valuedouble;
    return MPX_OK;
}
