/* edit.c - the precision plan as edits of an ONNX model (the entry
 * point, paths and writing are write.c's).
 *
 * Ownership: the source model is unpacked by protobuf-c and edited in place
 * only through pointer swaps recorded in `ex.rs` (arrays, strings, tensors
 * replaced by ones from this export's arena); every swap is undone before
 * onnx__model_proto__free_unpacked, so protobuf-c frees exactly what it
 * allocated and the arena frees the rest. Scalars (a Cast's `to`, a
 * value_info's elem_type) are changed in place: nothing to free there.
 *
 * Why edit the source file instead of writing the IR: mpx's IR drops what it
 * does not need (doc strings, value_info, metadata, attribute bytes), and a
 * deployable model must keep all of it. A JSON model has no source proto:
 * build.c makes one from the IR, then the same edits apply.
 *
 * The edits follow the plan and nothing else, so the written model computes
 * what mpx emulated (up to what ONNX cannot say: the accumulation format).
 *  - A constant read low is stored in that format (mpx_format_encode: the
 *    emulation's own rounding), in place when every reader reads it in that
 *    format, else as a second initializer `<name>_<fmt>`. A constant mpx
 *    folded from a chain of nodes is not baked in (it may depend on the bound
 *    input shape): it gets a Cast like any other value.
 *  - One Cast node per plan cast, right after the producer (graph inputs'
 *    Casts first), so the node list stays topologically sorted.
 *  - keep-io: an output the plan computes low is renamed `<name>_<fmt>` at
 *    its producer, and the Cast back writes the output's own name.
 */
#include "export_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- formats and ONNX types ------------------------------------------------------ */

int ex_dtype_of(const mpx_format *f) {
    return f ? (int)f->dtype : MPX_DT_FLOAT; /* (tf32: UNDEFINED, ONNX has no type for it) */
}

/* The type tensor t's values have in format f: a float64 tensor the plan
 * does not hold low (fp32, the reference's precision, or none) stays float64. */
static int ex_dtype_for(const mpx_format *f, const mpx_tensor *t) {
    if ((!f || f->kind == MPX_FMT_FP32) && t && t->dtype == MPX_DT_DOUBLE) return MPX_DT_DOUBLE;
    return ex_dtype_of(f);
}

static bool is_fp8(const mpx_format *f) { return f && f->storage_bits == 8; }

/* Room for one more element in a malloc'ed array (doubling). */
bool ex_grow(void *arr, size_t n, size_t *cap, size_t elem) {
    if (n < *cap) return true;
    size_t c = *cap ? *cap * 2 : 64;
    void *old;
    memcpy(&old, arr, sizeof old);
    void *v = realloc(old, c * elem);
    if (!v) return false;
    memcpy(arr, &v, sizeof v);
    *cap = c;
    return true;
}

/* ---- pointer swaps, undone before protobuf-c frees its tree ---------------------- */

bool ex_save_slot(ex *e, void *slot, size_t *nslot) {
    if (!ex_grow(&e->rs, e->n_rs, &e->cap_rs, sizeof *e->rs)) return false;
    ex_restore *r = &e->rs[e->n_rs++];
    r->slot = slot;
    memcpy(&r->old, slot, sizeof r->old);
    r->nslot = nslot;
    r->nold = nslot ? *nslot : 0;
    return true;
}

void ex_undo_swaps(ex *e) {
    while (e->n_rs) {
        ex_restore *r = &e->rs[--e->n_rs];
        memcpy(r->slot, &r->old, sizeof r->old);
        if (r->nslot) *r->nslot = r->nold;
    }
    free(e->rs);
    e->rs = NULL;
    e->cap_rs = 0;
}

/* ---- names ------------------------------------------------------------------------- */

static bool name_taken(const ex *e, const char *s) {
    if (mpx_graph_find_tensor(e->g, s) || mpx_graph_find_node(e->g, s) || ex_name_in_scopes(e, s)) return true;
    for (size_t i = 0; i < e->n_names; i++)
        if (strcmp(e->names[i], s) == 0) return true;
    return false;
}

/* base + suffix, with _2, _3 ... until it collides with no tensor or node. */
const char *ex_fresh_name(ex *e, const char *base, const char *suffix) {
    size_t n = strlen(base) + strlen(suffix) + 24;
    char *s = mpx_arena_alloc(e->a, n);
    if (!s) return NULL;
    snprintf(s, n, "%s%s", base, suffix);
    for (int k = 2; name_taken(e, s); k++) snprintf(s, n, "%s%s_%d", base, suffix, k);
    if (!ex_grow(&e->names, e->n_names, &e->cap_names, sizeof *e->names)) return NULL;
    e->names[e->n_names++] = s;
    return s;
}

