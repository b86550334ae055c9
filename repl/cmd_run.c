/* cmd_run.c - inputs and runs: input, run, report, tensor, compare.
 *
 * A run is mpx_compare_run: the fp32 reference and the plan's assignment side
 * by side, per-layer metrics for every float tensor a node computes. Input
 * values are made from the session's input specs at every run (cheap next to
 * the run, and it keeps the specs the single truth that `save` replays). */
#include "repl_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- input ---------------------------------------------------------------- */

static const mpx_tensor *find_input(const mpx_graph *g, const char *name) {
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->inputs[i]->name, name) == 0) return g->inputs[i];
    return NULL;
}

static mpx_input_spec *find_spec(mpx_session *s, const char *name) {
    for (int i = 0; i < s->n_specs; i++)
        if (strcmp(s->specs[i].name, name) == 0) return &s->specs[i];
    return NULL;
}

/* The session's spec for name, made (default) if missing; NULL on out of memory. */
static mpx_input_spec *spec_slot(mpx_session *s, const char *name) {
    mpx_input_spec *sp = find_spec(s, name);
    if (sp) return sp;
    mpx_input_spec *grown = realloc(s->specs, (size_t)(s->n_specs + 1) * sizeof *grown);
    if (!grown) return NULL;
    s->specs = grown;
    sp = &s->specs[s->n_specs++];
    memset(sp, 0, sizeof *sp);
    snprintf(sp->name, sizeof sp->name, "%s", name);
    return sp;
}

static const char *dims_str(int rank, const int64_t *dims, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "x" : "", (long long)dims[i]);
    if (rank == 0) snprintf(buf, n, "scalar");
    return buf;
}

/* Values for one input from its spec (the input's shape must be bound). */
static mpx_status make_input(const mpx_input_spec *sp, const mpx_tensor *t, mpx_value *v, mpx_error *err) {
    char a[256], b[256];
    if (sp && sp->kind == MPX_INPUT_FILE) {
        mpx_value f;
        mpx_status st = mpx_npy_read(sp->path, &f, err);
        if (st) return st;
        bool same = f.rank == t->rank;
        for (int i = 0; same && i < t->rank; i++) same = f.dims[i] == t->dims[i];
        if (!same) {
            mpx_value_free(&f);
            return mpx_error_set(err, MPX_E_SHAPE, "%s holds %s values but input %s is %s", sp->path,
                                 dims_str(f.rank, f.dims, a, sizeof a), t->name,
                                 dims_str(t->rank, t->dims, b, sizeof b));
        }
        if (mpx_dtype_is_int_like(t->dtype) != (f.i != NULL)) {
            mpx_value_free(&f);
            return mpx_error_set(err, MPX_E_ARG, "%s holds %s values but input %s is %s", sp->path,
                                 f.i ? "integer" : "float", t->name, mpx_dtype_name(t->dtype));
        }
        f.dtype = t->dtype;
        *v = f;
        return MPX_OK;
    }
    if (t->nelem < 0)
        return mpx_error_set(err, MPX_E_SHAPE, "input %s has no shape yet (use: input %s shape <AxBxC>)",
                             t->name, t->name);
    mpx_status st = mpx_value_alloc(v, t->dtype, t->rank, t->dims, err);
    if (st) return st;
    mpx_input_kind k = sp ? sp->kind : MPX_INPUT_DEFAULT;
    double pa = sp ? sp->a : 0.0, pb = sp ? sp->b : 1.0;
    if (k == MPX_INPUT_DEFAULT) k = MPX_INPUT_NORMAL, pa = 0.0, pb = 1.0;
    mpx_rng r;
    mpx_rng_init(&r, sp ? sp->seed : 0);
    for (int64_t i = 0; i < v->n; i++) {
        double x = k == MPX_INPUT_CONST     ? pa
                   : k == MPX_INPUT_UNIFORM ? pa + (pb - pa) * mpx_rng_unit(&r)
                                            : mpx_rng_normal(&r, pa, pb);
        if (v->f) v->f[i] = (float)x;
        else v->i[i] = (int64_t)floor(x);
    }
    return MPX_OK;
}

