/* cmd_model.c - the model commands: load, input shapes, info, ops, show. */
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

mpx_status repl_cmd_load(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    const char *path = args->word[0];
    double t0 = repl_now_ms();
    char beside[4096];
    path = repl_beside_script(s, path, false, beside, sizeof beside);
    mpx_graph *g = mpx_graph_load(path, err);
    if (!g) {
        char hint[4200];
        repl_path_tail(path, hint, sizeof hint);
        size_t len = strlen(err->msg), hl = strlen(hint);
        if (hl && len + hl < sizeof err->msg) memcpy(err->msg + len, hint, hl + 1);
        return err->status ? err->status : MPX_E_IO;
    }
    /* Shapes that are fully declared (no symbolic dims) are inferred at once. */
    mpx_status st = mpx_graph_infer(g, err);
    if (st != MPX_OK) {
        mpx_graph_free(g);
        return st;
    }
    /* the weights packed now, as a runtime's session does, rather than by
     * the first run (numerics: mpx_exec_prepare) */
    mpx_exec_prepare(g);
    double t1 = repl_now_ms();
    if ((st = repl_set_graph(s, g, path, err))) return st;
    char p[32];
    char os[48] = "";
    if (g->opset_file && g->opset_file != g->opset) snprintf(os, sizeof os, " (read as %d)", g->opset);
    fprintf(s->info, "loaded %s: %d nodes, %d tensors, %s params, opset %d%s (%.1f ms)\n", path,
            g->n_nodes, g->n_tensors, mpx_count_str(mpx_graph_param_count(g), p, sizeof p),
            g->opset_file ? g->opset_file : g->opset, os, t1 - t0);
    if (g->opset > MPX_OPSET_NEWEST)
        fprintf(s->info, "warning: %s imports opset %d, newer than the newest mpx follows (%d): its ops are read as "
                "opset %d defines them\n", path, g->opset, MPX_OPSET_NEWEST, MPX_OPSET_NEWEST);
    for (int i = 0; i < g->n_inputs; i++) {
        char sh[256];
        fprintf(s->info, "  input  %s %s %s\n", g->inputs[i]->name, mpx_dtype_name(g->inputs[i]->dtype),
                mpx_tensor_shape_str(g->inputs[i], sh, sizeof sh));
    }
    return MPX_OK;
}

mpx_status repl_input_shape(mpx_session *s, const char *name, const char *shape, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    int rank = 0;
    int64_t dims[MPX_MAX_RANK];
    if ((st = repl_parse_shape(shape, &rank, dims, err))) return st;
    /* Bound in place: inference recomputes everything derived from the
     * inputs' bindings, so a shape that does not fit is undone by putting the
     * old bindings back and inferring again (the same result as before: the
     * arena keeps every value an older run or plan may still point at). */
    mpx_graph *g = s->graph;
    int ni = g->n_inputs;
    struct binding {
        int rank;
        int64_t nelem, dims[MPX_MAX_RANK];
        const char *sym[MPX_MAX_RANK];
    } *was = calloc(ni ? (size_t)ni : 1u, sizeof *was);
    if (!was) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < ni; i++) {
        const mpx_tensor *t = g->inputs[i];
        was[i].rank = t->rank;
        was[i].nelem = t->nelem;
        memcpy(was[i].dims, t->dims, sizeof t->dims);
        memcpy(was[i].sym, t->sym, sizeof t->sym);
    }
    st = mpx_graph_bind_input(g, name, rank, dims, err);
    if (!st) st = mpx_graph_infer(g, err);
    if (!st) st = repl_rebind_graph(s, err);
    if (st) {
        for (int i = 0; i < ni; i++) {
            mpx_tensor *t = g->inputs[i];
            t->rank = was[i].rank;
            t->nelem = was[i].nelem;
            memcpy(t->dims, was[i].dims, sizeof t->dims);
            memcpy(t->sym, was[i].sym, sizeof t->sym);
        }
        mpx_error again;
        mpx_graph_infer(g, &again); /* it inferred before with these bindings */
        free(was);
        return st;
    }
    free(was);
    mpx_exec_prepare(g); /* (what the shapes now allow: a Gemm's transB weights) */
    const mpx_tensor *unknown = NULL;
    int nu = mpx_graph_count_unknown(g, &unknown);
    char m[32];
    fprintf(s->info, "input %s: %s; %d tensors shaped, %s MACs", name, shape, g->n_tensors - nu,
            mpx_count_str(mpx_graph_macs(g), m, sizeof m));
    if (nu) fprintf(s->info, "; %d unknown (first: %s)", nu, unknown ? unknown->name : "?");
    fputc('\n', s->info);
    return MPX_OK;
}

