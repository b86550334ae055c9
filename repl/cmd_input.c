/* cmd_input.c - `input`: how each model input's values are made.
 *
 * A spec (mpx_input_spec) says how: random, constant, an .npy file, an image
 * or a sound file with their options. The values are made from the specs at
 * every run (decoding is cheap next to a run, and it keeps the specs the one
 * truth that `save` replays). Image and audio options are kept as the words
 * the user typed and parsed by the same function at `input` time and at run
 * time, so what was checked is what runs. */
#include "repl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const mpx_tensor *find_input(const mpx_graph *g, const char *name) {
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->inputs[i]->name, name) == 0) return g->inputs[i];
    return NULL;
}



/* ---- image and audio options ------------------------------------------------- */

/* "a,b,c" (or one value for every channel) into v[3]. */
static mpx_status parse_triple(const char *text, const char *what, double v[3], mpx_error *err) {
    char buf[128];
    if (strlen(text) >= sizeof buf) return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" is too long", what, text);
    snprintf(buf, sizeof buf, "%s", text);
    int k = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (k == 3) return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" has more than 3 values", what, text);
        mpx_status st = mpx_explore_parse_number(tok, what, &v[k++], err);
        if (st) return st;
    }
    if (k == 1) v[1] = v[2] = v[0];
    else if (k != 3)
        return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" needs 1 or 3 values (a,b,c)", what, text);
    return MPX_OK;
}

/* An image's options (repl_image_keywords), words alternating name and
 * value, into o. */
static mpx_status parse_image_opts(int argc, char **argv, mpx_image_opts *o, mpx_error *err) {
    mpx_image_opts_default(o);
    mpx_opt_value v[IMAGE_KEYWORD_COUNT];
    mpx_status st = repl_keywords_only(repl_image_keywords, "image", argc, argv, v, err);
    if (st) return st;
    if (v[IMAGE_SIZE].given) {
        int rank = 0;
        int64_t d[MPX_MAX_RANK];
        if ((st = repl_parse_shape(v[IMAGE_SIZE].text, &rank, d, err))) return st;
        if (rank != 2) return mpx_error_set(err, MPX_E_ARG, "size: \"%s\" is not <H>x<W>", v[IMAGE_SIZE].text);
        o->height = d[0], o->width = d[1];
    }
    /* the choices in the order of the enums, after their AUTO */
    if (v[IMAGE_LAYOUT].given) o->layout = (mpx_image_layout)(MPX_LAYOUT_NCHW + v[IMAGE_LAYOUT].i);
    if (v[IMAGE_CHANNELS].given) o->channels = (mpx_image_channels)(MPX_CHANNELS_RGB + v[IMAGE_CHANNELS].i);
    if (v[IMAGE_SCALE].given) o->scale = v[IMAGE_SCALE].d;
    if (v[IMAGE_MEAN].given && (st = parse_triple(v[IMAGE_MEAN].text, "mean", o->mean, err))) return st;
    if (v[IMAGE_STD].given && (st = parse_triple(v[IMAGE_STD].text, "std", o->std, err))) return st;
    return MPX_OK;
}

static mpx_status parse_audio_opts(int argc, char **argv, mpx_audio_opts *o, mpx_error *err) {
    mpx_audio_opts_default(o);
    mpx_opt_value v[AUDIO_KEYWORD_COUNT];
    mpx_status st = repl_keywords_only(repl_audio_keywords, "audio", argc, argv, v, err);
    if (st) return st;
    if (v[AUDIO_RATE].given) o->rate = (int)v[AUDIO_RATE].i;
    if (v[AUDIO_LENGTH].given) o->length = v[AUDIO_LENGTH].i;
    if (v[AUDIO_SCALE].given) o->scale = v[AUDIO_SCALE].d;
    return MPX_OK;
}

/* The option words kept in a spec, split again (they hold no spaces). */
static int split_opts(char *text, char **words, int max) {
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(text, " ", &save); tok && n < max; tok = strtok_r(NULL, " ", &save))
        words[n++] = tok;
    return n;
}

/* ---- values from a spec ------------------------------------------------------- */