/* ---- weights ----------------------------------------------------------------------- */

void ex_add_name(char *list, size_t size, int *count, const char *name) {
    (*count)++;
    size_t n = strlen(list);
    if (n + strlen(name) + 8 >= size) {
        if (n + 6 < size && !strstr(list, ", ...")) strcat(list, ", ...");
        return;
    }
    if (n) strcat(list, ", ");
    strcat(list, name);
}

/* A TensorProto holding t's value in format f, named name, shaped as src
 * (dims borrowed from src, which outlives the export). */
static Onnx__TensorProto *encode_tensor(ex *e, const mpx_tensor *t, const Onnx__TensorProto *src,
                                        const mpx_format *f, const char *name) {
    Onnx__TensorProto *tp = mpx_arena_alloc(e->a, sizeof *tp);
    if (!tp) return NULL;
    onnx__tensor_proto__init(tp);
    size_t nb = (size_t)f->storage_bits / 8, ne = (size_t)t->nelem;
    uint8_t *raw = mpx_arena_alloc(e->a, ne * nb + 1);
    if (!raw) return NULL;
    for (size_t i = 0; i < ne; i++) {
        uint32_t code = mpx_format_encode(f, t->f32[i]);
        for (size_t b = 0; b < nb; b++) raw[i * nb + b] = (uint8_t)(code >> (8 * b));
    }
    /* The rule the plan, run and compare count weights by. */
    int64_t overflow = 0, flushed = 0;
    mpx_format_count_damage(f, t->f32, ne, &overflow, &flushed);
    if (src) {
        tp->n_dims = src->n_dims;
        tp->dims = src->dims;
        tp->doc_string = src->doc_string;
    } else {
        tp->n_dims = (size_t)(t->rank > 0 ? t->rank : 0);
        tp->dims = mpx_arena_calloc(e->a, tp->n_dims + 1, sizeof *tp->dims);
        if (!tp->dims) return NULL;
        for (size_t i = 0; i < tp->n_dims; i++) tp->dims[i] = t->dims[i];
    }
    tp->has_data_type = true;
    tp->data_type = ex_dtype_of(f);
    tp->name = (char *)name;
    tp->has_raw_data = true;
    tp->raw_data.len = ne * nb;
    tp->raw_data.data = raw;
    mpx_export_summary *s = &e->sum;
    s->weights++;
    s->weight_elems += (int64_t)ne;
    if (overflow) ex_add_name(s->overflow, sizeof s->overflow, &s->n_overflow, t->name);
    if (flushed) ex_add_name(s->flushed, sizeof s->flushed, &s->n_flushed, t->name);
    return tp;
}

/* ---- the edit ---------------------------------------------------------------------- */

Onnx__AttributeProto *ex_find_attr(Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i] && n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

static Onnx__TensorProto *find_init(Onnx__GraphProto *gp, const char *name) {
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name && strcmp(gp->initializer[i]->name, name) == 0) return gp->initializer[i];
    return NULL;
}

static Onnx__ValueInfoProto *find_vi(Onnx__ValueInfoProto **v, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (v[i]->name && strcmp(v[i]->name, name) == 0) return v[i];
    return NULL;
}

static void set_elem_type(Onnx__ValueInfoProto *vi, int dt) {
    if (vi && vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
        vi->type->tensor_type) {
        vi->type->tensor_type->has_elem_type = true;
        vi->type->tensor_type->elem_type = dt;
    }
}

/* A Cast node from -> to (format f) in scope `scope`, anchored after the
 * node of file order `anchor` (-1: before every node of the scope). */
