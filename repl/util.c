/* util.c - what the commands share that is not session state: parsing
 * numbers, shapes and k/n shards, the clock, exact
 * JSON numbers, and writing an output file (or stdout) safely. */
/* realpath() is XSI: the build's _POSIX_C_SOURCE alone does not declare it. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <unistd.h>

mpx_status repl_parse_shard(const char *text, const char *opt, int *k, int *n, mpx_error *err) {
    int a = 0, b = 0;
    char extra;
    if (sscanf(text, "%d/%d%c", &a, &b, &extra) != 2 || b < 1 || a < 1 || a > b)
        return mpx_error_set(err, MPX_E_ARG, "%s %s: k/n with 1 <= k <= n (e.g. %s 2/4)", opt, text, opt);
    *k = a;
    *n = b;
    return MPX_OK;
}

mpx_status repl_need_model(const mpx_session *s, mpx_error *err) {
    if (!s->graph) return mpx_error_set(err, MPX_E_ARG, "no model loaded (use: load <file.onnx|file.json>)");
    return MPX_OK;
}

mpx_status repl_parse_shape(const char *text, int *rank, int64_t *dims, mpx_error *err) {
    int r = 0;
    const char *p = text;
    while (*p) {
        if (r == MPX_MAX_RANK)
            return mpx_error_set(err, MPX_E_ARG, "shape \"%s\" has more than %d dims", text, MPX_MAX_RANK);
        if (*p < '0' || *p > '9')
            return mpx_error_set(err, MPX_E_ARG, "bad shape \"%s\": expected a number at \"%s\"", text, p);
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno == ERANGE || v > MPX_MAX_ELEMS)
            return mpx_error_set(err, MPX_E_ARG, "bad shape \"%s\": dim %d is too large", text, r);
        dims[r++] = v;
        p = end;
        if (*p == 'x' || *p == 'X' || *p == ',') {
            p++;
            if (!*p) return mpx_error_set(err, MPX_E_ARG, "bad shape \"%s\": ends with a separator", text);
        } else if (*p) {
            return mpx_error_set(err, MPX_E_ARG, "bad shape \"%s\": unexpected \"%c\"", text, *p);
        }
    }
    if (r == 0) return mpx_error_set(err, MPX_E_ARG, "empty shape");
    *rank = r;
    return MPX_OK;
}

double repl_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Below the current folder: relative, and no ".." step. */
static bool below_cwd(const char *path) { return path[0] != '/' && !mpx_path_has_dotdot(path); }

/* An existing folder, where it is once links are followed: the current
 * folder or below it. */
static bool really_below_cwd(const char *dir) {
    char cwd[PATH_MAX], real[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) || !realpath(dir, real)) return false;
    const size_t n = strlen(cwd);
    return strncmp(real, cwd, n) == 0 && (real[n] == '\0' || real[n] == '/' || (n == 1 && cwd[0] == '/'));
}

/* What repl_make_parent and repl_check_target share: the refusals, then
 * each folder of path from the top; create: make the missing ones (noting
 * the topmost in made), else stop at the first missing one and check that
 * the deepest existing folder can be written (the dry run before a long
 * command). */
