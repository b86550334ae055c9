/* replay.c - run a harness on every file of the given folders (or files), once
 * each: the checked-in corpus and past crashes as a regression test, without
 * libFuzzer (any compiler). Exit status 0 when every input was run. */
#define _DEFAULT_SOURCE /* DT_DIR */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return 1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *g = realloc(buf, cap);
            if (!g) {
                free(buf);
                fclose(f);
                return 1;
            }
            buf = g;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        if (!k) break;
        n += k;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: no such file or folder: %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            bad += run_file(argv[i]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            bad += run_file(p);
            files++;
        }
        if (d) closedir(d);
    }
    printf("replay: %d inputs, %d unreadable\n", files, bad);
    return bad || !files;
}
