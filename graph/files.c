/* files.c - opening a file to read it, and what both loaders do with a model
 * file once its bytes are read: find its folder (side files and external data
 * are relative to it); and the memory budget every file read is held to. */
#include "graph_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "a special file";
}

/* O_NONBLOCK: open() on a FIFO without a writer (or on some devices) would
 * wait forever; opened this way it returns at once and fstat tells what it
 * is. A FIFO accepted (allow_pipe) then reads as end of file when no writer
 * comes, and blocks only while a writer is there. */
int mpx_file_open_read(const char *path, bool allow_pipe, mpx_error *err) {
    if (!path || !*path) {
        mpx_error_set(err, MPX_E_IO, "no file name");
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        mpx_error_at(err, MPX_E_IO, path, 0, 0, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        mpx_error_at(err, MPX_E_IO, path, 0, 0, "cannot open: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(sb.st_mode) && !(allow_pipe && S_ISFIFO(sb.st_mode))) {
        mpx_error_at(err, MPX_E_IO, path, 0, 0, "%s, not a regular file", kind_of(sb.st_mode));
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        mpx_error_at(err, MPX_E_IO, path, 0, 0, "cannot read: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

mpx_graph *mpx_load_in_folder(void *buf, size_t len, const char *path, mpx_buffer_loader load,
                              mpx_error *err) {
    char *dir = malloc(strlen(path) + 2);
    mpx_graph *g = NULL;
    if (!dir) {
        mpx_error_at(err, MPX_E_NOMEM, path, 0, 0, "out of memory");
    } else {
        const char *slash = strrchr(path, '/');
        if (!slash) strcpy(dir, ".");
        else if (slash == path) strcpy(dir, "/");
        else {
            memcpy(dir, path, (size_t)(slash - path));
            dir[slash - path] = '\0';
        }
        g = load(buf, len, path, dir, err);
    }
    free(dir);
    free(buf);
    return g;
}

const char *mpx_path_folder(const char *path, char *buf, size_t n) {
    if (!n || strlen(path) >= n) return NULL;
    snprintf(buf, n, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash) snprintf(buf, n, ".");
    else if (slash == buf) buf[1] = '\0';
    else *slash = '\0';
    return buf;
}

bool mpx_path_has_dotdot(const char *path) {
    for (const char *s = path; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.') return true;
        s += n;
        while (*s == '/') s++;
    }
    return false;
}

/* ---- the memory budget ----------------------------------------------------------- */

static _Atomic uint64_t budget;

static uint64_t default_budget(void) {
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || ps <= 0) return (uint64_t)1 << 30;
    return (uint64_t)pages * (uint64_t)ps / 2;
}

void mpx_set_memory_budget(uint64_t bytes) { atomic_store(&budget, bytes ? bytes : default_budget()); }

uint64_t mpx_memory_budget(void) {
    uint64_t b = atomic_load(&budget);
    if (!b) {
        b = default_budget();
        atomic_store(&budget, b);
    }
    return b;
}

static void human(char *buf, size_t n, uint64_t bytes) {
    if (bytes >= (uint64_t)1 << 30) snprintf(buf, n, "%.1f GB", (double)bytes / (double)(1u << 30));
    else if (bytes >= (uint64_t)1 << 20) snprintf(buf, n, "%.1f MB", (double)bytes / (double)(1u << 20));
    else snprintf(buf, n, "%llu bytes", (unsigned long long)bytes);
}

mpx_status mpx_check_budget(const char *path, const char *what, uint64_t bytes, mpx_error *err) {
    uint64_t b = mpx_memory_budget();
    if (bytes <= b) return MPX_OK;
    char claim[32], limit[32];
    human(claim, sizeof claim, bytes);
    human(limit, sizeof limit, b);
    return mpx_error_at(err, MPX_E_LIMIT, path, 0, 0,
                        "%s claimed for %s, more than the memory budget of %s (set memory <MB>)", claim, what, limit);
}
