/* fuzz_file.c - the bytes of one fuzz input as a file (fuzz.h). */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix) {
    static char dir[256], path[320];
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/mpx-fuzz-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir)) return NULL;
    }
    snprintf(path, sizeof path, "%s/input%s", dir, suffix);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || w != size) return NULL;
    return path;
}
