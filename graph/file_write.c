/* file_write.c - the one way mpx writes a file: whole or not at all, never
 * through a planted link, never over a file the session read.
 *
 * A write goes to a temporary file that mkstemp creates exclusively
 * (O_CREAT|O_EXCL: it never opens an existing name, so a symlink planted at
 * a predictable name cannot redirect it) in the target's own folder (so the
 * final rename is atomic: readers see the old file or the new one, and two
 * writers of one target each rename a complete file). The data is flushed to
 * disk before the rename, so a crash or a full disk leaves the old file.
 *
 * The guard holds the identity (device, inode) of every file the session
 * read: a target that is one of them, a symlink to one or a hard link of one
 * has the same identity and is refused. The check is made before writing
 * and again just before the rename (a link may appear in between).
 *
 * Temporary files being written are listed in a fixed table that a signal
 * handler may walk (mpx_file_remove_pending: unlink is async-signal-safe),
 * so SIGINT or SIGTERM leaves no temporary file behind.
 */
#define _GNU_SOURCE /* mkostemp */
#include "graph_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the guard ------------------------------------------------------------- */

typedef struct guard_id {
    dev_t dev;
    ino_t ino;
    char *path; /* as the session named it, for messages */
    char *what; /* "the model this session loaded", ... */
    int refs;   /* adds not yet dropped (a file read for two reasons stays guarded until both end) */
} guard_id;

struct mpx_file_guard {
    guard_id *ids;
    size_t n, cap;
};

mpx_file_guard *mpx_file_guard_new(void) { return calloc(1, sizeof(mpx_file_guard)); }

void mpx_file_guard_free(mpx_file_guard *g) {
    if (!g) return;
    for (size_t i = 0; i < g->n; i++) {
        free(g->ids[i].path);
        free(g->ids[i].what);
    }
    free(g->ids);
    free(g);
}

static const guard_id *find_id(const mpx_file_guard *g, dev_t dev, ino_t ino) {
    for (size_t i = 0; g && i < g->n; i++)
        if (g->ids[i].dev == dev && g->ids[i].ino == ino) return &g->ids[i];
    return NULL;
}

