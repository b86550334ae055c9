/* write.c - `export`'s entry point: checks of the target path, the
 * source read again (or built from the IR), the edit (edit.c), and
 * the files written whole or not at all (mpx_file_open_write).
 *
 * Ownership: everything one export allocates lives in its `ex` (see
 * export_internal.h) and is freed here, on success and on failure.
 */
#include "export_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The loaded model and the files its load read, whether or not the caller's
 * guard holds them (a program using libmpx may pass none). */
static mpx_status check_read(const mpx_graph *g, const mpx_file_guard *guard, const char *path, mpx_error *err) {
    mpx_status st = mpx_file_check_target(path, guard, err);
    if (st) return st;
    mpx_file_guard *own = mpx_file_guard_new();
    if (!own) return ex_oom(err);
    if (!(st = mpx_file_guard_add_model(own, g, err))) st = mpx_file_check_target(path, own, err);
    mpx_file_guard_free(own);
    return st;
}

static mpx_status check_path(const mpx_graph *g, const mpx_file_guard *guard, const char *path, bool force,
                             mpx_error *err) {
    if (!path || !*path) return mpx_error_set(err, MPX_E_ARG, "export needs a file name (file.onnx)");
    mpx_status rd = check_read(g, guard, path, err);
    if (rd) return rd;
    char dir[1024];
    struct stat sd, sp;
    if (!mpx_path_folder(path, dir, sizeof dir)) return mpx_error_set(err, MPX_E_ARG, "path too long: %s", path);
    if (stat(dir, &sd) != 0)
        return mpx_error_set(err, MPX_E_IO, "cannot export to %s: the folder %s does not exist (create it first)",
                             path, dir);
    if (!S_ISDIR(sd.st_mode))
        return mpx_error_set(err, MPX_E_IO, "cannot export to %s: %s is not a folder", path, dir);
    if (stat(path, &sp) == 0) {
        if (S_ISDIR(sp.st_mode)) return mpx_error_set(err, MPX_E_IO, "cannot export to %s: it is a folder", path);
        if (!force)
            return mpx_error_set(err, MPX_E_IO, "%s exists: add --force to replace it", path);
    }
    return MPX_OK;
}

static mpx_status read_all(const char *path, uint8_t **buf, size_t *len, mpx_error *err) {
    /* Opened as every reader opens (a regular file, without blocking): the
     * name may no longer be the file the session loaded. */
    mpx_error oerr;
    int fd = mpx_file_open_read(path, false, &oerr);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        if (fd >= 0) close(fd);
        return mpx_error_set(err, MPX_E_IO, "cannot read the loaded model %s again: %s", path,
                             fd < 0 ? oerr.msg : strerror(errno));
    }
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return mpx_error_set(err, MPX_E_IO, "cannot read %s: not a regular file", path);
    }
    *buf = malloc((size_t)n + 1);
    if (!*buf) {
        fclose(f);
        return ex_oom(err);
    }
    size_t got = fread(*buf, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) {
        free(*buf);
        *buf = NULL;
        return mpx_error_set(err, MPX_E_IO, "cannot read %s: short read", path);
    }
    *len = got;
    return MPX_OK;
}

static bool has_ext(const char *path, const char *ext) {
    size_t n = strlen(path), k = strlen(ext);
    return n >= k && strcmp(path + n - k, ext) == 0;
}