mpx_status repl_image_size_hint(const mpx_tensor *t, mpx_error *err) {
    if (!t || t->rank < 3) return err->status;
    /* The layout rule of image inputs: nhwc when the last dim is 1 or 3. */
    int last = t->rank - 1;
    bool nhwc = t->dims[last] == 1 || t->dims[last] == 3;
    int64_t h = t->dims[nhwc ? last - 2 : last - 1], w = t->dims[nhwc ? last - 1 : last];
    if (h <= 0 || w <= 0) return err->status;
    size_t len = strlen(err->msg);
    snprintf(err->msg + len, sizeof err->msg - len, "; an image of another size is resized with `size %lldx%lld`",
             (long long)h, (long long)w);
    return err->status;
}

/* Decode a spec's file (npy, image or audio) for input t. */
mpx_status repl_input_value(const mpx_input_spec *sp, const mpx_tensor *t, mpx_value *v, mpx_error *err) {
    char opts[sizeof sp->opts];
    char *words[32];
    snprintf(opts, sizeof opts, "%s", sp->opts);
    int nw = split_opts(opts, words, 32);
    mpx_status st;
    if (sp->kind == MPX_INPUT_IMAGE) {
        mpx_image_opts io;
        if ((st = parse_image_opts(nw, words, &io, err))) return st;
        if (t->rank < 0) return mpx_error_set(err, MPX_E_SHAPE, "input %s has no known rank; bind its shape first", t->name);
        return mpx_image_read(sp->path, &io, t->rank, t->dims, v, err);
    }
    if (sp->kind == MPX_INPUT_AUDIO) {
        mpx_audio_opts ao;
        if ((st = parse_audio_opts(nw, words, &ao, err))) return st;
        if (t->rank < 0) return mpx_error_set(err, MPX_E_SHAPE, "input %s has no known rank; bind its shape first", t->name);
        return mpx_audio_read(sp->path, &ao, t->rank, v, NULL, err);
    }
    const char *dk = mpx_data_kind(sp->path);
    if (dk && strcmp(dk, "npy") != 0)
        return mpx_error_set(err, MPX_E_ARG, "%s is %s %s file, not .npy (%s)", sp->path, strcmp(dk, "audio") == 0 ? "an" : "a",
                             dk, strcmp(dk, "npz") == 0 ? "an .npz holds several arrays: use `data <file.npz>`"
                                 : strcmp(dk, "audio") == 0 ? "use: input <name> audio <file>"
                                                            : "use: input <name> image <file>");
    if ((st = mpx_npy_read(sp->path, v, err))) return st;
    bool is_int = v->i != NULL, want_int = mpx_dtype_is_int_like(t->dtype);
    if (is_int && !want_int) {
        if (!sp->convert) {
            char dt[32];
            snprintf(dt, sizeof dt, "%s", mpx_dtype_name(v->dtype));
            mpx_value_free(v);
            return mpx_error_set(err, MPX_E_ARG,
                                 "%s holds %s values but input %s is %s; add `convert` (input %s file %s convert) "
                                 "to convert each integer to the nearest %s", sp->path, dt, t->name,
                                 mpx_dtype_name(t->dtype), t->name, sp->path, mpx_dtype_name(t->dtype));
        }
        mpx_value f;
        if ((st = mpx_value_alloc_raw(&f, MPX_DT_FLOAT, v->rank, v->dims, err))) {
            mpx_value_free(v);
            return st;
        }
        for (int64_t i = 0; i < v->n; i++) f.f[i] = (float)v->i[i];
        mpx_value_free(v);
        *v = f;
    } else if (!is_int && want_int) {
        mpx_value_free(v);
        return mpx_error_set(err, MPX_E_ARG, "%s holds float values but input %s is %s (integer)", sp->path, t->name,
                             mpx_dtype_name(t->dtype));
    }
    if ((st = mpx_value_hold_as(v, t->dtype, err))) mpx_value_free(v);
    return st;
}

/* ---- decoded inputs kept across runs --------------------------------------
 * Decoding a sound and resampling it (best sinc) or decoding and resizing an
 * image costs far more than a small model's run: every run, search
 * evaluation and data-set pass made them again. A value is kept for what it
 * depends on (the key below; a file written since has another size or
 * modification time, a rebinding or another shape another key) and copied
 * out; entries fit a quarter of the session's cache budget (`set cache`),
 * later ones are decoded each time. .npy files are only read, not decoded:
 * copying one costs what reading it does, so they are not kept. */