mpx_status mpx_file_guard_add(mpx_file_guard *g, const char *path, const char *what, mpx_error *err) {
    struct stat st;
    /* stat follows links: the identity is the file's, whatever name led to it.
     * A name that is gone (or never was a file) protects nothing. */
    if (!g || !path || !*path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return MPX_OK;
    guard_id *had = (guard_id *)find_id(g, st.st_dev, st.st_ino);
    if (had) {
        had->refs++;
        return MPX_OK;
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 8;
        guard_id *n = realloc(g->ids, cap * sizeof *n);
        if (!n) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        g->ids = n, g->cap = cap;
    }
    char *copy = strdup(path), *wcopy = strdup(what ? what : "a file this session read");
    if (!copy || !wcopy) {
        free(copy);
        free(wcopy);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    g->ids[g->n++] = (guard_id){st.st_dev, st.st_ino, copy, wcopy, 1};
    return MPX_OK;
}

void mpx_file_guard_drop(mpx_file_guard *g, const char *path) {
    struct stat st;
    if (!g || !path || stat(path, &st) != 0) return;
    for (size_t i = 0; i < g->n; i++)
        if (g->ids[i].dev == st.st_dev && g->ids[i].ino == st.st_ino) {
            if (--g->ids[i].refs > 0) return;
            free(g->ids[i].path);
            free(g->ids[i].what);
            g->ids[i] = g->ids[--g->n];
            return;
        }
}

typedef struct graph_add {
    mpx_file_guard *g;
    mpx_status st;
    mpx_error *err;
} graph_add;

static void add_side_file(void *ctx, const char *path) {
    graph_add *a = ctx;
    if (!a->st) a->st = mpx_file_guard_add(a->g, path, "external data of the model this session loaded", a->err);
}

mpx_status mpx_file_guard_add_model(mpx_file_guard *g, const mpx_graph *model, mpx_error *err) {
    mpx_status st = mpx_file_guard_add(g, model->path, "the model this session loaded", err);
    graph_add a = {g, st, err};
    if (!st) mpx_graph_each_file(model, add_side_file, &a);
    return a.st;
}

size_t mpx_file_guard_count(const mpx_file_guard *g) { return g ? g->n : 0; }

mpx_status mpx_file_check_target(const char *path, const mpx_file_guard *g, mpx_error *err) {
    if (!path || !*path) return mpx_error_set(err, MPX_E_ARG, "no file name given");
    struct stat st;
    if (stat(path, &st) != 0) return MPX_OK; /* nothing there (or a dangling link: replaced, not followed) */
    if (S_ISDIR(st.st_mode)) return mpx_error_set(err, MPX_E_IO, "cannot write %s: it is a folder", path);
    /* A device, FIFO or socket (also through a link: /dev/stdout): the
     * rename that puts a written file in place would replace it (as root,
     * /dev/null itself) instead of writing into it. */
    if (!S_ISREG(st.st_mode))
        return mpx_error_set(err, MPX_E_IO, "cannot write %s: it is %s, not a regular file (mpx writes a file whole "
                             "and renames it into place; commands that print leave the file name out)", path,
                             S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : S_ISFIFO(st.st_mode) ? "a FIFO"
                             : S_ISSOCK(st.st_mode) ? "a socket" : "a special file");
    const guard_id *id = find_id(g, st.st_dev, st.st_ino);
    if (id) {
        if (strcmp(id->path, path) == 0)
            return mpx_error_set(err, MPX_E_ARG, "%s is %s: write to another file", path, id->what);
        return mpx_error_set(err, MPX_E_ARG, "%s is %s, %s (a link to it or another name of it): write to "
                             "another file", path, id->path, id->what);
    }
    return MPX_OK;
}

/* ---- temporary files a signal may have to remove ---------------------------- */

/* Enough for every write one session has open at once (a command writes one
 * file at a time; export writes two). A write beyond it still works and is
 * still removed on error, only not by a signal handler. */
#define PENDING_MAX 16
#define PENDING_PATH 4096

static char pending_path[PENDING_MAX][PENDING_PATH];
static volatile sig_atomic_t pending_used[PENDING_MAX];
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static int pending_take(const char *tmp) {
    if (strlen(tmp) >= PENDING_PATH) return -1;
    pthread_mutex_lock(&pending_lock);
    int slot = -1;
    for (int i = 0; i < PENDING_MAX && slot < 0; i++)
        if (!pending_used[i]) slot = i;
    if (slot >= 0) {
        memcpy(pending_path[slot], tmp, strlen(tmp) + 1);
        pending_used[slot] = 1; /* after the path: a handler never sees half of it */
    }
    pthread_mutex_unlock(&pending_lock);
    return slot;
}

static void pending_drop(int slot) {
    if (slot < 0) return;
    pthread_mutex_lock(&pending_lock);
    pending_used[slot] = 0;
    pthread_mutex_unlock(&pending_lock);
}

void mpx_file_remove_pending(void) {
    for (int i = 0; i < PENDING_MAX; i++)
        if (pending_used[i]) unlink(pending_path[i]);
}

/* ---- writing ----------------------------------------------------------------- */

struct mpx_out_file {
    char *path, *tmp;
    int fd, slot;
    FILE *stream; /* made on request; owns fd then */
    mpx_status failed; /* a write already failed: commit refuses */
    int err_no;
};

/* renamed: the temporary name is the target's now (and may be another
 * writer's temporary name again): nothing to remove. */
static void out_release(mpx_out_file *o, bool renamed) {
    if (o->stream) fclose(o->stream);
    else if (o->fd >= 0) close(o->fd);
    pending_drop(o->slot);
    if (!renamed) unlink(o->tmp);
    free(o->path);
    free(o->tmp);
    free(o);
}

mpx_status mpx_file_open_write(const char *path, const mpx_file_guard *g, mpx_out_file **out, mpx_error *err) {
    *out = NULL;
    mpx_status st = mpx_file_check_target(path, g, err);
    if (st) return st;
    mpx_out_file *o = calloc(1, sizeof *o);
    size_t n = strlen(path);
    if (!o || !(o->path = strdup(path)) || !(o->tmp = malloc(n + 16))) {
        if (o) free(o->path);
        free(o);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    /* "<dir>/.<name>.XXXXXX": beside the target (same file system for the
     * rename), hidden, and unique per writer; the name cut where the whole
     * would pass the file system's limit (a 250-character name is valid). */
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0, bl = strlen(path + dl);
    enum { NAME_LIMIT = 255 - 8 /* "." and ".XXXXXX" */ };
    snprintf(o->tmp, n + 16, "%.*s.%.*s.XXXXXX", (int)dl, path, (int)(bl < NAME_LIMIT ? bl : NAME_LIMIT), path + dl);
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    if (o->fd < 0) {
        int e = errno;
        /* the folder, for the message: "." for a bare name */
        char *dir = o->tmp;
        if (dl) dir[dl > 1 ? dl - 1 : 1] = '\0';
        else strcpy(dir, ".");
        struct stat ds;
        if ((e == ENOENT || e == ENOTDIR) && stat(dir, &ds) != 0)
            st = mpx_error_set(err, MPX_E_IO, "cannot write %s: the folder %s does not exist", path, dir);
        else st = mpx_error_set(err, MPX_E_IO, "cannot write in %s (for %s): %s", dir, path, strerror(e));
        free(o->path);
        free(o->tmp);
        free(o);
        return st;
    }
    o->slot = pending_take(o->tmp);
    /* mkstemp makes the file 0600; what mpx writes is for others to read too,
     * as a file made by open(2) with the usual umask would be. */
    mode_t um = umask(0);
    umask(um);
    if (fchmod(o->fd, 0666 & ~um) != 0) { /* the file is still ours and usable */ }
    *out = o;
    return MPX_OK;
}

FILE *mpx_out_file_stream(mpx_out_file *o) {
    if (!o->stream) o->stream = fdopen(o->fd, "w");
    return o->stream;
}

mpx_status mpx_out_file_write(mpx_out_file *o, const void *buf, size_t len, mpx_error *err) {
    if (o->failed) return mpx_error_set(err, MPX_E_IO, "cannot write %s: %s", o->path, strerror(o->err_no));
    if (o->stream) {
        if (len && fwrite(buf, 1, len, o->stream) != len) {
            o->failed = MPX_E_IO, o->err_no = errno ? errno : EIO;
            return mpx_error_set(err, MPX_E_IO, "cannot write %s: %s", o->path, strerror(o->err_no));
        }
        return MPX_OK;
    }
    const uint8_t *p = buf;
    size_t off = 0;
    while (off < len) {
        ssize_t k = write(o->fd, p + off, len - off);
        if (k < 0) {
            if (errno == EINTR) continue;
            o->failed = MPX_E_IO, o->err_no = errno;
            return mpx_error_set(err, MPX_E_IO, "cannot write %s: %s", o->path, strerror(errno));
        }
        off += (size_t)k;
    }
    return MPX_OK;
}

mpx_status mpx_out_file_commit(mpx_out_file *o, const mpx_file_guard *g, mpx_error *err) {
    mpx_status st = MPX_OK;
    int e = o->failed ? o->err_no : 0;
    if (!e && o->stream) {
        if (fflush(o->stream) != 0 || ferror(o->stream)) e = errno ? errno : EIO;
    }
    /* On disk before it takes the name: a crash after the rename must not
     * leave an empty file where the old one was. */
    if (!e && fsync(o->stream ? fileno(o->stream) : o->fd) != 0 && errno != EINVAL) e = errno;
    if (e) st = mpx_error_set(err, MPX_E_IO, "cannot write %s: %s", o->path, strerror(e));
    if (!st) st = mpx_file_check_target(o->path, g, err);
    bool renamed = false;
    if (!st) {
        if (rename(o->tmp, o->path) == 0) renamed = true;
        else st = mpx_error_set(err, MPX_E_IO, "cannot write %s: %s", o->path, strerror(errno));
    }
    out_release(o, renamed);
    return st;
}

void mpx_out_file_abort(mpx_out_file *o) {
    if (o) out_release(o, false);
}

mpx_status mpx_file_write_all(const char *path, const mpx_file_guard *g, const void *buf, size_t len,
                              mpx_error *err) {
    mpx_out_file *o;
    mpx_status st = mpx_file_open_write(path, g, &o, err);
    if (st) return st;
    st = mpx_out_file_write(o, buf, len, err);
    if (st) {
        mpx_out_file_abort(o);
        return st;
    }
    return mpx_out_file_commit(o, g, err);
}
