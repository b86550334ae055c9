/* cmd_data.c - data sets: many samples for the model's inputs.
 *
 * `data <file.npz|folder|'glob'> [stacked] [limit n] [shuffle seed]` and
 * `input <name> files '<glob>' npy|image|audio [options]` give the session a
 * data set; every run then goes over its samples one at a time (inputs made,
 * run, figures kept, values freed), so memory grows with the samples'
 * figures, not their values. A sample overrides the inputs it holds; the
 * others keep their `input` specs. Image and audio files of a folder sample
 * use the options of that input's `input ... image|audio` spec, if any.
 *
 * The data set lists files, it does not hold their values (a stacked .npz is
 * the exception: one file that is all the samples, read once). */
#include "repl_internal.h"

#include <dirent.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* More files than this need `limit`: a glob of a million files would make a
 * data set nobody meant. */
#define MAX_SAMPLES 100000

typedef struct data_source {
    char input[256];
    mpx_input_spec spec; /* kind FILE, IMAGE or AUDIO; path; opts */
} data_source;

typedef struct repl_sample {
    char label[1024];      /* what messages call it: a file or folder name */
    char npz[1024];        /* an .npz whose keys are inputs, or "" */
    int64_t stacked;       /* index along the stacked .npz's first axis, or -1 */
    int n_src;
    data_source *src;
} repl_sample;

struct repl_dataset {
    char source[1024];     /* as typed */
    int n;
    repl_sample *samples;
    mpx_npz stack;         /* a stacked .npz, read once */
    int64_t matched;       /* files the source matched before limit */
    bool labels_only;      /* from merged shards: names, no files to run */
    /* The command that made it, its words quoted (what `save` writes);
     * "" for merged shards' labels, which no command makes again. */
    char replay[2048];
};

void repl_data_free(repl_dataset *d) {
    if (!d) return;
    for (int i = 0; i < d->n; i++) free(d->samples[i].src);
    free(d->samples);
    mpx_npz_free(&d->stack);
    free(d);
}

/* The data set's files are the session's inputs from now on: no command may
 * write over them (s->guard). */
static mpx_status protect_files(mpx_session *s, const repl_dataset *d, mpx_error *err) {
    static const char what[] = "an input file of this session";
    mpx_status st = d->stack.n ? repl_protect(s, d->source, what, err) : MPX_OK;
    for (int k = 0; k < d->n && !st; k++) {
        const repl_sample *sm = &d->samples[k];
        if (sm->npz[0]) st = repl_protect(s, sm->npz, what, err);
        for (int j = 0; j < sm->n_src && !st; j++) st = repl_protect(s, sm->src[j].spec.path, what, err);
    }
    return st;
}

int repl_data_count(const repl_dataset *d) { return d ? d->n : 0; }

const char *repl_data_replay(const repl_dataset *d) { return d && d->replay[0] ? d->replay : NULL; }

/* Prefix words p[0..np) then words[0..n), each quoted as a script reads
 * it back, into buf[size] (the data set's replay); "" when they do not fit. */
static void replay_text(char *buf, size_t size, char *const *p, int np, char *const *words, int n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < np + n; i++) {
        char w[1100];
        if (!repl_quote_word(w, sizeof w, i < np ? p[i] : words[i - np]) || len + strlen(w) + 2 > size) {
            buf[0] = '\0';
            return;
        }
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", w);
    }
}

const char *repl_data_label(const repl_dataset *d, int k) {
    return d && k >= 0 && k < d->n ? d->samples[k].label : "?";
}

mpx_status repl_error_sample(mpx_error *err, int k, int n, const char *label) {
    char msg[sizeof err->msg], file[sizeof err->file + 2] = "";
    snprintf(msg, sizeof msg, "%s", err->msg);
    if (err->file[0] && strcmp(err->file, label) != 0) snprintf(file, sizeof file, "%s: ", err->file);
    mpx_status st = err->status;
    mpx_error_set(err, st, "sample %d of %d (%s): %s%s", k + 1, n, label, file, msg);
    return st;
}

static int input_index(const mpx_graph *g, const char *name) {
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->inputs[i]->name, name) == 0) return i;
    return -1;
}

