/* external.c - weights as ONNX external data: a model whose weights
 * would make it larger than protobuf's 2 GB limit (or one exported with
 * --external) keeps its initializers' bytes in one file beside it,
 * "<model file name>.data", each initializer naming its location (relative,
 * in the model's folder, as ONNX requires), offset and length.
 *
 * ONNX's convention (onnx.external_data_helper): tensors of 1 KiB and more
 * go out, smaller ones stay inline; offsets are aligned to 4 KiB so a
 * runtime can map them. Only raw_data is moved: typed fields (float_data)
 * of a source model stay inline. */
#include "export_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MIN_BYTES = 1024, ALIGN = 4096 };

/* Every tensor of the main graph that holds weights: initializers and the
 * value attributes of Constant nodes (exporters such as paddle2onnx keep
 * all weights there). visit returns false to stop. */
static bool each_tensor(Onnx__GraphProto *gp, bool (*visit)(Onnx__TensorProto *t, void *ctx), void *ctx) {
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (!visit(gp->initializer[i], ctx)) return false;
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_attribute; k++) {
            Onnx__AttributeProto *a = gp->node[i]->attribute[k];
            if (a->t && !visit(a->t, ctx)) return false;
            for (size_t j = 0; j < a->n_tensors; j++)
                if (!visit(a->tensors[j], ctx)) return false;
        }
    return true;
}

static Onnx__StringStringEntryProto *entry(mpx_arena *a, const char *k, const char *v) {
    Onnx__StringStringEntryProto *e = mpx_arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    onnx__string_string_entry_proto__init(e);
    e->key = mpx_arena_strdup(a, k);
    e->value = mpx_arena_strdup(a, v);
    return e->key && e->value ? e : NULL;
}

typedef struct out_ctx {
    ex *e;
    const char *location;
    uint8_t *buf;
    size_t total, off;
    bool oom;
} out_ctx;

static bool count_out(Onnx__TensorProto *t, void *c_) {
    out_ctx *c = c_;
    if (t->raw_data.len >= MIN_BYTES) c->total = (c->total + ALIGN - 1) / ALIGN * ALIGN + t->raw_data.len;
    return true;
}

static bool move_out(Onnx__TensorProto *t, void *c_) {
    out_ctx *c = c_;
    if (t->raw_data.len < MIN_BYTES) return true;
    c->off = (c->off + ALIGN - 1) / ALIGN * ALIGN;
    memcpy(c->buf + c->off, t->raw_data.data, t->raw_data.len);
    char o[32], l[32];
    snprintf(o, sizeof o, "%zu", c->off);
    snprintf(l, sizeof l, "%zu", t->raw_data.len);
    Onnx__StringStringEntryProto **x = mpx_arena_alloc(c->e->a, 3 * sizeof *x);
    if (x) {
        x[0] = entry(c->e->a, "location", c->location);
        x[1] = entry(c->e->a, "offset", o);
        x[2] = entry(c->e->a, "length", l);
    }
    /* The source tree's pointers are put back before protobuf-c frees it. */
    if (!x || !x[0] || !x[1] || !x[2] || !ex_save_slot(c->e, &t->raw_data.data, &t->raw_data.len) ||
        !ex_save_slot(c->e, &t->external_data, &t->n_external_data)) {
        c->oom = true;
        return false;
    }
    c->off += t->raw_data.len;
    t->raw_data.data = NULL;
    t->raw_data.len = 0;
    t->external_data = x;
    t->n_external_data = 3;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    return true;
}

mpx_status ex_externalize(ex *e, const char *location, uint8_t **data, size_t *data_len, mpx_error *err) {
    out_ctx c = {.e = e, .location = location};
    each_tensor(e->m->graph, count_out, &c);
    *data = NULL;
    *data_len = 0;
    if (c.total == 0) return MPX_OK; /* no weight of 1 KiB or more */
    c.buf = calloc(1, c.total);
    if (!c.buf) return mpx_error_set(err, MPX_E_NOMEM, "out of memory for %zu bytes of external data", c.total);
    if (!each_tensor(e->m->graph, move_out, &c) || c.oom) {
        free(c.buf);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    *data = c.buf;
    *data_len = c.off;
    return MPX_OK;
}

/* The source model's own external data, read back into its initializers
 * (an export is one model and one data file of its own, in its own folder:
 * it cannot point at the source's file). The location was checked when the
 * model was loaded; it is checked again here, since the file is re-read. */
typedef struct in_ctx {
    ex *e;
    const char *src_path;
    char dir[1024];
    mpx_error *err;
    mpx_status st;
} in_ctx;

static bool read_in(Onnx__TensorProto *t, void *c_) {
    in_ctx *c = c_;
    if (!t->has_data_location || t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) return true;
    const char *loc = NULL;
    long long off = 0, len = -1;
    for (size_t k = 0; k < t->n_external_data; k++) {
        const Onnx__StringStringEntryProto *x = t->external_data[k];
        if (!x->key || !x->value) continue;
        if (strcmp(x->key, "location") == 0) loc = x->value;
        else if (strcmp(x->key, "offset") == 0) off = atoll(x->value);
        else if (strcmp(x->key, "length") == 0) len = atoll(x->value);
    }
    const char *name = t->name ? t->name : "?";
    if (!loc || loc[0] == '/' || strstr(loc, "..") || off < 0 || len < 0) {
        c->st = mpx_error_set(c->err, MPX_E_INVALID, "%s: tensor %s has external data this export cannot read",
                              c->src_path, name);
        return false;
    }
    char path[2048];
    snprintf(path, sizeof path, "%s%s", c->dir, loc);
    int fd = mpx_file_open_read(path, false, NULL);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (fd >= 0 && !f) close(fd);
    uint8_t *buf = mpx_arena_alloc(c->e->a, (size_t)len + 1);
    bool ok = f && buf && fseek(f, (long)off, SEEK_SET) == 0 && fread(buf, 1, (size_t)len, f) == (size_t)len;
    if (f) fclose(f);
    if (!ok) {
        c->st = mpx_error_set(c->err, MPX_E_IO, "cannot read %lld bytes of %s's external data from %s", len, name, path);
        return false;
    }
    if (!ex_save_slot(c->e, &t->raw_data.data, &t->raw_data.len) ||
        !ex_save_slot(c->e, &t->external_data, &t->n_external_data)) {
        c->st = mpx_error_set(c->err, MPX_E_NOMEM, "out of memory");
        return false;
    }
    t->raw_data.data = buf;
    t->raw_data.len = (size_t)len;
    t->external_data = NULL;
    t->n_external_data = 0;
    t->has_data_location = 0; /* as a model that never had external data */
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
    return true;
}

mpx_status ex_internalize(ex *e, const char *src_path, mpx_error *err) {
    in_ctx c = {.e = e, .src_path = src_path, .err = err, .st = MPX_OK};
    snprintf(c.dir, sizeof c.dir, "%s", src_path);
    char *slash = strrchr(c.dir, '/');
    if (slash) slash[1] = '\0';
    else c.dir[0] = '\0';
    each_tensor(e->m->graph, read_in, &c);
    return c.st;
}