typedef struct decoded_entry {
    char input[256];
    mpx_input_kind kind;
    char path[1024];
    char opts[512];
    int rank;
    int64_t dims[MPX_MAX_RANK];
    mpx_dtype dtype;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    mpx_value v;
} decoded_entry;

struct repl_decoded {
    decoded_entry *v;
    int n, cap;
    size_t bytes;
    long long decodes;
};

struct repl_decoded *repl_decoded_new(void) { return calloc(1, sizeof(struct repl_decoded)); }

static size_t value_bytes(const mpx_value *v) { return (size_t)v->n * (v->f ? sizeof *v->f : v->d ? sizeof *v->d : sizeof *v->i); }

void repl_decoded_drop(mpx_session *s, const char *name) {
    struct repl_decoded *d = s->decoded;
    if (!d) return;
    int k = 0;
    for (int i = 0; i < d->n; i++) {
        if (!name || strcmp(d->v[i].input, name) == 0) {
            d->bytes -= value_bytes(&d->v[i].v);
            mpx_value_free(&d->v[i].v);
        } else {
            d->v[k++] = d->v[i];
        }
    }
    d->n = k;
    if (!name) {
        free(d->v);
        d->v = NULL;
        d->cap = 0;
    }
}

long long repl_decoded_count(const mpx_session *s) { return s->decoded ? s->decoded->decodes : 0; }

static bool entry_is(const decoded_entry *e, const mpx_input_spec *sp, const mpx_tensor *t, const struct stat *st) {
    if (e->kind != sp->kind || e->rank != t->rank || e->dtype != t->dtype || strcmp(e->input, t->name) != 0 ||
        strcmp(e->path, sp->path) != 0 || strcmp(e->opts, sp->opts) != 0)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (e->dims[i] != t->dims[i]) return false;
    return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
           e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

mpx_status repl_input_value_kept(const mpx_session *s, const mpx_input_spec *sp, const mpx_tensor *t, mpx_value *v,
                                 mpx_error *err) {
    struct repl_decoded *d = s->decoded;
    bool decodes = sp->kind == MPX_INPUT_IMAGE || sp->kind == MPX_INPUT_AUDIO;
    struct stat st;
    bool known = decodes && t->rank >= 0 && t->rank <= MPX_MAX_RANK && stat(sp->path, &st) == 0;
    for (int i = 0; known && d && i < d->n; i++)
        if (entry_is(&d->v[i], sp, t, &st)) return mpx_value_copy(v, &d->v[i].v, err);
    mpx_status rc = repl_input_value(sp, t, v, err);
    if (rc || !decodes) return rc;
    if (d) d->decodes++;
    size_t budget = ((size_t)s->cache_mb << 20) / 4, bytes = value_bytes(v);
    if (!known || !d || v->is_seq || d->bytes + bytes > budget) return MPX_OK;
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 8;
        decoded_entry *grown = realloc(d->v, (size_t)cap * sizeof *grown);
        if (!grown) return MPX_OK; /* decoded again next time */
        d->v = grown;
        d->cap = cap;
    }
    decoded_entry *e = &d->v[d->n];
    memset(e, 0, sizeof *e);
    mpx_error ignored;
    if (mpx_value_copy(&e->v, v, &ignored)) return MPX_OK;
    snprintf(e->input, sizeof e->input, "%s", t->name);
    e->kind = sp->kind;
    snprintf(e->path, sizeof e->path, "%s", sp->path);
    snprintf(e->opts, sizeof e->opts, "%s", sp->opts);
    e->rank = t->rank;
    for (int i = 0; i < t->rank; i++) e->dims[i] = t->dims[i];
    e->dtype = t->dtype;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->size = st.st_size;
    e->mtime = st.st_mtim;
    d->bytes += bytes;
    d->n++;
    return MPX_OK;
}