/* v in place of input i, after checking its shape against the bound one. */
static mpx_status put_value(const mpx_graph *g, int i, mpx_value *v, mpx_value *inputs, const char *from,
                            mpx_error *err) {
    const mpx_tensor *t = g->inputs[i];
    bool same = v->rank == t->rank;
    for (int d = 0; same && d < t->rank; d++) same = v->dims[d] == t->dims[d];
    char a[256], b[256];
    if (!same) {
        mpx_error_set(err, MPX_E_SHAPE, "%s gives input %s shape %s but it is bound to %s (a data set's samples share "
                      "one shape)", from, t->name, repl_dims_str(v->rank, v->dims, a, sizeof a),
                      repl_dims_str(t->rank, t->dims, b, sizeof b));
        mpx_value_free(v);
        return err->status;
    }
    if ((v->i != NULL) != mpx_dtype_is_int_like(t->dtype)) {
        mpx_error_set(err, MPX_E_ARG, "%s holds %s values for input %s, which is %s", from, v->i ? "integer" : "float",
                      t->name, mpx_dtype_name(t->dtype));
        mpx_value_free(v);
        return err->status;
    }
    v->dtype = t->dtype;
    mpx_value_free(&inputs[i]);
    inputs[i] = *v;
    return MPX_OK;
}

/* Check an .npz's keys against the model's inputs: every key an input, and
 * (with the session's specs) nothing left out that the user did not set. */
static mpx_status check_keys(const mpx_session *s, const mpx_npz *z, const char *path, mpx_error *err) {
    const mpx_graph *g = s->graph;
    for (int k = 0; k < z->n; k++)
        if (input_index(g, z->keys[k]) < 0) {
            char names[512] = "";
            size_t o = 0;
            for (int i = 0; i < g->n_inputs && o < sizeof names; i++)
                o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", g->inputs[i]->name);
            return mpx_error_set(err, MPX_E_ARG, "%s holds \"%s\", which is not an input of the model (inputs: %s)", path,
                                 z->keys[k], names);
        }
    for (int i = 0; i < g->n_inputs; i++) {
        bool have = false;
        for (int k = 0; k < z->n && !have; k++) have = strcmp(z->keys[k], g->inputs[i]->name) == 0;
        if (!have && !repl_find_spec(s, g->inputs[i]->name))
            return mpx_error_set(err, MPX_E_ARG, "%s has no array for input %s (and no `input %s ...` says how to make it)",
                                 path, g->inputs[i]->name, g->inputs[i]->name);
    }
    return MPX_OK;
}

mpx_status repl_data_inputs(const mpx_session *s, int k, mpx_value **out, mpx_error *err) {
    const repl_dataset *d = s->data;
    if (d->labels_only)
        return mpx_error_set(err, MPX_E_INVALID, "the samples came from merged shards (%s) and name no files to run; give "
                             "the data set again with data ...", d->source);
    const repl_sample *smp = &d->samples[k];
    mpx_value *inputs = NULL;
    const mpx_graph *g = s->graph;
    /* The sample's files give their inputs: no value is made for them from
     * the specs only to be replaced (a bound sound would be decoded for each
     * sample). */
    char *but = calloc(g->n_inputs ? (size_t)g->n_inputs : 1u, 1);
    if (!but) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int j = 0; j < smp->n_src; j++) {
        int i = input_index(g, smp->src[j].input);
        if (i >= 0) but[i] = 1;
    }
    mpx_status st = repl_make_inputs_but(s, but, &inputs, err);
    free(but);
    if (st) return st;
    char from[1200];
    if (smp->npz[0] || smp->stacked >= 0) {
        mpx_npz z = {0};
        const mpx_npz *zp = &d->stack;
        if (smp->npz[0]) {
            if ((st = mpx_npz_read(smp->npz, &z, err)) || (st = check_keys(s, &z, smp->npz, err))) goto fail_npz;
            zp = &z;
        }
        for (int j = 0; j < zp->n && !st; j++) {
            int i = input_index(g, zp->keys[j]);
            mpx_value v;
            snprintf(from, sizeof from, "%s:%s", smp->label, zp->keys[j]);
            if (smp->stacked >= 0) {
                /* One slice of the leading (sample) axis. */
                const mpx_value *all = &zp->values[j];
                int64_t per = all->dims[0] ? all->n / all->dims[0] : 0;
                if ((st = mpx_value_alloc_raw(&v, all->dtype, all->rank - 1, all->dims + 1, err))) break;
                if (all->f) memcpy(v.f, all->f + smp->stacked * per, (size_t)per * sizeof *v.f);
                else memcpy(v.i, all->i + smp->stacked * per, (size_t)per * sizeof *v.i);
            } else {
                v = zp->values[j];
                memset(&zp->values[j], 0, sizeof v); /* moved out of z */
                zp->values[j].n = -1;
            }
            st = put_value(g, i, &v, inputs, from, err);
        }
    fail_npz:
        mpx_npz_free(&z);
        if (st) goto fail;
    }
    for (int j = 0; j < smp->n_src; j++) {
        int i = input_index(g, smp->src[j].input);
        if (i < 0) {
            st = mpx_error_set(err, MPX_E_ARG, "the model has no input %s", smp->src[j].input);
            goto fail;
        }
        mpx_value v;
        if ((st = repl_input_value_kept(s, &smp->src[j].spec, g->inputs[i], &v, err))) goto fail;
        if ((st = put_value(g, i, &v, inputs, smp->src[j].spec.path, err))) goto fail;
    }
    *out = inputs;
    return MPX_OK;
