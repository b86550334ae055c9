/* files.c - what both loaders do with a model file once its bytes are read:
 * find its folder (side files and external data are relative to it). */
#include "graph_internal.h"

#include <stdlib.h>
#include <string.h>

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

bool mpx_path_has_dotdot(const char *path) {
    for (const char *s = path; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.') return true;
        s += n;
        while (*s == '/') s++;
    }
    return false;
}