static mpx_status target_walk(const mpx_session *s, const char *path, bool create, char *made, size_t made_n,
                              mpx_error *err) {
    if (made && made_n) made[0] = '\0';
    /* "-" is no stdout here: a file of that name is never what was meant */
    if (strcmp(path, "-") == 0)
        return mpx_error_set(err, MPX_E_ARG, "\"-\" as a file name: commands that print do so with the file name "
                             "left out; name a file (./- if you mean one called -)");
    /* "~/x" typed at the prompt or in a script: no shell expanded it, and
     * a folder named "~" made here is never what was meant */
    struct stat tilde;
    if (strncmp(path, "~/", 2) == 0 && stat("~", &tilde) != 0)
        return mpx_error_set(err, MPX_E_ARG, "cannot write %s: mpx does not expand ~ (a shell does); give the "
                             "folder's path (e.g. $HOME's, from /)", path);
    /* A file the session read (the model, its external data, a script, an
     * input), by any name, before any folder is made for it. */
    mpx_status guarded = mpx_file_check_target(path, s ? s->guard : NULL, err);
    if (guarded) return guarded;
    char dir[1024];
    if (!mpx_path_folder(path, dir, sizeof dir)) return mpx_error_set(err, MPX_E_ARG, "path too long: %s", path);
    /* mkdir -p, but only below the current folder: a typo in an absolute
     * path must not grow folders under / or $HOME (`svg /nonexisting/x.svg`). */
    bool may_create = below_cwd(path), parent_below = true;
    char last[1024] = "."; /* the deepest folder that exists */
    for (char *p = dir + 1; strcmp(dir, ".") != 0 && strcmp(dir, "/") != 0; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = '\0';
            struct stat st;
            if (stat(dir, &st) == 0) {
                if (!S_ISDIR(st.st_mode))
                    return mpx_error_set(err, MPX_E_IO, "cannot write %s: %s is not a folder", path, dir);
                /* the folder a missing one would be made in: below the
                 * current folder where it really is, not only by its name (a
                 * link out_link -> ../elsewhere) */
                parent_below = may_create && really_below_cwd(dir);
                snprintf(last, sizeof last, "%s", dir);
            } else if (!may_create || !parent_below) {
                return mpx_error_set(err, MPX_E_IO,
                                     "cannot write %s: the folder %s does not exist (mpx creates folders "
                                     "only below the current one)", path, dir);
            } else if (!create) {
                break; /* made by the write itself */
            } else if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
                return mpx_error_set(err, MPX_E_IO, "cannot create folder %s for %s: %s", dir, path, strerror(errno));
            } else if (made && made_n && !made[0]) {
                snprintf(made, made_n, "%s", dir);
            }
            *p = c;
            if (!c) break;
        }
    }
    if (!create && strcmp(dir, "/") == 0) snprintf(last, sizeof last, "/");
    if (!create && access(last, W_OK | X_OK) != 0)
        return mpx_error_set(err, MPX_E_IO, "cannot write %s: the folder %s: %s", path, last, strerror(errno));
    return MPX_OK;
}

mpx_status repl_make_parent(const mpx_session *s, const char *path, mpx_error *err) {
    return target_walk(s, path, true, NULL, 0, err);
}

mpx_status repl_make_parent_noted(const mpx_session *s, const char *path, char *made, size_t made_n,
                                  mpx_error *err) {
    return target_walk(s, path, true, made, made_n, err);
}

mpx_status repl_check_target(const mpx_session *s, const char *path, mpx_error *err) {
    return target_walk(s, path, false, NULL, 0, err);
}

/* A path as its folder's real path and its name: two spellings of one
 * target (./x, dir/../x, a linked folder) come out the same. The folder
 * must exist (after repl_make_parent); else the path as given. */
static void target_key(const char *path, char *key, size_t n) {
    char dir[1024], real[PATH_MAX];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    if (mpx_path_folder(path, dir, sizeof dir) && realpath(dir, real)) snprintf(key, n, "%s/%s", real, base);
    else snprintf(key, n, "%s", path);
}

mpx_status repl_distinct_targets(const char *const *paths, int n, mpx_error *err) {
    char a[PATH_MAX + 256], b[PATH_MAX + 256];
    for (int i = 0; i < n; i++)
        for (int j = i + 1; paths[i] && j < n; j++) {
            if (!paths[j]) continue;
            target_key(paths[i], a, sizeof a);
            target_key(paths[j], b, sizeof b);
            struct stat si, sj;
            const bool same = strcmp(a, b) == 0 || (stat(paths[i], &si) == 0 && stat(paths[j], &sj) == 0 &&
                                                     si.st_dev == sj.st_dev && si.st_ino == sj.st_ino);
            if (same)
                return mpx_error_set(err, MPX_E_ARG, "%s and %s are one file: the command writes both; give each "
                                     "its own name", paths[i], paths[j]);
        }
    return MPX_OK;
}

void repl_unmake_parent(const char *path, const char *made) {
    if (!made || !*made) return;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    size_t top = strlen(made);
    /* Deepest first; rmdir leaves a folder something was put in since. */
    for (char *slash = strrchr(dir, '/'); slash && (size_t)(slash - dir) >= top; slash = strrchr(dir, '/')) {
        *slash = '\0';
        if (rmdir(dir) != 0) break;
    }
}