/* Values for one input from its spec (the input's shape must be bound). */
static mpx_status make_input(const mpx_session *s, const mpx_input_spec *sp, const mpx_tensor *t, mpx_value *v,
                             mpx_error *err) {
    char a[256], b[256];
    if (sp && (sp->kind == MPX_INPUT_FILE || sp->kind == MPX_INPUT_IMAGE || sp->kind == MPX_INPUT_AUDIO)) {
        mpx_value f;
        mpx_status st = repl_input_value_kept(s, sp, t, &f, err);
        if (st) return st;
        bool same = f.rank == t->rank;
        for (int i = 0; same && i < t->rank; i++) same = f.dims[i] == t->dims[i];
        if (!same) {
            mpx_value_free(&f);
            mpx_error_set(err, MPX_E_SHAPE, "%s gives shape %s but input %s is bound to %s", sp->path,
                          mpx_dims_str(f.rank, f.dims, a, sizeof a), t->name, mpx_dims_str(t->rank, t->dims, b, sizeof b));
            return sp->kind == MPX_INPUT_IMAGE ? repl_image_size_hint(t, err) : err->status;
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
    mpx_value_fill(v, k == MPX_INPUT_CONST ? MPX_FILL_CONST : k == MPX_INPUT_UNIFORM ? MPX_FILL_UNIFORM : MPX_FILL_NORMAL,
                   pa, pb, sp ? sp->seed : 0);
    return MPX_OK;
}

mpx_status repl_make_inputs(const mpx_session *s, mpx_value **out, mpx_error *err) {
    return repl_make_inputs_but(s, NULL, out, err);
}

mpx_status repl_make_inputs_but(const mpx_session *s, const char *but, mpx_value **out, mpx_error *err) {
    const mpx_graph *g = s->graph;
    mpx_value *v = calloc(g->n_inputs ? (size_t)g->n_inputs : 1u, sizeof *v);
    if (!v) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_inputs; i++) v[i].n = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        if (but && but[i]) continue;
        mpx_status st = make_input(s, repl_find_spec(s, g->inputs[i]->name), g->inputs[i], &v[i], err);
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

/* ---- the command ------------------------------------------------------------------ */

static mpx_status parse_random(int argc, char **argv, mpx_input_spec *sp, mpx_error *err) {
    int a = 3;
    mpx_status st;
    sp->kind = MPX_INPUT_NORMAL, sp->a = 0.0, sp->b = 1.0, sp->seed = 0;
    if (a < argc && (strcmp(argv[a], "normal") == 0 || strcmp(argv[a], "uniform") == 0)) {
        if (argv[a][0] == 'u') sp->kind = MPX_INPUT_UNIFORM, sp->a = 0.0, sp->b = 1.0;
        a++;
    }
    if (a + 1 < argc && strcmp(argv[a], "seed") != 0) {
        if ((st = mpx_explore_parse_number(argv[a], sp->kind == MPX_INPUT_NORMAL ? "mean" : "low", &sp->a, err)) ||
            (st = mpx_explore_parse_number(argv[a + 1], sp->kind == MPX_INPUT_NORMAL ? "std" : "high", &sp->b, err)))
            return st;
        a += 2;
        if ((st = mpx_fill_check(sp->kind == MPX_INPUT_NORMAL ? MPX_FILL_NORMAL : MPX_FILL_UNIFORM, sp->a, sp->b, err)))
            return st;
    }
    if (a + 1 < argc && strcmp(argv[a], "seed") == 0) {
        if ((st = parse_seed(argv[a + 1], &sp->seed, err))) return st;
        a += 2;
    }
    if (a != argc) return repl_usage_error(err, argv[0], "unexpected \"%s\"", argv[a]);
    return MPX_OK;
}

/* file, image, audio: check the options, decode once (the file decides the
 * shape where the model leaves it open) and bind that shape when it differs,
 * saying when it replaces one the user set. */
static mpx_status parse_file_kind(mpx_session *s, int argc, char **argv, const mpx_tensor *t, mpx_input_spec *sp,
                                  mpx_error *err) {
    const char *kind = argv[2];
    if (argc < 4) return repl_usage_error(err, argv[0], "%s needs a file", kind);
    if (strlen(argv[3]) >= sizeof sp->path) return mpx_error_set(err, MPX_E_ARG, "path too long");
    sp->kind = strcmp(kind, "image") == 0 ? MPX_INPUT_IMAGE : strcmp(kind, "audio") == 0 ? MPX_INPUT_AUDIO : MPX_INPUT_FILE;
    snprintf(sp->path, sizeof sp->path, "%s", argv[3]);
    sp->convert = false;
    sp->opts[0] = '\0';
    mpx_status st;
    if (sp->kind == MPX_INPUT_FILE) {
        if (argc == 5 && strcmp(argv[4], "convert") == 0) sp->convert = true;
        else if (argc != 4) return repl_usage_error(err, argv[0], "file takes <x.npy> [convert]");
    } else {
        /* Check the words now; keep them for every later run and for save. */
        size_t o = 0;
        for (int a = 4; a < argc; a++) {
            if (strchr(argv[a], ' ')) return mpx_error_set(err, MPX_E_ARG, "option \"%s\" holds a space", argv[a]);
            int w = snprintf(sp->opts + o, sizeof sp->opts - o, "%s%s", o ? " " : "", argv[a]);
            if (w < 0 || (size_t)w >= sizeof sp->opts - o) return mpx_error_set(err, MPX_E_ARG, "options too long");
            o += (size_t)w;
        }
        mpx_image_opts io;
        mpx_audio_opts ao;
        st = sp->kind == MPX_INPUT_IMAGE ? parse_image_opts(argc - 4, argv + 4, &io, err)
                                         : parse_audio_opts(argc - 4, argv + 4, &ao, err);
        if (st) return st;
    }
    mpx_value f;
    if ((st = repl_input_value(sp, t, &f, err))) return st;
    char shape[256], was[256];
    mpx_dims_str(f.rank, f.dims, shape, sizeof shape);
    bool same = t->nelem >= 0 && f.rank == t->rank;
    for (int i = 0; same && i < t->rank; i++) same = f.dims[i] == t->dims[i];
    int f_rank = f.rank;
    mpx_value_free(&f);
    if (f_rank != t->rank) {
        /* Another rank cannot be the same input: both shapes, not a guess. */
        mpx_dims_str(t->rank, t->dims, was, sizeof was);
        return mpx_error_set(err, MPX_E_ARG, "%s holds %s%s but input %s is %s (rank %d)", sp->path,
                             f_rank ? "shape " : "a ", f_rank ? shape : "scalar", argv[1], was, t->rank);
    }
    if (!same) {
        bool typed = sp->shape[0] != 0;
        snprintf(was, sizeof was, "%s", sp->shape);
        if ((st = repl_input_shape(s, argv[1], shape, err)))
            return sp->kind == MPX_INPUT_IMAGE ? repl_image_size_hint(t, err) : st;
        if (typed && strcmp(was, shape) != 0)
            fprintf(s->info, "input %s: %s gives shape %s, which replaces the shape %s bound before\n", argv[1],
                    sp->path, shape, was);
        snprintf(sp->shape, sizeof sp->shape, "%s", shape);
    }
    return MPX_OK;
}

/* The words after `input <name> files '<glob>'`: npy [convert] | image
 * [options] | audio [options], into sp (kind, opts, convert). */
static mpx_status files_check(int argc, char **argv, mpx_input_spec *sp, mpx_error *err) {
    const char *kind = argv[0];
    mpx_status st = MPX_OK;
    if (strcmp(kind, "npy") == 0) {
        sp->kind = MPX_INPUT_FILE;
        if (argc == 2 && strcmp(argv[1], "convert") == 0) sp->convert = true;
        else if (argc != 1) return mpx_error_set(err, MPX_E_ARG, "unexpected \"%s\" (npy takes only convert)", argv[1]);
        return MPX_OK;
    }
    if (strcmp(kind, "image") == 0) {
        mpx_image_opts io;
        sp->kind = MPX_INPUT_IMAGE;
        st = parse_image_opts(argc - 1, argv + 1, &io, err);
    } else if (strcmp(kind, "audio") == 0) {
        mpx_audio_opts ao;
        sp->kind = MPX_INPUT_AUDIO;
        st = parse_audio_opts(argc - 1, argv + 1, &ao, err);
    } else {
        return mpx_error_set(err, MPX_E_ARG, "files: \"%s\" is not npy, image or audio", kind);
    }
    size_t o = 0;
    for (int a = 1; !st && a < argc; a++) {
        int w = snprintf(sp->opts + o, sizeof sp->opts - o, "%s%s", o ? " " : "", argv[a]);
        if (w < 0 || (size_t)w >= sizeof sp->opts - o) return mpx_error_set(err, MPX_E_ARG, "options too long");
        o += (size_t)w;
    }
    return st;
}

/* input <name> shape S | random [normal|uniform] [a b] [seed n] | const v
 *            | file x.npy [convert] | image f [opts] | audio f [opts] */
mpx_status repl_cmd_input(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    int argc = args->argc;
    char **argv = args->argv;
    if (argc < 3) return repl_usage_error(err, argv[0], NULL);
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    const mpx_tensor *t = find_input(s->graph, argv[1]);
    if (!t) {
        char names[512] = "";
        size_t o = 0;
        mpx_name_hint h;
        mpx_name_hint_init(&h, argv[1]);
        for (int i = 0; i < s->graph->n_inputs; i++) {
            if (o < sizeof names)
                o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", s->graph->inputs[i]->name);
            mpx_name_hint_add(&h, s->graph->inputs[i]->name);
        }
        char hint[300];
        return mpx_error_set(err, MPX_E_ARG, "the model has no input \"%s\" (inputs: %s)%s", argv[1], names,
                             mpx_name_hint_tail(&h, hint, sizeof hint));
    }
    const char *kind = argv[2];
    mpx_input_spec sp;
    memset(&sp, 0, sizeof sp);
    const mpx_input_spec *old = repl_find_spec(s, argv[1]);
    if (old) sp = *old;
    snprintf(sp.name, sizeof sp.name, "%s", argv[1]);
    if (strcmp(kind, "shape") == 0) {
        if (argc != 4) return repl_usage_error(err, argv[0], "shape takes one <AxBxC>");
        if (strlen(argv[3]) >= sizeof sp.shape) return mpx_error_set(err, MPX_E_ARG, "shape too long");
        st = repl_input_shape(s, argv[1], argv[3], err);
        if (st) return st;
        snprintf(sp.shape, sizeof sp.shape, "%s", argv[3]);
        return repl_set_spec(s, &sp, err);
    }
    if (strcmp(kind, "random") == 0) {
        if ((st = parse_random(argc, argv, &sp, err))) return st;
    } else if (strcmp(kind, "const") == 0) {
        if (argc != 4) return repl_usage_error(err, argv[0], "const takes one value");
        if ((st = mpx_explore_parse_number(argv[3], "const", &sp.a, err))) return st;
        if ((st = mpx_fill_check(MPX_FILL_CONST, sp.a, 0, err))) return st;
        sp.kind = MPX_INPUT_CONST;
    } else if (strcmp(kind, "files") == 0) {
        if (argc < 5) return repl_usage_error(err, argv[0], "files takes '<glob>' npy|image|audio [options]");
        char beside[4096];
        argv[3] = (char *)repl_beside_script(s, argv[3], true, beside, sizeof beside);
        return repl_data_from_files(s, argv[1], argv[3], argc - 4, argv + 4, files_check, err);
    } else if (strcmp(kind, "file") == 0 || strcmp(kind, "image") == 0 || strcmp(kind, "audio") == 0) {
        char beside[4096];
        if (argc >= 4) argv[3] = (char *)repl_beside_script(s, argv[3], false, beside, sizeof beside);
        if ((st = parse_file_kind(s, argc, argv, t, &sp, err))) return st;
    } else {
        return repl_usage_error(err, argv[0], "unknown input kind \"%s\"", kind);
    }
    if ((st = repl_set_spec(s, &sp, err))) return st;
    switch (sp.kind) {
    case MPX_INPUT_NORMAL:
        fprintf(s->info, "input %s: random normal(mean %g, std %g), seed %llu\n", sp.name, sp.a, sp.b, sp.seed);
        break;
    case MPX_INPUT_UNIFORM:
        fprintf(s->info, "input %s: random uniform [%g, %g), seed %llu\n", sp.name, sp.a, sp.b, sp.seed);
        break;
    case MPX_INPUT_CONST: fprintf(s->info, "input %s: constant %g\n", sp.name, sp.a); break;
    case MPX_INPUT_FILE:
        fprintf(s->info, "input %s: values from %s%s\n", sp.name, sp.path,
                sp.convert ? " (integers converted to the nearest float)" : "");
        break;
    case MPX_INPUT_IMAGE:
    case MPX_INPUT_AUDIO: {
        char shape[256];
        t = find_input(s->graph, argv[1]); /* the graph may be new (a shape bound) */
        fprintf(s->info, "input %s: %s %s%s%s, shape %s\n", sp.name, sp.kind == MPX_INPUT_IMAGE ? "image" : "audio",
                sp.path, sp.opts[0] ? " " : "", sp.opts, t ? mpx_dims_str(t->rank, t->dims, shape, sizeof shape) : "?");
        break;
    }
    default: break;
    }
    return MPX_OK;
}