fail:
    repl_free_inputs(s, inputs);
    /* Name the sample first: "sample 7 of 32 (data/007): ...". */
    return repl_error_sample(err, k, d->n, smp->label);
}

/* ---- building a data set ------------------------------------------------------ */

static repl_dataset *data_new(const char *source) {
    repl_dataset *d = calloc(1, sizeof *d);
    if (d) snprintf(d->source, sizeof d->source, "%s", source);
    return d;
}

static repl_sample *add_sample(repl_dataset *d, const char *label, mpx_error *err);

repl_dataset *repl_data_labels(const char *source, int n, const char *const *labels, mpx_error *err) {
    repl_dataset *d = data_new(source);
    if (!d) {
        mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        return NULL;
    }
    d->labels_only = true;
    d->matched = n;
    for (int i = 0; i < n; i++)
        if (!add_sample(d, labels[i] ? labels[i] : "?", err)) {
            repl_data_free(d);
            return NULL;
        }
    return d;
}

static repl_sample *add_sample(repl_dataset *d, const char *label, mpx_error *err) {
    if (d->n % 64 == 0) {
        repl_sample *grown = realloc(d->samples, (size_t)(d->n + 64) * sizeof *grown);
        if (!grown) {
            mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            return NULL;
        }
        d->samples = grown;
    }
    repl_sample *smp = &d->samples[d->n++];
    memset(smp, 0, sizeof *smp);
    smp->stacked = -1;
    snprintf(smp->label, sizeof smp->label, "%.1000s", label); /* a label names a file: cut, never overrun */
    return smp;
}

static mpx_status add_source(repl_sample *smp, const char *input, const mpx_input_spec *spec, mpx_error *err) {
    data_source *grown = realloc(smp->src, (size_t)(smp->n_src + 1) * sizeof *grown);
    if (!grown) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    smp->src = grown;
    data_source *src = &smp->src[smp->n_src++];
    snprintf(src->input, sizeof src->input, "%s", input);
    src->spec = *spec;
    return MPX_OK;
}

