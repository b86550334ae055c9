/* data_npz.c - NumPy .npz archives (np.savez, np.savez_compressed) and the
 * sniffing of data files by content.
 *
 * An .npz is a zip of .npy members. libzip reads the archive (stored and
 * deflated members, zip64, CRC checked as it reads); each member is
 * decompressed into memory and handed to the one .npy reader
 * (mpx_npy_read_mem), so .npy and .npz cannot disagree. */
#include "mpx_readers.h"

#include <errno.h>
#include <sndfile.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

/* A member larger than this is refused before it is decompressed (a zip bomb
 * claims gigabytes): 8 bytes per element at mpx's element limit. */
#define MAX_MEMBER ((zip_uint64_t)MPX_MAX_ELEMS * 8u + 65536u)

static mpx_status npz_error(mpx_error *err, mpx_status st, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static mpx_status npz_error(mpx_error *err, mpx_status st, const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = mpx_error_vnode(err, st, path, NULL, fmt, ap);
    va_end(ap);
    return st;
}

void mpx_npz_free(mpx_npz *z) {
    if (!z) return;
    for (int i = 0; i < z->n; i++) {
        free(z->keys[i]);
        mpx_value_free(&z->values[i]);
    }
    free(z->keys);
    free(z->values);
    memset(z, 0, sizeof *z);
}

/* Member i of an open archive into z (keys[z->n], values[z->n]). */
static mpx_status read_member(const char *path, zip_t *za, zip_uint64_t i, mpx_npz *z, mpx_error *err) {
    zip_stat_t zs;
    if (zip_stat_index(za, i, 0, &zs) != 0 || !(zs.valid & ZIP_STAT_NAME) || !(zs.valid & ZIP_STAT_SIZE))
        return npz_error(err, MPX_E_PARSE, path, "member %llu: %s", (unsigned long long)i, zip_strerror(za));
    size_t nl = strlen(zs.name);
    if (nl < 5 || strcmp(zs.name + nl - 4, ".npy") != 0)
        return npz_error(err, MPX_E_PARSE, path, "member \"%s\" is not an .npy array (an .npz holds only those)", zs.name);
    if (zs.size > MAX_MEMBER)
        return npz_error(err, MPX_E_LIMIT, path, "member \"%s\" claims %llu bytes, more than mpx reads", zs.name,
                         (unsigned long long)zs.size);
    char what[1100];
    snprintf(what, sizeof what, "member \"%s\"", zs.name);
    /* The bytes inflated, then as much again for the array made of them. */
    mpx_status bst = mpx_check_budget(path, what, zs.size * 2, err);
    if (bst) return bst;
    char name[1200];
    snprintf(name, sizeof name, "%s:%s", path, zs.name);
    /* The directory's size is only a claim (a few hundred bytes of archive
     * can claim gigabytes): the buffer grows with the bytes actually
     * inflated, up to the claim, never allocated for the claim up front. */
    zip_uint64_t cap = zs.size < (1u << 20) ? zs.size : (1u << 20);
    unsigned char *buf = malloc(cap ? (size_t)cap : 1u);
    if (!buf) return npz_error(err, MPX_E_NOMEM, path, "out of memory for member \"%s\"", zs.name);
    zip_file_t *zf = zip_fopen_index(za, i, 0);
    zip_int64_t got = zf ? 0 : -1;
    while (zf && (zip_uint64_t)got < zs.size) {
        if ((zip_uint64_t)got == cap) {
            zip_uint64_t grown = cap * 2 < zs.size ? cap * 2 : zs.size;
            unsigned char *b = realloc(buf, (size_t)grown);
            if (!b) {
                zip_fclose(zf);
                free(buf);
                return npz_error(err, MPX_E_NOMEM, path, "out of memory for member \"%s\"", zs.name);
            }
            buf = b;
            cap = grown;
        }
        zip_int64_t k = zip_fread(zf, buf + got, cap - (zip_uint64_t)got);
        if (k < 0) got = -1;
        if (k <= 0) break;
        got += k;
    }
    /* libzip checks the CRC when a read reaches the member's end: one more
     * read must give 0 bytes, or the error (ZIP_ER_CRC). */
    unsigned char extra;
    bool longer = false;
    if (zf && got >= 0 && (zip_uint64_t)got == zs.size) {
        const zip_int64_t k = zip_fread(zf, &extra, 1);
        longer = k > 0;
        if (k != 0) got = -1;
    }
    bool bad = !zf || got < 0 || (zip_uint64_t)got != zs.size;
    char why[200] = "";
    if (longer)
        snprintf(why, sizeof why, "it holds more than the %llu bytes the archive declares for it",
                 (unsigned long long)zs.size);
    else if (bad && zf && got >= 0)
        snprintf(why, sizeof why, "the archive gives %llu bytes, the member holds %lld", (unsigned long long)zs.size,
                 (long long)got);
    else if (bad)
        snprintf(why, sizeof why, "%s", zf ? zip_file_strerror(zf) : zip_strerror(za));
    if (zf && zip_fclose(zf) != 0 && !bad) {
        bad = true;
        snprintf(why, sizeof why, "checksum or length does not match");
    }
    if (bad) {
        free(buf);
        return npz_error(err, MPX_E_PARSE, path, "member \"%s\" cannot be read: %s", zs.name, why);
    }
    mpx_value v;
    mpx_status st = mpx_npy_read_mem(name, buf, (size_t)zs.size, &v, err);
    free(buf);
    if (st) return st;
    char *key = malloc(nl - 3);
    if (!key) {
        mpx_value_free(&v);
        return npz_error(err, MPX_E_NOMEM, path, "out of memory");
    }
    memcpy(key, zs.name, nl - 4);
    key[nl - 4] = '\0';
    z->keys[z->n] = key;
    z->values[z->n] = v;
    z->n++;
    return MPX_OK;
}

mpx_status mpx_npz_read(const char *path, mpx_npz *out, mpx_error *err) {
    int fd = mpx_file_open_read(path, false, err);
    if (fd < 0) return err ? err->status : MPX_E_IO;
    int ze = 0;
    zip_t *za = zip_fdopen(fd, ZIP_CHECKCONS, &ze); /* owns fd once it succeeds */
    if (!za) {
        close(fd);
        zip_error_t e;
        zip_error_init_with_code(&e, ze);
        mpx_status st = npz_error(err, MPX_E_PARSE, path, "not a readable .npz (zip) archive: %s", zip_error_strerror(&e));
        zip_error_fini(&e);
        return st;
    }
    zip_int64_t n = zip_get_num_entries(za, 0);
    mpx_npz z = {0};
    mpx_status st = MPX_OK;
    if (n <= 0) {
        st = npz_error(err, MPX_E_PARSE, path, "the archive holds no arrays");
    } else if (n > 4096) {
        st = npz_error(err, MPX_E_LIMIT, path, "the archive holds %lld members; mpx reads at most 4096", (long long)n);
    } else {
        /* Every member is kept: together they must fit too. */
        zip_uint64_t total = 0;
        for (zip_int64_t i = 0; i < n; i++) {
            zip_stat_t zs;
            if (zip_stat_index(za, (zip_uint64_t)i, 0, &zs) == 0 && (zs.valid & ZIP_STAT_SIZE))
                total = total + zs.size < total ? UINT64_MAX : total + zs.size;
        }
        st = mpx_check_budget(path, "its members", total, err);
    }
    if (!st && n > 0 && n <= 4096) {
        z.keys = calloc((size_t)n, sizeof *z.keys);
        z.values = calloc((size_t)n, sizeof *z.values);
        if (!z.keys || !z.values) st = npz_error(err, MPX_E_NOMEM, path, "out of memory");
        for (zip_int64_t i = 0; !st && i < n; i++) st = read_member(path, za, (zip_uint64_t)i, &z, err);
    }
    zip_discard(za);
    if (st) {
        mpx_npz_free(&z);
        return st;
    }
    *out = z;
    return MPX_OK;
}

const char *mpx_data_kind(const char *path) {
    int fd = mpx_file_open_read(path, false, NULL);
    if (fd < 0) return NULL;
    unsigned char sig[8] = {0};
    ssize_t r = pread(fd, sig, sizeof sig, 0);
    size_t got = r > 0 ? (size_t)r : 0;
    const char *kind = NULL;
    if (got == 8 && memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0) kind = "png";
    else if (got >= 3 && sig[0] == 0xff && sig[1] == 0xd8 && sig[2] == 0xff) kind = "jpeg";
    else if (got >= 6 && memcmp(sig, "\x93NUMPY", 6) == 0) kind = "npy";
    else if (got >= 4 && memcmp(sig, "PK\x03\x04", 4) == 0) kind = "npz";
    if (kind) {
        close(fd);
        return kind;
    }
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *f = sf_open_fd(fd, SFM_READ, &info, SF_FALSE);
    if (!f) {
        close(fd);
        return NULL;
    }
    sf_close(f);
    close(fd);
    return "audio";
}