mpx_status repl_make_inputs(const mpx_session *s, mpx_value **out, mpx_error *err) {
    const mpx_graph *g = s->graph;
    mpx_value *v = calloc(g->n_inputs ? (size_t)g->n_inputs : 1u, sizeof *v);
    if (!v) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_inputs; i++) v[i].n = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        const mpx_input_spec *sp = NULL;
        for (int k = 0; k < s->n_specs; k++)
            if (strcmp(s->specs[k].name, g->inputs[i]->name) == 0) sp = &s->specs[k];
        mpx_status st = make_input(sp, g->inputs[i], &v[i], err);
        if (st) {
            repl_free_inputs(s, v);
            return st;
        }
    }
    *out = v;
    return MPX_OK;
}

void repl_free_inputs(const mpx_session *s, mpx_value *v) {
    if (!v) return;
    for (int i = 0; i < s->graph->n_inputs; i++) mpx_value_free(&v[i]);
    free(v);
}

static mpx_status parse_seed(const char *text, unsigned long long *seed, mpx_error *err) {
    char *end;
    if (!*text || *text == '-') return mpx_error_set(err, MPX_E_ARG, "seed: \"%s\" is not a count", text);
    unsigned long long v = strtoull(text, &end, 10);
    if (*end) return mpx_error_set(err, MPX_E_ARG, "seed: \"%s\" is not a count", text);
    *seed = v;
    return MPX_OK;
}