/* A Cast of tensor t's values (from) into format f (to). */
static bool add_cast(ex *e, const mpx_tensor *t, const char *from, const char *to, const mpx_format *f, int anchor,
                     int scope) {
    if (!ex_grow(&e->new_nodes, e->n_new, &e->cap_new, sizeof *e->new_nodes)) return false;
    Onnx__NodeProto *n = mpx_arena_alloc(e->a, sizeof *n);
    Onnx__AttributeProto *at = mpx_arena_calloc(e->a, 2, sizeof *at);
    Onnx__AttributeProto **ats = mpx_arena_calloc(e->a, 2, sizeof *ats);
    char **in = mpx_arena_calloc(e->a, 1, sizeof *in), **out = mpx_arena_calloc(e->a, 1, sizeof *out);
    const char *name = ex_fresh_name(e, to, "_cast");
    if (!n || !at || !ats || !in || !out || !name) return false;
    onnx__node_proto__init(n);
    n->op_type = (char *)"Cast";
    n->name = (char *)name;
    in[0] = (char *)from;
    out[0] = (char *)to;
    n->n_input = n->n_output = 1;
    n->input = in;
    n->output = out;
    for (int i = 0; i < 2; i++) onnx__attribute_proto__init(&at[i]);
    at[0].name = (char *)"to";
    at[0].has_type = true;
    at[0].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    at[0].has_i = true;
    at[0].i = ex_dtype_for(f, t);
    ats[0] = &at[0];
    n->n_attribute = 1;
    if (f == &mpx_format_fp8e4m3_nan) { /* overflow to NaN, as the emulation does */
        at[1].name = (char *)"saturate";
        at[1].has_type = true;
        at[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        at[1].has_i = true;
        at[1].i = 0;
        ats[1] = &at[1];
        n->n_attribute = 2;
    }
    n->attribute = ats;
    e->new_nodes[e->n_new++] = (ex_new_node){n, anchor, scope, false};
    e->sum.casts++;
    return true;
}

static int anchor_of(const mpx_tensor *t) { return t->producer ? t->producer->file_order : -1; }

/* The name under which consumers reading constant t in format f find it
 * (creating the conversion on first use). */
static const char *const_name(ex *e, const mpx_tensor *t, const mpx_format *f) {
    const mpx_format *nat = mpx_plan_dtype_format(t->dtype);
    if (f == nat) return e->base[t->index];
    for (size_t i = 0; i < e->n_convs; i++)
        if (e->convs[i].tensor == t->index && e->convs[i].f == f) return e->convs[i].name;
    if (!ex_grow(&e->convs, e->n_convs, &e->cap_convs, sizeof *e->convs)) return NULL;
    ex_scope *sc = &e->scopes[e->t_scope[t->index]];
    Onnx__GraphProto *gp = sc->gp;
    const char *pn = ex_pname(e, t);
    const mpx_node *prod = t->producer;
    Onnx__TensorProto *init = prod ? NULL : find_init(gp, pn);
    Onnx__NodeProto *cn = prod && prod->op == MPX_OP_Constant ? e->site[prod->file_order] : NULL;
    Onnx__AttributeProto *cv = cn ? ex_find_attr(cn, "value") : NULL;
    const char *name = NULL;
    char suffix[24];
    snprintf(suffix, sizeof suffix, "_%s", f->name);
    if (!t->f32 || (!init && !(cv && cv->t))) {
        /* Folded from a chain: a runtime Cast, never a baked value. */
        name = ex_fresh_name(e, pn, suffix);
        if (!name || !add_cast(e, t, e->base[t->index], name, f, anchor_of(t), e->t_scope[t->index])) return NULL;
    } else if (e->in_place[t->index] == f) {
        name = pn;
        Onnx__TensorProto *tp = encode_tensor(e, t, init ? init : cv->t, f, init ? init->name : cv->t->name);
        if (!tp) return NULL;
        if (init) {
            for (size_t i = 0; i < gp->n_initializer; i++)
                if (gp->initializer[i] == init) {
                    if (!ex_save_slot(e, &gp->initializer[i], NULL)) return NULL;
                    gp->initializer[i] = tp;
                }
            /* Old models list initializers as inputs too: keep that type true. */
            set_elem_type(find_vi(gp->input, gp->n_input, pn), ex_dtype_of(f));
        } else {
            if (!ex_save_slot(e, &cv->t, NULL)) return NULL;
            cv->t = tp;
        }
    } else {
        name = ex_fresh_name(e, pn, suffix);
        Onnx__TensorProto *tp = name ? encode_tensor(e, t, init ? init : cv->t, f, name) : NULL;
        if (!tp) return NULL;
        if (!ex_grow(&sc->extra_init, sc->n_extra_init, &sc->cap_extra_init, sizeof *sc->extra_init)) return NULL;
        sc->extra_init[sc->n_extra_init++] = tp;
    }
    e->convs[e->n_convs++] = (ex_conv){t->index, f, name};
    return name;
}

/* Constants every reader reads in one format other than the declared one are
 * converted in place; e->in_place[t] is that format (NULL: not in place). */
static void find_in_place(ex *e) {
    const mpx_graph *g = e->g;
    for (int k = 0; k < g->n_tensors; k++) {
        const mpx_tensor *t = g->tensors[k];
        e->in_place[k] = NULL;
        if (!mpx_dtype_is_float(t->dtype) || !t->f32 || (t->flags & (MPX_T_OUTPUT | MPX_T_INPUT))) continue;
        const mpx_format *one = NULL;
        bool ok = t->n_consumers > 0;
        for (int c = 0; ok && c < t->n_consumers; c++) {
            const mpx_node *n = t->consumers[c];
            for (int i = 0; ok && i < n->n_inputs; i++) {
                if (n->inputs[i] != t) continue;
                const mpx_format *f = mpx_plan_input_format(e->p, n, i);
                if (!f || (one && f != one)) ok = false;
                one = f;
            }
        }
        if (ok && one && one != mpx_plan_dtype_format(t->dtype)) e->in_place[k] = one;
    }
}

bool ex_set_name(ex *e, char ***list, size_t n, bool *owned, int i, const char *name) {
    if (strcmp((*list)[i], name) == 0) return true;
    if (!*owned) {
        char **copy = mpx_arena_calloc(e->a, n, sizeof *copy);
        if (!copy || !ex_save_slot(e, list, NULL)) return false;
        memcpy(copy, *list, n * sizeof *copy);
        *list = copy;
        *owned = true;
    }
    (*list)[i] = (char *)name;
    return true;
}

/* The name under which node n reads its input i as the plan says (a cast's
 * output, a converted constant, or the value as held); *f the format it
 * reads it in (NULL: as declared). NULL on out of memory. */
static const char *read_name(ex *e, const mpx_node *n, int i, const mpx_format **fp) {
    const mpx_tensor *t = n->inputs[i];
    const char *name = e->base[t->index];
    const mpx_format *f = mpx_plan_input_format(e->p, n, i);
    *fp = f;
    if (f && mpx_plan_tensor_is_const(t)) {
        name = const_name(e, t, f);
    } else if (f) {
        for (int c = 0; c < e->p->n_casts; c++)
            if (e->p->casts[c].tensor == t->index && e->p->casts[c].to == f) name = e->cast_out[c];
    } else if (mpx_dtype_is_float(t->dtype) && e->p->nodes[n->index].low && mpx_plan_input_is_param(n, i) &&
               n->op != MPX_OP_CastLike) { /* CastLike reads the type alone: nothing to keep */
        char what[160];
        snprintf(what, sizeof what, "%s (%s of %s)", t->name, i == 1 ? "roi/ratio" : "scales", n->name);
        ex_add_name(e->sum.kept, sizeof e->sum.kept, &e->sum.n_kept, what);
    }
    return name;
}

/* An If reads its branches' outputs (mpx's inputs 1.. of the node: then's k,
 * else's k) through the branches' graph outputs: each names what the plan
 * has the If read (a cast's output inside the branch, or the value) and
 * takes its type. */
static mpx_status edit_if_outputs(ex *e, const mpx_node *n, Onnx__NodeProto *np, mpx_error *err) {
    Onnx__GraphProto *br[2];
    ex_is_if(np, &br[0], &br[1]);
    size_t k = np->n_output;
    if ((size_t)n->n_inputs != 1 + 2 * k || br[0]->n_output != k || br[1]->n_output != k)
        return mpx_error_set(err, MPX_E_INVALID, "node %s (If): its branches in the file differ from the ones "
                             "loaded: load the model again", n->name);
    for (int b = 0; b < 2; b++)
        for (size_t j = 0; j < k; j++) {
            int i = 1 + b * (int)k + (int)j;
            const mpx_tensor *t = n->inputs[i];
            if (!t) continue;
            const mpx_format *f;
            const char *name = read_name(e, n, i, &f);
            Onnx__ValueInfoProto *vi = br[b]->output[j];
            if (!name) return ex_oom(err);
            /* Both branches must give the If's output type. A branch the
             * plan never reads (its condition is a constant) may hold its
             * value in another format: a Cast inside it makes it agree. */
            const mpx_tensor *o = n->outputs[j];
            const mpx_format *held = f ? f : e->p->tensors[t->index].format;
            const mpx_format *want = o ? e->p->tensors[o->index].format : held;
            /* (a branch that never runs has no types inferred: the If's say) */
            bool is_float = mpx_dtype_is_float(t->dtype) || (o && mpx_dtype_is_float(o->dtype));
            if (is_float && ex_dtype_for(held, t) != ex_dtype_for(want, o ? o : t)) {
                char suffix[24];
                snprintf(suffix, sizeof suffix, "_%s", want ? want->name : "fp32");
                const char *to = ex_fresh_name(e, ex_pname(e, t), suffix);
                if (!to || !add_cast(e, o ? o : t, name, to, want, anchor_of(t), e->t_scope[t->index])) return ex_oom(err);
                name = to;
                held = want;
            }
            if (strcmp(vi->name, name) != 0) {
                if (!ex_save_slot(e, &vi->name, NULL)) return ex_oom(err);
                vi->name = (char *)name;
            }
            if (is_float) set_elem_type(vi, ex_dtype_for(held, t));
        }
    return MPX_OK;
}

/* An INT attribute name = v appended to np's (the list swapped for a copy);
 * false on out of memory. */
static bool add_int_attr(ex *e, Onnx__NodeProto *np, const char *name, int64_t v) {
    Onnx__AttributeProto *at = mpx_arena_alloc(e->a, sizeof *at);
    Onnx__AttributeProto **ats = mpx_arena_calloc(e->a, np->n_attribute + 1, sizeof *ats);
    if (!at || !ats || !ex_save_slot(e, &np->attribute, &np->n_attribute)) return false;
    onnx__attribute_proto__init(at);
    at->name = (char *)name;
    at->has_type = at->has_i = true;
    at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    at->i = v;
    if (np->n_attribute) memcpy(ats, np->attribute, np->n_attribute * sizeof *ats);
    ats[np->n_attribute] = at;
    np->attribute = ats;
    np->n_attribute++;
    return true;
}

/* Rewire node k's inputs per the plan; retype a float Cast. */
static mpx_status edit_node(ex *e, const mpx_node *n, mpx_error *err) {
    Onnx__NodeProto *np = e->site[n->file_order];
    bool is_if = ex_is_if(np, NULL, NULL);
    /* Inputs in the file: an If's condition alone (it reads its branches'
     * outputs by their graph outputs), a Loop's or Scan's own ones (its body
     * reads the outer values mpx appends by name), else all. */
    int n_file = is_if ? 1 : n->body ? n->n_explicit : n->n_inputs;
    if ((size_t)n_file != np->n_input)
        return mpx_error_set(err, MPX_E_INVALID, "node %s: %zu inputs in the file, %d loaded: load the model again",
                             n->name, np->n_input, n_file);
    const mpx_plan_node *pn0 = &e->p->nodes[n->index];
    /* A node that makes float values from no float input (RandomNormal,
     * ConstantOfShape, Range of ints, SequenceAt of a sequence) has its
     * output type fixed by attributes or by what a sequence holds, which the
     * plan's format does not reach: it writes what it makes, and a Cast
     * after it gives the plan's format (mpx computes such a node in fp32 and
     * rounds its output: the same values). */
    bool reads_float = false;
    for (int i = 0; i < n->n_inputs; i++) reads_float |= mpx_plan_input_format(e->p, n, i) != NULL;
    bool made_float = pn0->is_float && pn0->low && !reads_float && n->op != MPX_OP_Cast && n->op != MPX_OP_CastLike;
    bool own_in = false;
    for (int i = 0; i < n_file; i++) {
        if (!n->inputs[i]) continue;
        const mpx_format *f;
        const char *name = read_name(e, n, i, &f);
        if (!name || !ex_set_name(e, &np->input, np->n_input, &own_in, i, name))
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
    }
    mpx_status st = is_if ? edit_if_outputs(e, n, np, err) : MPX_OK;
    if (st) return st;
    /* The outer values a body reads: where the plan reads one through a
     * cast, the body reads the cast's output. */
    Onnx__GraphProto *body = n->body ? ex_graph_attr(np, "body") : NULL;
    for (int i = n_file; body && i < n->n_inputs; i++) {
        const mpx_tensor *t = n->inputs[i];
        const mpx_format *f;
        const char *name = t ? read_name(e, n, i, &f) : NULL;
        if (!t) continue;
        if (!name) return ex_oom(err);
        const char *pn = ex_pname(e, t);
        if (strcmp(name, pn) != 0 && (st = ex_rename_outer(e, body, pn, name, 0, err))) return st;
    }
    /* A body under a low plan runs in that format: so is the file's body. */
    if (body && pn0->low && (st = ex_lower_body(e, body, pn0->compute, n->name, 0, err))) return st;
    /* keep-io renames of this node's outputs. */
    bool own_out = false;
    for (int i = 0; i < n->n_outputs; i++) {
        const mpx_tensor *t = n->outputs[i];
        if (t && !ex_set_name(e, &np->output, np->n_output, &own_out, i, e->base[t->index]))
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
        const mpx_format *tf = t ? e->p->tensors[t->index].format : NULL;
        if (made_float && t && mpx_dtype_is_float(t->dtype) &&
            ex_dtype_for(tf, t) != (t->dtype == MPX_DT_DOUBLE ? MPX_DT_DOUBLE : MPX_DT_FLOAT)) {
            const char *made = ex_fresh_name(e, e->base[t->index], "_made");
            if (!made || !ex_set_name(e, &np->output, np->n_output, &own_out, i, made) ||
                !add_cast(e, t, made, e->base[t->index], tf, n->file_order, e->site_scope[n->file_order]))
                return ex_oom(err);
            e->new_nodes[e->n_new - 1].lead = true;
        }
    }
    /* SequenceEmpty's dtype: the format the Inserts that fill it read their
     * tensors in (ONNX wants one element type per sequence). */
    const mpx_tensor *so = n->op == MPX_OP_SequenceEmpty && n->n_outputs ? n->outputs[0] : NULL;
    for (int c = 0; so && c < so->n_consumers; c++) {
        const mpx_node *cn = so->consumers[c];
        const mpx_format *f = cn->op == MPX_OP_SequenceInsert && cn->n_inputs > 1 && cn->inputs[0] == so
                                  ? mpx_plan_input_format(e->p, cn, 1) : NULL;
        Onnx__AttributeProto *dt = ex_find_attr(np, "dtype");
        if (!f || ex_dtype_of(f) == MPX_DT_FLOAT || (dt && dt->i != MPX_DT_FLOAT)) continue;
        if (dt) dt->i = ex_dtype_of(f);
        else if (!add_int_attr(e, np, "dtype", ex_dtype_of(f))) return ex_oom(err);
        break;
    }
    const mpx_plan_node *pn = &e->p->nodes[n->index];
    /* A CastLike whose plan output is not its second input's type becomes
     * the Cast it stands for (ONNX types CastLike's output by that input,
     * which the plan does not retype): input 2 dropped, `to` the plan's. */
    if (n->op == MPX_OP_CastLike && pn->is_float && pn->output && np->n_input == 2 &&
        ex_dtype_for(pn->output, n->outputs[0]) != (int)mpx_node_cast_to(n)) {
        if (!add_int_attr(e, np, "to", ex_dtype_for(pn->output, n->outputs[0])) || !ex_save_slot(e, &np->input, &np->n_input) ||
            !ex_save_slot(e, &np->op_type, NULL))
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
        np->n_input = 1;
        np->op_type = (char *)"Cast";
        e->sum.casts_retyped++;
    }
    if (n->op == MPX_OP_Cast && pn->is_float && pn->output) {
        Onnx__AttributeProto *to = ex_find_attr(np, "to");
        const int want = ex_dtype_for(pn->output, n->n_outputs > 0 ? n->outputs[0] : NULL);
        if (to && mpx_dtype_is_float((mpx_dtype)to->i) && to->i != want) {
            to->i = want;
            e->sum.casts_retyped++;
        }
    }
    if (pn->low && n->op != MPX_OP_Cast && (n->cost.k != 1 || e->p->opts.accum_block > 0)) {
        /* the node's own accumulation (an accum rule's), not the default's */
        char note[96];
        if (e->p->opts.accum_block > 0)
            snprintf(note, sizeof note, "mpx: accumulate %s block %d", mpx_format_name(pn->accum),
                     e->p->opts.accum_block);
        else
            snprintf(note, sizeof note, "mpx: accumulate %s", mpx_format_name(pn->accum));
        const char *old = np->doc_string ? np->doc_string : "";
        if (!strstr(old, "mpx: accumulate")) {
            size_t len = strlen(old) + strlen(note) + 2;
            char *d = mpx_arena_alloc(e->a, len);
            if (!d || !ex_save_slot(e, &np->doc_string, NULL))
                return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
            snprintf(d, len, "%s%s%s", old, *old ? "\n" : "", note);
            np->doc_string = d;
        }
    }
    return MPX_OK;
}

/* The opset a format needs (bf16: 13, FLOAT8: 19), raised with the nodes
 * that changed form rewritten (upgrade.c), or refused. */
static mpx_status raise_opset(ex *e, mpx_error *err) {
    bool bf16 = e->p->opts.target == &mpx_format_bf16, fp8 = is_fp8(e->p->opts.target);
    for (int i = 0; i < e->p->n_tensors; i++) {
        const mpx_format *f = e->p->tensors[i].format;
        bf16 |= f == &mpx_format_bf16;
        fp8 |= is_fp8(f);
    }
    int need = fp8 ? 19 : bf16 ? 13 : 0;
    Onnx__ModelProto *m = e->m;
    Onnx__OperatorSetIdProto *os = NULL;
    for (size_t i = 0; i < m->n_opset_import; i++)
        if (!m->opset_import[i]->domain || !*m->opset_import[i]->domain ||
            strcmp(m->opset_import[i]->domain, "ai.onnx") == 0)
            os = m->opset_import[i];
    int have = os && os->has_version ? (int)os->version : 0;
    e->sum.opset_before = e->sum.opset = have;
    if (!os || have >= need) return MPX_OK;
    mpx_status st = ex_upgrade_check(e, have, need, err);
    if (st) return st;
    e->upgrade_from = have;
    os->version = need;
    e->sum.opset = need;
    int64_t ir = need >= 19 ? 9 : 7;
    if (!m->has_ir_version || m->ir_version < ir) {
        m->has_ir_version = true;
        m->ir_version = ir;
    }
    return MPX_OK;
}

static mpx_status set_metadata(ex *e, mpx_error *err) {
    Onnx__ModelProto *m = e->m;
    const char *key = "mpx.accumulate";
    for (size_t i = 0; i < m->n_metadata_props; i++)
        if (m->metadata_props[i]->key && strcmp(m->metadata_props[i]->key, key) == 0) {
            if (!ex_save_slot(e, &m->metadata_props[i]->value, NULL))
                return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
            m->metadata_props[i]->value = (char *)e->accum_value;
            return MPX_OK;
        }
    Onnx__StringStringEntryProto *kv = mpx_arena_alloc(e->a, sizeof *kv);
    Onnx__StringStringEntryProto **v = mpx_arena_calloc(e->a, m->n_metadata_props + 1, sizeof *v);
    if (!kv || !v || !ex_save_slot(e, &m->metadata_props, &m->n_metadata_props))
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
    onnx__string_string_entry_proto__init(kv);
    kv->key = (char *)key;
    kv->value = (char *)e->accum_value;
    if (m->n_metadata_props) memcpy(v, m->metadata_props, m->n_metadata_props * sizeof *v);
    v[m->n_metadata_props] = kv;
    m->metadata_props = v;
    m->n_metadata_props++;
    return MPX_OK;
}

/* The tensor a graph of scope s calls name (its own, else an enclosing
 * graph's: the longest prefix that names one). */
static const mpx_tensor *scope_tensor(const ex *e, int s, const char *name) {
    char full[1400];
    snprintf(full, sizeof full, "%s%s", e->scopes[s].prefix, name);
    const mpx_tensor *t = mpx_graph_find_tensor(e->g, full);
    return t ? t : mpx_graph_find_tensor(e->g, name);
}

/* Types of graph inputs, outputs and value_info (every scope's) as the plan
 * holds them. */
static void retype(ex *e) {
    const mpx_plan *p = e->p;
    for (int s = 0; s < e->n_scopes; s++) {
        Onnx__GraphProto *sg = e->scopes[s].gp;
        for (size_t i = 0; i < sg->n_value_info; i++) {
            const mpx_tensor *t = scope_tensor(e, s, sg->value_info[i]->name);
            if (!t || !mpx_dtype_is_float(t->dtype)) continue;
            const char *pn = ex_pname(e, t);
            if (mpx_plan_tensor_is_const(t)) { /* converted in place: its own name, new type */
                for (size_t c = 0; c < e->n_convs; c++)
                    if (e->convs[c].tensor == t->index && e->convs[c].name == pn)
                        set_elem_type(sg->value_info[i], ex_dtype_of(e->convs[c].f));
                continue;
            }
            if (strcmp(e->base[t->index], pn) != 0) continue; /* now the Cast back's output */
            set_elem_type(sg->value_info[i], ex_dtype_for(p->tensors[t->index].format, t));
        }
    }
    Onnx__GraphProto *gp = e->m->graph;
    if (p->opts.keep_io) return;
    for (size_t i = 0; i < gp->n_input; i++) {
        const mpx_tensor *t = mpx_graph_find_tensor(e->g, gp->input[i]->name);
        if (t && (t->flags & MPX_T_INPUT) && mpx_dtype_is_float(t->dtype) && !mpx_plan_tensor_is_const(t))
            set_elem_type(gp->input[i], ex_dtype_for(p->tensors[t->index].format, t));
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const mpx_tensor *t = mpx_graph_find_tensor(e->g, gp->output[i]->name);
        if (t && mpx_dtype_is_float(t->dtype) && !mpx_plan_tensor_is_const(t))
            set_elem_type(gp->output[i], ex_dtype_for(p->tensors[t->index].format, t));
    }
}

mpx_status ex_oom(mpx_error *err) { return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model"); }

mpx_status ex_apply_plan(ex *e, mpx_error *err) {
    const mpx_plan *p = e->p;
    const mpx_graph *g = e->g;
    mpx_status st;
    if ((st = ex_map_sites(e, err)) != MPX_OK) return st;
    if ((st = raise_opset(e, err)) != MPX_OK) return st;

    e->base = mpx_arena_calloc(e->a, (size_t)g->n_tensors + 1, sizeof *e->base);
    e->in_place = mpx_arena_calloc(e->a, (size_t)g->n_tensors + 1, sizeof *e->in_place);
    e->cast_out = mpx_arena_calloc(e->a, (size_t)p->n_casts + 1, sizeof *e->cast_out);
    if (!e->base || !e->in_place || !e->cast_out) return ex_oom(err);
    for (int i = 0; i < g->n_tensors; i++) e->base[i] = ex_pname(e, g->tensors[i]);
    find_in_place(e);

    /* keep-io: an output held low is renamed at its producer; the Cast back
     * writes the output's name. */
    for (int c = 0; c < p->n_casts; c++) {
        const mpx_plan_cast *pc = &p->casts[c];
        const mpx_tensor *t = g->tensors[pc->tensor];
        bool to_output = false;
        for (int k = 0; k < pc->n_consumers; k++) to_output |= pc->consumers[k] < 0;
        if (!to_output) continue;
        char suffix[24];
        snprintf(suffix, sizeof suffix, "_%s", pc->from->name);
        if (!(e->base[t->index] = ex_fresh_name(e, t->name, suffix))) return ex_oom(err);
        e->cast_out[c] = t->name;
    }
    for (int c = 0; c < p->n_casts; c++) {
        const mpx_plan_cast *pc = &p->casts[c];
        const mpx_tensor *t = g->tensors[pc->tensor];
        if (!e->cast_out[c]) {
            char suffix[24];
            snprintf(suffix, sizeof suffix, "_%s", pc->to->name);
            if (!(e->cast_out[c] = ex_fresh_name(e, ex_pname(e, t), suffix))) return ex_oom(err);
        }
        if (!add_cast(e, t, e->base[t->index], e->cast_out[c], pc->to, anchor_of(t), e->t_scope[t->index]))
            return ex_oom(err);
    }
    for (int k = 0; k < g->n_nodes; k++)
        if ((st = edit_node(e, g->nodes[k], err)) != MPX_OK) return st;
    if (e->upgrade_from && (st = ex_upgrade_nodes(e, e->upgrade_from, e->sum.opset, err)) != MPX_OK) return st;
    retype(e);
    if (p->counts.low_nodes > 0 && (st = set_metadata(e, err)) != MPX_OK) return st;

    /* Each scope's node list: its inputs' and initializers' Casts first,
     * then each node followed by the Casts of its outputs. */
    int *first = mpx_arena_calloc(e->a, (size_t)g->n_nodes + 1, sizeof *first);
    int *next = mpx_arena_calloc(e->a, e->n_new + 1, sizeof *next);
    if (!first || !next) return ex_oom(err);
    for (int i = 0; i < g->n_nodes; i++) first[i] = -1;
    /* Each anchor's list in the order the Casts were made, the lead ones
     * first (pushed last). */
    for (int lead = 0; lead < 2; lead++)
        for (size_t j = e->n_new; j-- > 0;) {
            int a = e->new_nodes[j].anchor;
            if (a < 0 || e->new_nodes[j].lead != (lead == 1)) continue;
            next[j] = first[a];
            first[a] = (int)j;
        }
    e->sum.nodes = 0;
    for (int s = 0; s < e->n_scopes; s++) {
        ex_scope *sc = &e->scopes[s];
        Onnx__GraphProto *sg = sc->gp;
        size_t n_here = sg->n_node;
        for (size_t j = 0; j < e->n_new; j++) n_here += e->new_nodes[j].scope == s;
        if (n_here != sg->n_node) {
            Onnx__NodeProto **nodes = mpx_arena_calloc(e->a, n_here + 1, sizeof *nodes);
            if (!nodes) return ex_oom(err);
            size_t w = 0;
            for (size_t j = 0; j < e->n_new; j++)
                if (e->new_nodes[j].anchor < 0 && e->new_nodes[j].scope == s) nodes[w++] = e->new_nodes[j].node;
            for (size_t i = 0; i < sg->n_node; i++) {
                nodes[w++] = sg->node[i];
                for (int j = first[sc->fo[i]]; j >= 0; j = next[j]) nodes[w++] = e->new_nodes[j].node;
            }
            if (!ex_save_slot(e, &sg->node, &sg->n_node)) return ex_oom(err);
            sg->node = nodes;
            sg->n_node = w;
        }
        e->sum.nodes += (int)sg->n_node; /* (branches' nodes too; an If counts once) */
        if (sc->n_extra_init) {
            Onnx__TensorProto **v = mpx_arena_calloc(e->a, sg->n_initializer + sc->n_extra_init, sizeof *v);
            if (!v || !ex_save_slot(e, &sg->initializer, &sg->n_initializer)) return ex_oom(err);
            if (sg->n_initializer) memcpy(v, sg->initializer, sg->n_initializer * sizeof *v);
            memcpy(v + sg->n_initializer, sc->extra_init, sc->n_extra_init * sizeof *v);
            sg->initializer = v;
            sg->n_initializer += sc->n_extra_init;
        }
    }
    return MPX_OK;
}