mpx_status repl_cmd_info(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    (void)args; /* no words (dispatch checked) */
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const mpx_graph *g = s->graph;
    char a[32], b[32], sh[256];
    fprintf(s->out, "model     %s\n", s->model_path);
    fprintf(s->out, "name      %s\n", g->name);
    fprintf(s->out, "producer  %s\n", g->producer);
    if (g->opset_file && g->opset_file != g->opset)
        fprintf(s->out, "opset     %d (read as %d)\n", g->opset_file, g->opset);
    else
        fprintf(s->out, "opset     %d\n", g->opset);
    fprintf(s->out, "nodes     %d\ntensors   %d\n", g->n_nodes, g->n_tensors);
    fprintf(s->out, "params    %s\nMACs      %s\n", mpx_count_str(mpx_graph_param_count(g), a, sizeof a),
            mpx_count_str(mpx_graph_macs(g), b, sizeof b));
    for (int i = 0; i < g->n_inputs; i++)
        fprintf(s->out, "input     %s %s %s\n", g->inputs[i]->name, mpx_dtype_name(g->inputs[i]->dtype),
                mpx_tensor_shape_str(g->inputs[i], sh, sizeof sh));
    for (int i = 0; i < g->n_outputs; i++)
        fprintf(s->out, "output    %s %s %s\n", g->outputs[i]->name, mpx_dtype_name(g->outputs[i]->dtype),
                mpx_tensor_shape_str(g->outputs[i], sh, sizeof sh));
    return MPX_OK;
}

typedef struct {
    const char *op;
    int count;
    int64_t params, macs;
    bool macs_unknown;
} op_row;

static int row_cmp(const void *x, const void *y) {
    const op_row *a = x, *b = y;
    if (a->count != b->count) return b->count - a->count;
    return strcmp(a->op, b->op);
}

/* ops [--json [<file>]]: per op type, how many nodes, weights and MACs. */
mpx_status repl_cmd_ops(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    bool json = args->opt[OPT_JSON].given;
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const mpx_graph *g = s->graph;
    op_row *rows = calloc((size_t)g->n_nodes + 1, sizeof *rows);
    int64_t *params = malloc(((size_t)g->n_nodes + 1) * sizeof *params);
    int64_t *macs = malloc(((size_t)g->n_nodes + 1) * sizeof *macs);
    if (!rows || !params || !macs || !mpx_graph_count_once(g, params, macs)) {
        free(rows);
        free(params);
        free(macs);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    int nr = 0;
    int64_t params_read = 0, macs_total = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        int r = 0;
        while (r < nr && strcmp(rows[r].op, n->op_type) != 0) r++;
        if (r == nr) rows[nr++].op = n->op_type;
        rows[r].count++;
        rows[r].params += params[i];
        params_read += params[i];
        if (macs[i] >= 0) rows[r].macs += macs[i];
        else rows[r].macs_unknown = true;
        macs_total = macs[i] < 0 || macs_total < 0 ? -1 : macs_total + macs[i];
    }
    free(params);
    free(macs);
    int64_t params_all = mpx_graph_param_count(g);
    qsort(rows, (size_t)nr, sizeof *rows, row_cmp);
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(root, "ops");
        for (int r = 0; r < nr; r++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "op", rows[r].op);
            cJSON_AddBoolToObject(o, "supported", mpx_op_from_name(rows[r].op) != MPX_OP_UNKNOWN);
            cJSON_AddNumberToObject(o, "count", rows[r].count);
            cJSON_AddNumberToObject(o, "params", (double)rows[r].params);
            if (rows[r].macs_unknown) cJSON_AddNullToObject(o, "macs");
            else cJSON_AddNumberToObject(o, "macs", (double)rows[r].macs);
            cJSON_AddItemToArray(arr, o);
        }
        cJSON_AddNumberToObject(root, "nodes", g->n_nodes);
        cJSON_AddNumberToObject(root, "params", (double)params_all);
        cJSON_AddNumberToObject(root, "params_unread", (double)(params_all - params_read));
        if (macs_total < 0) cJSON_AddNullToObject(root, "macs");
        else cJSON_AddNumberToObject(root, "macs", (double)macs_total);
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        free(rows);
        return repl_emit(s, text, args->opt[OPT_JSON].text, err);
    }
    char a[32], b[32];
    fprintf(s->out, "%-24s %6s %10s %10s\n", "op", "nodes", "params", "MACs");
    for (int r = 0; r < nr; r++)
        fprintf(s->out, "%-24s %6d %10s %10s%s\n", rows[r].op, rows[r].count, mpx_count_str(rows[r].params, a, sizeof a),
                rows[r].macs_unknown ? "?" : mpx_count_str(rows[r].macs, b, sizeof b),
                mpx_op_from_name(rows[r].op) == MPX_OP_UNKNOWN ? "  (not supported)" : "");
    if (params_all > params_read)
        fprintf(s->out, "%-24s %6s %10s %10s\n", "(constants no node reads)", "",
                mpx_count_str(params_all - params_read, a, sizeof a), "");
    fprintf(s->out, "%-24s %6d %10s %10s\n", "total", g->n_nodes, mpx_count_str(params_all, a, sizeof a),
            mpx_count_str(macs_total, b, sizeof b));
    free(rows);
    return MPX_OK;
}