/* input <name> shape S | random [normal|uniform] [a b] [seed n] | const v | file x.npy */
MPX_CMD(repl_cmd_input) {
    static const char usage[] =
        "usage: input <name> shape <AxBxC> | random [normal|uniform] [<a> <b>] [seed <n>] | "
        "const <v> | file <x.npy>";
    if (argc < 3) return mpx_error_set(err, MPX_E_ARG, "%s", usage);
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const mpx_tensor *t = find_input(s->graph, argv[1]);
    if (!t) {
        char names[512] = "";
        size_t o = 0;
        for (int i = 0; i < s->graph->n_inputs && o < sizeof names; i++)
            o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", s->graph->inputs[i]->name);
        return mpx_error_set(err, MPX_E_ARG, "the model has no input \"%s\" (inputs: %s)", argv[1], names);
    }
    const char *kind = argv[2];
    mpx_input_spec sp;
    memset(&sp, 0, sizeof sp);
    mpx_input_spec *old = find_spec(s, argv[1]);
    if (old) sp = *old;
    snprintf(sp.name, sizeof sp.name, "%s", argv[1]);
    if (strcmp(kind, "shape") == 0) {
        if (argc != 4) return mpx_error_set(err, MPX_E_ARG, "usage: input <name> shape <AxBxC>");
        if (strlen(argv[3]) >= sizeof sp.shape) return mpx_error_set(err, MPX_E_ARG, "shape too long");
        st = repl_input_shape(s, argv[1], argv[3], err);
        if (st) return st;
        mpx_input_spec *slot = spec_slot(s, argv[1]);
        if (slot) snprintf(slot->shape, sizeof slot->shape, "%s", argv[3]);
        return MPX_OK;
    }
    if (strcmp(kind, "random") == 0) {
        int a = 3;
        sp.kind = MPX_INPUT_NORMAL, sp.a = 0.0, sp.b = 1.0, sp.seed = 0;
        if (a < argc && (strcmp(argv[a], "normal") == 0 || strcmp(argv[a], "uniform") == 0)) {
            if (argv[a][0] == 'u') sp.kind = MPX_INPUT_UNIFORM, sp.a = 0.0, sp.b = 1.0;
            a++;
        }
        if (a + 1 < argc && strcmp(argv[a], "seed") != 0) {
            if ((st = repl_parse_number(argv[a], sp.kind == MPX_INPUT_NORMAL ? "mean" : "low", &sp.a, err)) ||
                (st = repl_parse_number(argv[a + 1], sp.kind == MPX_INPUT_NORMAL ? "std" : "high", &sp.b, err)))
                return st;
            a += 2;
            if (sp.kind == MPX_INPUT_NORMAL && !(sp.b >= 0))
                return mpx_error_set(err, MPX_E_ARG, "std %s is negative", argv[a - 1]);
            if (sp.kind == MPX_INPUT_UNIFORM && !(sp.b > sp.a))
                return mpx_error_set(err, MPX_E_ARG, "uniform range [%s, %s) is empty", argv[a - 2], argv[a - 1]);
        }
        if (a + 1 < argc && strcmp(argv[a], "seed") == 0) {
            if ((st = parse_seed(argv[a + 1], &sp.seed, err))) return st;
            a += 2;
        }
        if (a != argc) return mpx_error_set(err, MPX_E_ARG, "unexpected \"%s\"; %s", argv[a], usage);
    } else if (strcmp(kind, "const") == 0) {
        if (argc != 4) return mpx_error_set(err, MPX_E_ARG, "usage: input <name> const <value>");
        if ((st = repl_parse_number(argv[3], "const", &sp.a, err))) return st;
        if (!isfinite(sp.a)) return mpx_error_set(err, MPX_E_ARG, "const: %s is not finite", argv[3]);
        sp.kind = MPX_INPUT_CONST;
    } else if (strcmp(kind, "file") == 0) {
        if (argc != 4) return mpx_error_set(err, MPX_E_ARG, "usage: input <name> file <x.npy>");
        if (strlen(argv[3]) >= sizeof sp.path) return mpx_error_set(err, MPX_E_ARG, "path too long");
        mpx_value f;
        if ((st = mpx_npy_read(argv[3], &f, err))) return st;
        sp.kind = MPX_INPUT_FILE;
        snprintf(sp.path, sizeof sp.path, "%s", argv[3]);
        /* The file decides the shape: bind it when it differs. */
        bool same = t->nelem >= 0 && f.rank == t->rank;
        for (int i = 0; same && i < t->rank; i++) same = f.dims[i] == t->dims[i];
        char shape[256];
        dims_str(f.rank, f.dims, shape, sizeof shape);
        bool is_int = f.i != NULL;
        mpx_value_free(&f);
        if (is_int != mpx_dtype_is_int_like(t->dtype))
            return mpx_error_set(err, MPX_E_ARG, "%s holds %s values but input %s is %s", argv[3],
                                 is_int ? "integer" : "float", t->name, mpx_dtype_name(t->dtype));
        if (!same) {
            if ((st = repl_input_shape(s, argv[1], shape, err))) return st;
            snprintf(sp.shape, sizeof sp.shape, "%s", shape);
        }
    } else {
        return mpx_error_set(err, MPX_E_ARG, "unknown input kind \"%s\"; %s", kind, usage);
    }
    mpx_input_spec *slot = spec_slot(s, argv[1]);
    if (!slot) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    *slot = sp;
    switch (sp.kind) {
    case MPX_INPUT_NORMAL:
        fprintf(s->out, "input %s: random normal(mean %g, std %g), seed %llu\n", sp.name, sp.a, sp.b, sp.seed);
        break;
    case MPX_INPUT_UNIFORM:
        fprintf(s->out, "input %s: random uniform [%g, %g), seed %llu\n", sp.name, sp.a, sp.b, sp.seed);
        break;
    case MPX_INPUT_CONST: fprintf(s->out, "input %s: constant %g\n", sp.name, sp.a); break;
    case MPX_INPUT_FILE: fprintf(s->out, "input %s: values from %s\n", sp.name, sp.path); break;
    default: break;
    }
    return MPX_OK;
}
