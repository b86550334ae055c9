/* export_internal.h - what the parts of the ONNX exporter share (export/ only):
 * write.c (entry, paths, file), edit.c (the edit per plan),
 * build.c (a model from the IR for JSON sources).
 *
 * Ownership: an `ex` lives on mpx_export_onnx's stack (write.c)
 * for one export. Its arena owns every proto object the export makes; the
 * growable arrays (rs, names, new_nodes, convs, extra_init) are malloc'ed
 * and freed there too. m is either protobuf-c's unpacked tree of the source
 * file (freed with free_unpacked after ex_undo_swaps) or, for a JSON source,
 * a tree ex_build_model made entirely from the arena (never free_unpacked).
 */
#ifndef MPX_EXPORT_INTERNAL_H
#define MPX_EXPORT_INTERNAL_H

#include "mpx_export.h"
#include "onnx.pb-c.h"
#include "onnx_walk.h"

typedef struct ex_restore {
    void *slot;      /* where a pointer was replaced */
    void *old;       /* what was there */
    size_t *nslot;   /* its count, when an array was replaced (else NULL) */
    size_t nold;
} ex_restore;

typedef struct ex_conv {
    int tensor;
    const mpx_format *f;
    const char *name;
} ex_conv;

typedef struct ex_new_node {
    Onnx__NodeProto *node;
    int anchor;      /* the node (file order) it follows; -1: before all of its scope's */
    int scope;
    bool lead;       /* right after its anchor, before the Casts of the plan (it writes what they read) */
} ex_new_node;

/* One graph of the file: the main graph (scope 0) or an If's branch
 * (scope.c). */
typedef struct ex_scope {
    Onnx__GraphProto *gp;
    const char *prefix;          /* mpx's prefix of the names it defines ("" for the main graph) */
    size_t plen;
    int *fo;                     /* [gp->n_node]: each node's file order (mpx_node.file_order) */
    Onnx__TensorProto **extra_init; /* initializers this export adds to it */
    size_t n_extra_init, cap_extra_init;
} ex_scope;

typedef struct ex {
    const mpx_plan *p;
    const mpx_graph *g;
    Onnx__ModelProto *m;
    mpx_arena *a;
    ex_restore *rs;
    size_t n_rs, cap_rs;
    const char **names;          /* names this export made (collision checks) */
    size_t n_names, cap_names;
    const char **base;           /* per tensor: the name its producer writes */
    const mpx_format **in_place; /* per tensor: constant converted in place to */
    const char **cast_out;       /* per plan cast: its output's name */
    ex_new_node *new_nodes;
    size_t n_new, cap_new;
    ex_conv *convs;
    size_t n_convs, cap_convs;
    ex_scope *scopes;            /* malloc'ed; their arrays in the arena, extra_init malloc'ed */
    int n_scopes;
    size_t cap_scopes;
    Onnx__NodeProto **site;      /* per file order: the node's proto */
    int *site_scope;             /* per file order: the scope holding it */
    int *t_scope;                /* per tensor: the scope defining it */
    const char *accum_value; /* the model metadata's mpx.accumulate */
    int upgrade_from;            /* the opset raised from (0: not raised) */
    mpx_export_summary sum;
} ex;

/* ONNX TensorProto.DataType of a format (fp32 for NULL); UNDEFINED for tf32. */
int ex_dtype_of(const mpx_format *f);
/* name appended to a summary's list ("a, b", then ", ..." once full) and
 * counted, for what the summary reports by name. */
void ex_add_name(char *list, size_t size, int *count, const char *name);
/* "out of memory writing the model" in err (every allocation of an export). */
mpx_status ex_oom(mpx_error *err);
/* The node's attribute called name, or NULL. */
Onnx__AttributeProto *ex_find_attr(Onnx__NodeProto *n, const char *name);
/* Grow a malloc'ed array *arr of n elements of elem bytes to hold one more. */
bool ex_grow(void *arr, size_t n, size_t *cap, size_t elem);
/* base + suffix, with _2, _3 ... until it names no tensor, node or name this
 * export made; NULL on out of memory. */
const char *ex_fresh_name(ex *e, const char *base, const char *suffix);
/* Raising the opset from have to need (upgrade.c): refused when a node
 * changed form in between and cannot be rewritten; the rewrite itself runs
 * after the plan's edit. */
mpx_status ex_upgrade_check(ex *e, int have, int need, mpx_error *err);
mpx_status ex_upgrade_nodes(ex *e, int have, int need, mpx_error *err);
/* ---- scopes (scope.c) ---- */
/* Fill e->scopes, e->site, e->site_scope and e->t_scope from e->m; refused
 * when the file no longer holds the nodes the session loaded. */
mpx_status ex_map_sites(ex *e, mpx_error *err);
/* Whether np is an If the loader flattens (then *then_b, *else_b), and
 * the graph attribute called name: graph/onnx_walk.h's, on the tree the
 * export edits. */
bool ex_is_if(Onnx__NodeProto *np, Onnx__GraphProto **then_b, Onnx__GraphProto **else_b);
Onnx__GraphProto *ex_graph_attr(Onnx__NodeProto *np, const char *name);
/* t's name in the graph that defines it. */
const char *ex_pname(const ex *e, const mpx_tensor *t);
/* Whether name, under some branch's prefix, names a tensor or node. */
bool ex_name_in_scopes(const ex *e, const char *name);
/* Every read of the outer value `from` inside gp (and the graphs inside it
 * that do not define it themselves) reads `to` instead. */
mpx_status ex_rename_outer(ex *e, Onnx__GraphProto *gp, const char *from, const char *to, int depth,
                           mpx_error *err);
/* Name i of a node's input or output list becomes name; the first change
 * swaps in a copy of protobuf-c's list (*owned). false on out of memory. */
bool ex_set_name(ex *e, char ***list, size_t n, bool *owned, int i, const char *name);

/* Every float of body graph gp (its inputs, outputs, value_info,
 * initializers, constants, Casts to float; nested graphs too) in format f,
 * as mpx runs a body under a low plan (body.c); owner names the
 * node in messages. */
mpx_status ex_lower_body(ex *e, Onnx__GraphProto *gp, const mpx_format *f, const char *owner, int depth,
                         mpx_error *err);

/* Edit e->m per e->p (edit.c). */
mpx_status ex_apply_plan(ex *e, mpx_error *err);
void ex_undo_swaps(ex *e);
/* Remember the pointer at slot (and the count at nslot, may be NULL) so
 * ex_undo_swaps puts them back; false on out of memory. */
bool ex_save_slot(ex *e, void *slot, size_t *nslot);
/* Move the initializers' raw data of 1 KiB and more into one buffer (*data,
 * malloc'ed, *data_len bytes, offsets aligned to 4 KiB) to be written as
 * the file `location` beside the model; the tensors name it
 * (external.c). */
mpx_status ex_externalize(ex *e, const char *location, uint8_t **data, size_t *data_len, mpx_error *err);
/* The source model's external data (src_path's folder) read into its
 * initializers, so the export owns all its weights. */
mpx_status ex_internalize(ex *e, const char *src_path, mpx_error *err);
/* e->m from the IR, for a model that came from JSON (build.c). */
mpx_status ex_build_model(ex *e, mpx_error *err);

#endif