static void print_tensor_line(FILE *out, const char *label, const mpx_tensor *t) {
    char sh[256];
    if (!t) {
        fprintf(out, "  %-7s (omitted)\n", label);
        return;
    }
    fprintf(out, "  %-7s %s %s %s%s\n", label, t->name, mpx_dtype_name(t->dtype), mpx_tensor_shape_str(t, sh, sizeof sh),
            (t->flags & MPX_T_CONSTANT) ? " (constant)" : (t->flags & MPX_T_FOLDED) ? " (folded)" : "");
}

mpx_status repl_cmd_show(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const mpx_node *n = repl_node_named(s, args->word[0], err);
    if (!n) return err->status;
    fprintf(s->out, "node %s\n  op      %s%s%s (opset %d)%s\n", n->name, n->domain[0] ? n->domain : "",
            n->domain[0] ? "." : "", n->op_type, n->opset, n->op == MPX_OP_UNKNOWN ? " (not supported)" : "");
    for (int i = 0; i < n->n_inputs; i++) print_tensor_line(s->out, "input", n->inputs[i]);
    for (int i = 0; i < n->n_outputs; i++) print_tensor_line(s->out, "output", n->outputs[i]);
    for (int i = 0; i < n->n_attrs; i++) {
        const mpx_attr *a = &n->attrs[i];
        fprintf(s->out, "  attr    %s = ", a->name);
        switch (a->type) {
        case MPX_ATTR_INT: fprintf(s->out, "%lld", (long long)a->i); break;
        case MPX_ATTR_FLOAT: fprintf(s->out, "%g", (double)a->f); break;
        case MPX_ATTR_STRING: fprintf(s->out, "\"%s\"", a->s ? a->s : ""); break;
        case MPX_ATTR_INTS:
            for (int k = 0; k < a->n; k++) fprintf(s->out, "%s%lld", k ? "," : "[", (long long)a->ints[k]);
            fprintf(s->out, a->n ? "]" : "[]");
            break;
        case MPX_ATTR_FLOATS:
            for (int k = 0; k < a->n; k++) fprintf(s->out, "%s%g", k ? "," : "[", (double)a->floats[k]);
            fprintf(s->out, a->n ? "]" : "[]");
            break;
        case MPX_ATTR_TENSOR: {
            char sh[256];
            fprintf(s->out, "tensor %s %s", a->t ? mpx_dtype_name(a->t->dtype) : "?",
                    a->t ? mpx_tensor_shape_str(a->t, sh, sizeof sh) : "");
            break;
        }
        default: fprintf(s->out, "(attribute kind %d)", (int)a->type); break;
        }
        fputc('\n', s->out);
    }
    const mpx_cost *c = &n->cost;
    fprintf(s->out, "  cost    macs=%lld params=%lld in_elems=%lld out_elems=%lld in_ch=%lld out_ch=%lld "
            "kernel=%lld group=%lld k=%lld\n", (long long)c->macs, (long long)c->params, (long long)c->in_elems,
            (long long)c->out_elems, (long long)c->in_ch, (long long)c->out_ch, (long long)c->kernel,
            (long long)c->group, (long long)c->k);
    return MPX_OK;
}