static bool is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The entries of a folder (not . and ..), sorted, as "folder/entry". */
static mpx_status list_dir(const char *dir, char ***out, int64_t *n, mpx_error *err) {
    DIR *dp = opendir(dir);
    if (!dp) return mpx_error_set(err, MPX_E_IO, "%s: cannot open the folder", dir);
    char **v = NULL;
    int64_t k = 0, cap = 0;
    mpx_status st = MPX_OK;
    for (struct dirent *e; (e = readdir(dp));) {
        if (e->d_name[0] == '.') continue; /* ., .. and hidden files */
        if (k == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(v, (size_t)cap * sizeof *grown);
            if (!grown) {
                st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
                break;
            }
            v = grown;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(v[k] = malloc(len))) {
            st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            break;
        }
        /* "ds/" and "ds" give the same names ("ds/s1", not "ds//s1"). */
        size_t dl = strlen(dir);
        snprintf(v[k++], len, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", e->d_name);
    }
    closedir(dp);
    if (st) {
        for (int64_t i = 0; i < k; i++) free(v[i]);
        free(v);
        return st;
    }
    if (k) qsort(v, (size_t)k, sizeof *v, cmp_str);
    *out = v;
    *n = k;
    return MPX_OK;
}

static void free_list(char **v, int64_t n) {
    for (int64_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* Seeded shuffle (the same seed gives the same order everywhere), then the
 * first `limit`. */
static void shuffle_limit(char **v, int64_t *n, bool shuffle, unsigned long long seed, int64_t limit) {
    if (shuffle) {
        mpx_rng r;
        mpx_rng_init(&r, seed);
        for (int64_t i = *n - 1; i > 0; i--) {
            int64_t j = (int64_t)(mpx_rng_next(&r) % (uint64_t)(i + 1));
            char *t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
    }
    if (limit > 0 && *n > limit) {
        for (int64_t i = limit; i < *n; i++) free(v[i]);
        *n = limit;
    }
}

static const char *base_name(const char *p) {
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* A per-input file of a folder sample: "<input>.<ext>", its kind by content. */
static mpx_status folder_sample(const mpx_session *s, repl_dataset *d, const char *dir, mpx_error *err) {
    char **files = NULL;
    int64_t n = 0;
    mpx_status st = list_dir(dir, &files, &n, err);
    if (st) return st;
    repl_sample *smp = add_sample(d, dir, err);
    if (!smp) st = err->status;
    for (int64_t f = 0; f < n && !st; f++) {
        char input[256];
        snprintf(input, sizeof input, "%s", base_name(files[f]));
        char *dot = strrchr(input, '.');
        if (dot) *dot = '\0';
        if (input_index(s->graph, input) < 0) {
            st = mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" is not named after an input of the model (a sample folder "
                               "holds <input>.npy, .png, .jpg or .wav files)", dir, base_name(files[f]));
            break;
        }
        const char *kind = mpx_data_kind(files[f]);
        mpx_input_spec sp;
        memset(&sp, 0, sizeof sp);
        snprintf(sp.name, sizeof sp.name, "%s", input);
        snprintf(sp.path, sizeof sp.path, "%s", files[f]);
        const mpx_input_spec *own = repl_find_spec(s, input);
        if (!kind || strcmp(kind, "npz") == 0) {
            st = mpx_error_set(err, MPX_E_UNSUPPORTED, "%s: not an .npy, PNG, JPEG or sound file", files[f]);
            break;
        }
        sp.kind = strcmp(kind, "npy") == 0 ? MPX_INPUT_FILE : strcmp(kind, "audio") == 0 ? MPX_INPUT_AUDIO : MPX_INPUT_IMAGE;
        if (own && own->kind == sp.kind) { /* the input's own options */
            snprintf(sp.opts, sizeof sp.opts, "%s", own->opts);
            sp.convert = own->convert;
        }
        st = add_source(smp, input, &sp, err);
    }
    free_list(files, n);
    return st;
}

typedef struct data_args {
    bool stacked, shuffle;
    unsigned long long seed;
    int64_t limit;
} data_args;

/* The samples of a list of paths: .npz files, or sample folders. */
static mpx_status samples_of(const mpx_session *s, repl_dataset *d, char **paths, int64_t n, mpx_error *err) {
    mpx_status st = MPX_OK;
    for (int64_t i = 0; i < n && !st; i++) {
        if (is_dir(paths[i])) {
            st = folder_sample(s, d, paths[i], err);
        } else {
            const char *kind = mpx_data_kind(paths[i]);
            if (!kind || strcmp(kind, "npz") != 0) {
                st = mpx_error_set(err, MPX_E_UNSUPPORTED, "%s: not an .npz file nor a sample folder (a data set is "
                                   ".npz files or one folder per sample)", paths[i]);
                break;
            }
            repl_sample *smp = add_sample(d, paths[i], err);
            if (!smp) st = err->status;
            else snprintf(smp->npz, sizeof smp->npz, "%s", paths[i]);
        }
    }
    return st;
}

static mpx_status build(mpx_session *s, const char *source, const data_args *a, repl_dataset **out, mpx_error *err) {
    repl_dataset *d = data_new(source);
    if (!d) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_status st = MPX_OK;
    char **paths = NULL;
    int64_t n = 0;
    struct stat sb;
    bool pattern = strpbrk(source, "*?[") != NULL && stat(source, &sb) != 0;
    if (!pattern && stat(source, &sb) != 0) {
        st = mpx_error_set(err, MPX_E_IO, "%s: no such file or folder", source);
    } else if (!pattern && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
        st = mpx_error_set(err, MPX_E_ARG, "%s: neither a regular file nor a folder", source);
    } else if (!pattern && S_ISREG(sb.st_mode)) {
        /* One .npz: one sample, or with `stacked` one per index of axis 0. */
        const char *kind = mpx_data_kind(source);
        if (!kind || strcmp(kind, "npz") != 0) {
            st = mpx_error_set(err, MPX_E_UNSUPPORTED, "%s: not an .npz file (for one input's files use: input <name> "
                               "files '<glob>' npy|image|audio)", source);
        } else if (a->stacked) {
            if (!(st = mpx_npz_read(source, &d->stack, err)) && !(st = check_keys(s, &d->stack, source, err))) {
                int64_t count = -1;
                for (int k = 0; k < d->stack.n && !st; k++) {
                    const mpx_value *v = &d->stack.values[k];
                    if (v->rank < 1)
                        st = mpx_error_set(err, MPX_E_SHAPE, "%s: \"%s\" is a scalar; stacked arrays have a leading "
                                           "sample axis", source, d->stack.keys[k]);
                    else if (count >= 0 && v->dims[0] != count)
                        st = mpx_error_set(err, MPX_E_SHAPE, "%s: \"%s\" has %lld samples, \"%s\" %lld", source,
                                           d->stack.keys[k], (long long)v->dims[0], d->stack.keys[0], (long long)count);
                    else count = v->dims[0];
                }
                d->matched = count;
                int64_t take = a->limit > 0 && count > a->limit ? a->limit : count;
                for (int64_t k = 0; k < take && !st; k++) {
                    char label[1100];
                    /* Numbered from 1, as every sample table and --sample k count. */
                    snprintf(label, sizeof label, "%s #%lld", source, (long long)k + 1);
                    repl_sample *smp = add_sample(d, label, err);
                    if (!smp) st = err->status;
                    else smp->stacked = k;
                }
            }
        } else {
            repl_sample *smp = add_sample(d, source, err);
            if (!smp) st = err->status;
            else snprintf(smp->npz, sizeof smp->npz, "%s", source);
            d->matched = 1;
        }
    } else {
        if (pattern) {
            glob_t gl;
            int r = glob(source, GLOB_MARK, NULL, &gl);
            if (r == GLOB_NOMATCH || (r == 0 && gl.gl_pathc == 0)) {
                st = mpx_error_set(err, MPX_E_IO, "%s matches no file", source);
            } else if (r != 0) {
                st = mpx_error_set(err, MPX_E_IO, "%s: the pattern cannot be read", source);
            } else {
                paths = calloc(gl.gl_pathc, sizeof *paths);
                if (!paths) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
                for (size_t i = 0; !st && i < gl.gl_pathc; i++) {
                    size_t len = strlen(gl.gl_pathv[i]);
                    if (len > 1 && gl.gl_pathv[i][len - 1] == '/') gl.gl_pathv[i][len - 1] = '\0'; /* GLOB_MARK */
                    if (!(paths[n++] = strdup(gl.gl_pathv[i]))) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
                }
            }
            if (r == 0) globfree(&gl);
        } else {
            st = list_dir(source, &paths, &n, err);
            if (!st && n == 0) st = mpx_error_set(err, MPX_E_IO, "%s: the folder is empty", source);
            /* A folder of per-input files is itself one sample. */
            bool flat = !st;
            for (int64_t i = 0; flat && i < n; i++) flat = !is_dir(paths[i]) && !(mpx_data_kind(paths[i]) &&
                                                                                 strcmp(mpx_data_kind(paths[i]), "npz") == 0);
            if (flat && n) {
                free_list(paths, n);
                paths = NULL;
                n = 0;
                st = folder_sample(s, d, source, err);
                d->matched = 1;
            }
        }
        if (!st && paths) {
            d->matched = n;
            if (n > MAX_SAMPLES && !(a->limit > 0 && a->limit <= MAX_SAMPLES))
                st = mpx_error_set(err, MPX_E_LIMIT, "%s matches %lld files, more than %d: give `limit <n>`", source,
                                   (long long)n, MAX_SAMPLES);
            else {
                shuffle_limit(paths, &n, a->shuffle, a->seed, a->limit);
                st = samples_of(s, d, paths, n, err);
            }
        }
    }
    free_list(paths, n);
    if (!st && d->n == 0) st = mpx_error_set(err, MPX_E_IO, "%s gives no samples", source);
    if (st) {
        repl_data_free(d);
        return st;
    }
    *out = d;
    return MPX_OK;
}

/* Calls f(s, input, value) for each value sample k of d sets, read without
 * the bound-shape check (to learn the shapes a data set brings). */
static mpx_status sample_shapes(mpx_session *s, const repl_dataset *d, int k, char names[][256], char shapes[][256],
                                int *n, int max, mpx_error *err) {
    const repl_sample *smp = &d->samples[k];
    mpx_status st = MPX_OK;
    *n = 0;
    mpx_npz z = {0};
    const mpx_npz *zp = &d->stack;
    if (smp->npz[0]) {
        if ((st = mpx_npz_read(smp->npz, &z, err)) || (st = check_keys(s, &z, smp->npz, err))) goto done;
        zp = &z;
    }
    for (int j = 0; (smp->npz[0] || smp->stacked >= 0) && j < zp->n && *n < max; j++) {
        const mpx_value *a = &zp->values[j];
        snprintf(names[*n], 256, "%s", zp->keys[j]);
        if (smp->stacked >= 0) repl_dims_str(a->rank - 1, a->dims + 1, shapes[*n], 256);
        else repl_dims_str(a->rank, a->dims, shapes[*n], 256);
        (*n)++;
    }
    for (int j = 0; j < smp->n_src && *n < max; j++) {
        const mpx_tensor *t = NULL;
        for (int i = 0; i < s->graph->n_inputs; i++)
            if (strcmp(s->graph->inputs[i]->name, smp->src[j].input) == 0) t = s->graph->inputs[i];
        mpx_value f;
        if (!t) continue;
        if ((st = repl_input_value(&smp->src[j].spec, t, &f, err))) goto done;
        snprintf(names[*n], 256, "%s", smp->src[j].input);
        repl_dims_str(f.rank, f.dims, shapes[*n], 256);
        mpx_value_free(&f);
        (*n)++;
    }
done:
    mpx_npz_free(&z);
    return st;
}

/* The model input called name, or NULL. */
static const mpx_tensor *input_named(const mpx_graph *g, const char *name) {
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->inputs[i]->name, name) == 0) return g->inputs[i];
    return NULL;
}

/* Put d in: bind the shapes its first sample brings where they differ from
 * the bound ones (every sample must then share them), check that the first
 * sample makes inputs. On failure the session keeps its old data set (a shape
 * bound on the way stays bound, as `input ... shape` would leave it). */
static mpx_status adopt(mpx_session *s, repl_dataset *d, mpx_error *err) {
    char names[64][256], shapes[64][256];
    int n = 0;
    mpx_status st = sample_shapes(s, d, 0, names, shapes, &n, 64, err);
    if (st) return repl_error_sample(err, 0, d->n, d->samples[0].label);
    for (int j = 0; j < n && !st; j++) {
        const mpx_tensor *t = input_named(s->graph, names[j]);
        char bound[256];
        if (!t || strcmp(shapes[j], "scalar") == 0) continue;
        repl_dims_str(t->rank, t->dims, bound, sizeof bound);
        if (t->nelem >= 0 && strcmp(bound, shapes[j]) == 0) continue;
        if ((st = repl_input_shape(s, names[j], shapes[j], err))) {
            for (int k = 0; k < d->samples[0].n_src; k++)
                if (strcmp(d->samples[0].src[k].input, names[j]) == 0 && d->samples[0].src[k].spec.kind == MPX_INPUT_IMAGE)
                    return repl_image_size_hint(t, err);
            return st;
        }
        const mpx_input_spec *had = repl_find_spec(s, names[j]);
        if (had) {
            mpx_input_spec sp = *had;
            snprintf(sp.shape, sizeof sp.shape, "%.255s", shapes[j]);
            if ((st = repl_set_spec(s, &sp, err))) return st;
        }
    }
    /* The first sample must make inputs: tried with d in place for the
     * moment of the check, the old set back either way. */
    repl_dataset *old = s->data;
    s->data = d;
    mpx_value *v = NULL;
    st = repl_data_inputs(s, 0, &v, err);
    s->data = old;
    if (st) return st;
    repl_free_inputs(s, v);
    if ((st = protect_files(s, d, err))) return st;
    repl_set_data(s, d);
    return MPX_OK;
}

/* A data set for a run beside the session's (search --validate): made as
 * `data` makes one, but it binds nothing: its first sample must give every
 * input the shape already bound, and make inputs. */
static mpx_status check_held_out(mpx_session *s, repl_dataset *d, mpx_error *err) {
    char names[64][256], shapes[64][256];
    int n = 0;
    mpx_status st = sample_shapes(s, d, 0, names, shapes, &n, 64, err);
    if (st) return repl_error_sample(err, 0, d->n, d->samples[0].label);
    for (int j = 0; j < n; j++) {
        const mpx_tensor *t = input_named(s->graph, names[j]);
        char bound[256];
        if (!t || strcmp(shapes[j], "scalar") == 0) continue;
        repl_dims_str(t->rank, t->dims, bound, sizeof bound);
        if (strcmp(bound, shapes[j]) != 0)
            return mpx_error_set(err, MPX_E_INVALID,
                                 "%s: sample 1 (%s) gives input %s the shape %s, the session's is %s: held-out samples "
                                 "must have the shape the search ran on", d->source, d->samples[0].label, names[j],
                                 shapes[j], bound);
    }
    repl_dataset *old = s->data;
    s->data = d;
    mpx_value *v = NULL;
    st = repl_data_inputs(s, 0, &v, err);
    s->data = old;
    if (!st) repl_free_inputs(s, v);
    return st;
}

static mpx_status take_list_args(int *argc, char **argv, data_args *a, bool allow_stacked, mpx_error *err);

mpx_status repl_data_open(mpx_session *s, int argc, char **argv, repl_dataset **out, mpx_error *err) {
    *out = NULL;
    if (argc < 1) return mpx_error_set(err, MPX_E_ARG, "no data spec (a .npz, a folder or a glob, as for data)");
    data_args a = {0};
    int rest = argc - 1;
    mpx_status st = take_list_args(&rest, argv + 1, &a, true, err);
    if (st) return st;
    if (rest) return mpx_error_set(err, MPX_E_ARG, "data spec: unexpected \"%s\"", argv[1]);
    repl_dataset *d = NULL;
    if ((st = build(s, argv[0], &a, &d, err))) return st;
    if ((st = check_held_out(s, d, err))) {
        repl_data_free(d);
        return st;
    }
    *out = d;
    return MPX_OK;
}

static void say_data(mpx_session *s, const repl_dataset *d, int64_t limit) {
    fprintf(s->info, "data: %s, %d sample%s", d->source, d->n, d->n == 1 ? "" : "s");
    if (d->matched > d->n) fprintf(s->info, " (of %lld matched: limit %lld)", (long long)d->matched, (long long)limit);
    fprintf(s->info, "; runs go over every sample\n");
}

/* `limit n` and `shuffle seed` among words (removed from them). */
static mpx_status take_list_args(int *argc, char **argv, data_args *a, bool allow_stacked, mpx_error *err) {
    int o = 0;
    mpx_status st;
    for (int i = 0; i < *argc; i++) {
        if (allow_stacked && strcmp(argv[i], "stacked") == 0) a->stacked = true;
        else if (strcmp(argv[i], "limit") == 0 && i + 1 < *argc) {
            double v;
            if ((st = mpx_explore_parse_number(argv[++i], "limit", &v, err))) return st;
            if (!(v >= 1) || v > 1e15 || v != (double)(int64_t)v)
                return mpx_error_set(err, MPX_E_ARG, "limit: \"%s\" is not a count >= 1", argv[i]);
            a->limit = (int64_t)v;
        } else if (strcmp(argv[i], "shuffle") == 0 && i + 1 < *argc) {
            char *end;
            a->shuffle = true;
            a->seed = strtoull(argv[++i], &end, 10);
            if (!*argv[i] || *end || argv[i][0] == '-')
                return mpx_error_set(err, MPX_E_ARG, "shuffle: \"%s\" is not a seed", argv[i]);
        } else {
            argv[o++] = argv[i];
        }
    }
    *argc = o;
    return MPX_OK;
}

/* input <name> files '<glob>' npy|image|audio [options] [limit n] [shuffle seed]:
 * one sample per file for one input; proto holds the kind and checked options. */
mpx_status repl_data_from_files(mpx_session *s, const char *input, const char *pattern, int argc, char **argv,
                                mpx_status (*check)(int argc, char **argv, mpx_input_spec *sp, mpx_error *err),
                                mpx_error *err) {
    data_args a = {0};
    /* The words as typed, before take_list_args takes limit and shuffle out. */
    char *prefix[4] = {"input", (char *)input, "files", (char *)pattern};
    char **typed = malloc(((size_t)argc + 1) * sizeof *typed);
    if (!typed) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    memcpy(typed, argv, (size_t)argc * sizeof *typed);
    int n_typed = argc;
    mpx_status st = take_list_args(&argc, argv, &a, false, err);
    if (st) {
        free(typed);
        return st;
    }
    mpx_input_spec proto;
    memset(&proto, 0, sizeof proto);
    snprintf(proto.name, sizeof proto.name, "%s", input);
    if ((st = check(argc, argv, &proto, err))) {
        free(typed);
        return st;
    }
    glob_t gl;
    int r = glob(pattern, 0, NULL, &gl);
    if (r == GLOB_NOMATCH || (r == 0 && gl.gl_pathc == 0)) {
        if (r == 0) globfree(&gl);
        free(typed);
        return mpx_error_set(err, MPX_E_IO, "%s matches no file", pattern);
    }
    if (r != 0) {
        free(typed);
        return mpx_error_set(err, MPX_E_IO, "%s: the pattern cannot be read", pattern);
    }
    int64_t n = (int64_t)gl.gl_pathc;
    char **paths = calloc((size_t)n, sizeof *paths);
    for (int64_t i = 0; paths && i < n; i++)
        if (!(paths[i] = strdup(gl.gl_pathv[i]))) {
            free_list(paths, i);
            paths = NULL;
        }
    globfree(&gl);
    if (!paths) {
        free(typed);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    repl_dataset *d = data_new(pattern);
    if (!d) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    else {
        d->matched = n;
        replay_text(d->replay, sizeof d->replay, prefix, 4, typed, n_typed);
    }
    free(typed);
    if (!st && n > MAX_SAMPLES && !(a.limit > 0 && a.limit <= MAX_SAMPLES))
        st = mpx_error_set(err, MPX_E_LIMIT, "%s matches %lld files, more than %d: give `limit <n>`", pattern, (long long)n,
                           MAX_SAMPLES);
    if (!st) shuffle_limit(paths, &n, a.shuffle, a.seed, a.limit);
    for (int64_t i = 0; i < n && !st; i++) {
        if (is_dir(paths[i])) {
            st = mpx_error_set(err, MPX_E_IO, "%s: a folder, not a file", paths[i]);
            break;
        }
        repl_sample *smp = add_sample(d, paths[i], err);
        mpx_input_spec sp = proto;
        snprintf(sp.path, sizeof sp.path, "%s", paths[i]);
        st = smp ? add_source(smp, input, &sp, err) : err->status;
    }
    free_list(paths, n);
    if (!st) st = adopt(s, d, err);
    if (st) {
        repl_data_free(d);
        return st;
    }
    say_data(s, d, a.limit);
    return MPX_OK;
}

/* data <file.npz|folder|'glob'> [stacked] [limit n] [shuffle seed] | data off | data */
mpx_status repl_cmd_data(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    int argc = args->argc;
    char **argv = args->argv;
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (argc == 1) {
        if (!s->data) fprintf(s->out, "data: none (runs use the inputs' own specs)\n");
        else {
            fprintf(s->out, "data: %s, %d sample%s", s->data->source, s->data->n, s->data->n == 1 ? "" : "s");
            if (s->data->matched > s->data->n) fprintf(s->out, " of %lld", (long long)s->data->matched);
            fprintf(s->out, " (first: %s)\n", s->data->samples[0].label);
        }
        return MPX_OK;
    }
    if (argc == 2 && strcmp(argv[1], "off") == 0) {
        repl_set_data(s, NULL);
        fprintf(s->info, "data: off (runs use the inputs' own specs)\n");
        return MPX_OK;
    }
    char beside[4096];
    argv[1] = (char *)repl_beside_script(s, argv[1], true, beside, sizeof beside);
    data_args a = {0};
    char replay[sizeof ((repl_dataset *)0)->replay];
    replay_text(replay, sizeof replay, NULL, 0, argv, argc); /* before take_list_args moves words */
    int rest = argc - 2;
    if ((st = take_list_args(&rest, argv + 2, &a, true, err))) return st;
    if (rest)
        return repl_usage_error(err, argv[0], "unexpected \"%s\"", argv[2]);
    repl_dataset *d = NULL;
    if ((st = build(s, argv[1], &a, &d, err))) return st;
    memcpy(d->replay, replay, sizeof replay);
    if ((st = adopt(s, d, err))) {
        repl_data_free(d);
        return st;
    }
    say_data(s, d, a.limit);
    return MPX_OK;
}