mpx_status repl_file_id(const char *path, char *out, size_t n, mpx_error *err) {
    int fd = mpx_file_open_read(path, false, err);
    if (fd < 0) return err->status;
    uLong crc = crc32(0L, Z_NULL, 0);
    unsigned long long size = 0;
    unsigned char buf[1 << 16];
    for (;;) {
        const ssize_t k = read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            const int e = errno;
            close(fd);
            return mpx_error_set(err, MPX_E_IO, "%s: %s", path, strerror(e));
        }
        if (k == 0) break;
        crc = crc32(crc, buf, (uInt)k);
        size += (unsigned long long)k;
    }
    close(fd);
    snprintf(out, n, "%llu bytes, crc32 %08lx", size, (unsigned long)crc);
    return MPX_OK;
}

const char *repl_path_tail(const char *path, char *buf, size_t n) {
    if (n) buf[0] = '\0';
    struct stat st;
    if (!path || !*path || stat(path, &st) == 0 || errno != ENOENT || strlen(path) >= 4096) return buf;
    /* Step by step: each part that does not exist is replaced by the closest
     * entry of the folder so far (a typo in a folder's name as in the file's). */
    char out[4096] = "", part[4096];
    const char *p = path;
    if (*p == '/') snprintf(out, sizeof out, "/"), p++;
    while (*p) {
        size_t len = strcspn(p, "/");
        snprintf(part, sizeof part, "%.*s", (int)len, p);
        size_t ol = strlen(out);
        char cand[8192];
        snprintf(cand, sizeof cand, "%s%s", out, part);
        if (*part && stat(cand, &st) != 0) {
            DIR *d = opendir(ol ? out : ".");
            if (!d) return buf;
            /* readdir reuses its entries, which a hint would point into: each
             * entry is checked alone (a plausible typo?) and the best copied. */
            char best[256] = "";
            size_t best_dist = (size_t)-1;
            for (struct dirent *e; (e = readdir(d)) != NULL;) {
                if (e->d_name[0] == '.' && part[0] != '.') continue;
                size_t dist = mpx_name_distance(part, e->d_name);
                mpx_name_hint one;
                mpx_name_hint_init(&one, part);
                mpx_name_hint_add(&one, e->d_name);
                if (mpx_name_hint_get(&one) && dist < best_dist) {
                    best_dist = dist;
                    snprintf(best, sizeof best, "%s", e->d_name);
                }
            }
            closedir(d);
            if (!*best) return buf;
            snprintf(part, sizeof part, "%s", best);
        }
        if (ol + strlen(part) + 2 >= sizeof out) return buf;
        strcat(out, part);
        p += len;
        if (*p == '/') strcat(out, "/"), p++;
    }
    if (strcmp(out, path) != 0 && stat(out, &st) == 0) snprintf(buf, n, "; did you mean %s?", out);
    return buf;
}

mpx_status repl_write_file(const mpx_session *s, const char *path, const char *text, mpx_error *err) {
    mpx_status mk = repl_make_parent(s, path, err);
    if (mk) return mk;
    return mpx_file_write_all(path, s ? s->guard : NULL, text, strlen(text), err);
}

mpx_status repl_emit(mpx_session *s, char *text, const char *path, mpx_error *err) {
    if (!text) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_status st = MPX_OK;
    if (path) {
        size_t n = strlen(text);
        bool nl = n && text[n - 1] == '\n';
        if (!nl) {
            char *t2 = realloc(text, n + 2);
            if (!t2) {
                free(text);
                return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            }
            text = t2;
            text[n] = '\n';
            text[n + 1] = '\0';
        }
        st = repl_write_file(s, path, text, err);
        if (!st) fprintf(s->info, "wrote %s\n", path);
    } else {
        fputs(text, s->out);
        size_t n = strlen(text);
        if (!n || text[n - 1] != '\n') fputc('\n', s->out);
    }
    free(text);
    return st;
}

const mpx_node *repl_node_named(const mpx_session *s, const char *name, mpx_error *err) {
    const mpx_node *n = mpx_graph_find_node(s->graph, name);
    if (!n) {
        char hint[300];
        mpx_error_set(err, MPX_E_ARG, "no node named \"%s\"%s", name,
                      repl_name_tail(s->graph, name, true, false, hint, sizeof hint));
    }
    return n;
}