mpx_status mpx_export_onnx(const mpx_plan *p, const char *path, bool force, bool external,
                           const mpx_file_guard *guard, mpx_export_summary *sum, mpx_error *err) {
    if (!p || !p->g) return mpx_error_set(err, MPX_E_ARG, "no model loaded: load one, then export its plan");
    const mpx_graph *g = p->g;
    if (ex_dtype_of(p->opts.target) == MPX_DT_UNDEFINED)
        return mpx_error_set(err, MPX_E_UNSUPPORTED,
                             "ONNX has no %s type, so a %s plan cannot be written as a model: export with "
                             "target fp16 (or bf16), or deploy tf32 through the runtime's own setting",
                             p->opts.target->name, p->opts.target->name);
    /* The export edits the file's own nodes, and a model of opset 1-6 was
     * read with nodes rewritten to opset 7's forms (graph/onnx_legacy.c):
     * the plan's sites do not map back onto the old nodes. */
    if (g->opset_file > 0 && g->opset_file < 7)
        return mpx_error_set(err, MPX_E_UNSUPPORTED,
                             "the model is ONNX opset %d, which mpx reads in opset 7's form; export writes the "
                             "file's own nodes, so convert the model to opset 7 or newer first (python3 -c \"import "
                             "onnx, onnx.version_converter as v; onnx.save(v.convert_version(onnx.load('in.onnx'), 7), "
                             "'out.onnx')\"), load that and export it",
                             g->opset_file);
    /* A fused node's result goes on unrounded: an ONNX node of bf16 inputs
     * writes bf16, so no file says "this low node's output, not rounded". */
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_plan_node *pn = &p->nodes[g->nodes[i]->index];
        if (pn->fused && pn->low)
            return mpx_error_set(err, MPX_E_UNSUPPORTED,
                                 "node \"%s\" (%s) is fused by rule #%d: it hands its %s result on unrounded, "
                                 "which no ONNX node says (a node of %s inputs writes %s); a plan with fuse "
                                 "rules emulates a runtime's fused ops and cannot be exported: remove the rule "
                                 "(unrule %d) to export",
                                 g->nodes[i]->name, g->nodes[i]->op_type, pn->fuse_rule + 1, pn->compute->name,
                                 pn->compute->name, pn->compute->name, pn->fuse_rule + 1);
    }
    if (g->split_node)
        return mpx_error_set(err, MPX_E_UNSUPPORTED,
                             "node \"%s\" (%s, an experimental op of the model's opset) is read by mpx as "
                             "standard ops; export writes the file's own nodes, so replace it with standard ops in "
                             "the file first", g->split_node, g->split_op);
    /* An all-fp32 plan of an .onnx model would write the loaded model again;
     * of a JSON model it writes the fp32 reference as ONNX, which is useful. */
    bool from_file = g->path && has_ext(g->path, ".onnx");
    /* An ONNX file keeps its subgraphs, which the edit follows
     * (scope.c); a model built from JSON has none to write. */
    for (int i = 0; !from_file && i < g->n_nodes; i++)
        if (g->nodes[i]->op == MPX_OP_If || g->nodes[i]->body)
            return mpx_error_set(err, MPX_E_UNSUPPORTED,
                                 "node \"%s\" (%s): a model with control flow exports from its ONNX file only",
                                 g->nodes[i]->name, g->nodes[i]->op_type);
    if (from_file && p->counts.low_nodes == 0 && p->n_casts == 0 && p->n_weights == 0)
        return mpx_error_set(err, MPX_E_ARG,
                             "the plan runs no node in %s (nothing differs from the loaded model): colour "
                             "nodes green or gray, or check the rules, before exporting",
                             p->opts.target->name);
    mpx_status st = check_path(g, guard, path, force, err);
    if (st) return st;
    /* The external data file beside the model: "<file name>.data". */
    char data_path[1100];
    snprintf(data_path, sizeof data_path, "%s.data", path);
    const char *location = strrchr(data_path, '/') ? strrchr(data_path, '/') + 1 : data_path;

    ex e;
    memset(&e, 0, sizeof e);
    e.p = p;
    e.g = g;
    e.a = mpx_arena_new();
    if (!e.a) return ex_oom(err);
    e.sum.target = p->opts.target;
    e.sum.accum = p->opts.accum;
    e.sum.accum_block = p->opts.accum_block;
    e.sum.keep_io = p->opts.keep_io;
    /* the model's metadata: the default accumulation, and how many low
     * nodes an accum rule gave another (each node's doc string names its own) */
    char value[128];
    int other = 0;
    for (int i = 0; i < g->n_nodes; i++)
        other += p->nodes[i].low && p->nodes[i].accum != p->opts.accum; /* (a low node is a float one: accum set) */
    size_t vo = (size_t)snprintf(value, sizeof value, "%s", mpx_format_name(p->opts.accum));
    if (p->opts.accum_block > 0 && vo < sizeof value)
        vo += (size_t)snprintf(value + vo, sizeof value - vo, " block %d", p->opts.accum_block);
    if (other && vo < sizeof value)
        snprintf(value + vo, sizeof value - vo, "; %d node%s another (their doc strings)", other, other == 1 ? "" : "s");
    e.accum_value = value;
    /* ONNX has no way to say how a sum is ordered or rounded: the accum
     * rules' options are named in the summary, never silently dropped. */
    for (int i = 0; i < g->n_nodes; i++)
        if (p->nodes[i].accum_flags) {
            char opts[64], what[320];
            snprintf(what, sizeof what, "%s (%s)", g->nodes[i]->name,
                     mpx_rules_accum_flags_str(p->nodes[i].accum_flags, "+", opts, sizeof opts));
            ex_add_name(e.sum.accum_options, sizeof e.sum.accum_options, &e.sum.n_accum_options, what);
        }

    uint8_t *src = NULL, *out = NULL;
    size_t src_len = 0;
    if (from_file) {
        st = read_all(g->path, &src, &src_len, err);
        if (!st) {
            e.m = onnx__model_proto__unpack(NULL, src_len, src);
            if (!e.m || !e.m->graph)
                st = mpx_error_set(err, MPX_E_PARSE, "%s no longer reads as an ONNX model: load it again", g->path);
            else st = ex_internalize(&e, g->path, err);
        }
    } else {
        st = ex_build_model(&e, err);
        src_len = 0;
    }
    if (!st) st = ex_apply_plan(&e, err);
    size_t len = 0, data_len = 0;
    uint8_t *data = NULL;
    if (!st) {
        len = onnx__model_proto__get_packed_size(e.m);
        /* Over protobuf's 2 GB, or asked for: the weights go beside the model. */
        if (external || len > (size_t)INT32_MAX) {
            if (!(st = check_path(g, guard, data_path, force, err)))
                st = ex_externalize(&e, location, &data, &data_len, err);
            if (!st) len = onnx__model_proto__get_packed_size(e.m);
        }
        if (!st && len > (size_t)INT32_MAX)
            st = mpx_error_set(err, MPX_E_LIMIT,
                               "the exported model would be %.1f GB even with its weights as external data: "
                               "protobuf cannot hold more than 2 GB", (double)len / 1e9);
    }
    if (!st && !(out = malloc(len ? len : 1))) st = ex_oom(err);
    if (!st) {
        onnx__model_proto__pack(e.m, out);
        /* Both files written aside first; the weights take their name
         * before the model that refers to them. */
        mpx_out_file *od = NULL, *om = NULL;
        if (data && !(st = mpx_file_open_write(data_path, guard, &od, err)))
            st = mpx_out_file_write(od, data, data_len, err);
        if (!st && !(st = mpx_file_open_write(path, guard, &om, err))) st = mpx_out_file_write(om, out, len, err);
        if (!st && od) {
            st = mpx_out_file_commit(od, guard, err);
            od = NULL;
            if (!st) {
                e.sum.external_bytes = (int64_t)data_len;
                snprintf(e.sum.external, sizeof e.sum.external, "%s", data_path);
            }
        }
        if (!st) {
            st = mpx_out_file_commit(om, guard, err);
            om = NULL;
            if (st && data) unlink(data_path);
        }
        mpx_out_file_abort(od);
        mpx_out_file_abort(om);
    }
    free(data);
    ex_undo_swaps(&e);
    if (e.m && from_file) onnx__model_proto__free_unpacked(e.m, NULL);
    free(out);
    free(src);
    free(e.names);
    free(e.new_nodes);
    free(e.convs);
    for (int i = 0; i < e.n_scopes; i++) free(e.scopes[i].extra_init);
    free(e.scopes);
    mpx_arena_free(e.a);
    if (st) return st;
    e.sum.bytes_before = from_file ? (int64_t)src_len : -1;
    e.sum.bytes_after = (int64_t)len;
    if (sum) *sum = e.sum;
    return MPX_OK;
}
