/* data.c - data sets: the samples a source names (.npz files, sample folders,
 * a stacked .npz, one input's files), and the inputs of one sample.
 *
 * A data set lists files, it does not hold their values: every run goes over
 * its samples one at a time (inputs made, run, figures kept, values freed),
 * so memory grows with the samples' figures, not their values. */
#include "mpx_data.h"

#include <dirent.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct data_sample {
    char label[1024];  /* what messages call it: a file or folder name */
    char npz[1024];    /* an .npz whose keys are inputs, or "" */
    int64_t stacked;   /* index along the stacked .npz's first axis, or -1 */
    int n_src;
    mpx_data_file *src;
} data_sample;

struct mpx_dataset {
    char source[1024]; /* as given */
    int n;
    data_sample *samples;
    mpx_npz stack;     /* a stacked .npz, read once */
    int64_t matched;   /* files the source matched before limit */
    bool labels_only;  /* from merged shards: names, no files to run */
};

void mpx_dataset_free(mpx_dataset *d) {
    if (!d) return;
    for (int i = 0; i < d->n; i++) free(d->samples[i].src);
    free(d->samples);
    mpx_npz_free(&d->stack);
    free(d);
}

int mpx_dataset_count(const mpx_dataset *d) { return d ? d->n : 0; }
const char *mpx_dataset_source(const mpx_dataset *d) { return d ? d->source : ""; }
int64_t mpx_dataset_matched(const mpx_dataset *d) { return d ? d->matched : 0; }

const char *mpx_dataset_label(const mpx_dataset *d, int k) {
    return d && k >= 0 && k < d->n ? d->samples[k].label : "?";
}

const mpx_data_file *mpx_dataset_file(const mpx_dataset *d, int k, const char *input) {
    if (!d || k < 0 || k >= d->n) return NULL;
    for (int j = 0; j < d->samples[k].n_src; j++)
        if (strcmp(d->samples[k].src[j].input, input) == 0) return &d->samples[k].src[j];
    return NULL;
}

mpx_status mpx_dataset_each_path(const mpx_dataset *d, mpx_status (*f)(void *ctx, const char *path, mpx_error *err),
                                 void *ctx, mpx_error *err) {
    mpx_status st = d->stack.n ? f(ctx, d->source, err) : MPX_OK;
    for (int k = 0; k < d->n && !st; k++) {
        const data_sample *sm = &d->samples[k];
        if (sm->npz[0]) st = f(ctx, sm->npz, err);
        for (int j = 0; j < sm->n_src && !st; j++) st = f(ctx, sm->src[j].path, err);
    }
    return st;
}

mpx_status mpx_dataset_error_sample(mpx_error *err, int k, int n, const char *label) {
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

void mpx_dataset_free_inputs(const mpx_graph *g, mpx_value *v) {
    if (!v) return;
    for (int i = 0; i < g->n_inputs; i++) mpx_value_free(&v[i]);
    free(v);
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
                      "one shape)", from, t->name, mpx_dims_str(v->rank, v->dims, a, sizeof a),
                      mpx_dims_str(t->rank, t->dims, b, sizeof b));
        mpx_value_free(v);
        return err->status;
    }
    if ((v->i != NULL) != mpx_dtype_is_int_like(t->dtype)) {
        mpx_error_set(err, MPX_E_ARG, "%s holds %s values for input %s, which is %s", from, v->i ? "integer" : "float",
                      t->name, mpx_dtype_name(t->dtype));
        mpx_value_free(v);
        return err->status;
    }
    mpx_status hs = mpx_value_hold_as(v, t->dtype, err);
    if (hs != MPX_OK) {
        mpx_value_free(v);
        return hs;
    }
    v->dtype = t->dtype;
    mpx_value_free(&inputs[i]);
    inputs[i] = *v;
    return MPX_OK;
}

/* Check an .npz's keys against the model's inputs: every key an input, and
 * nothing left out that the host has no values for. */
static mpx_status check_keys(const mpx_graph *g, const mpx_data_host *h, const mpx_npz *z, const char *path,
                             mpx_error *err) {
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
        if (!have && !(h && h->has_values && h->has_values(h->ctx, g->inputs[i]->name)))
            return mpx_error_set(err, MPX_E_ARG, "%s has no array for input %s (and no `input %s ...` says how to make it)",
                                 path, g->inputs[i]->name, g->inputs[i]->name);
    }
    return MPX_OK;
}

mpx_status mpx_dataset_inputs(const mpx_dataset *d, const mpx_graph *g, int k, const mpx_data_host *h,
                              mpx_value **out, mpx_error *err) {
    if (d->labels_only)
        return mpx_error_set(err, MPX_E_INVALID, "the samples came from merged shards (%s) and name no files to run; give "
                             "the data set again with data ...", d->source);
    if (k < 0 || k >= d->n) return mpx_error_set(err, MPX_E_ARG, "no sample %d of %d", k + 1, d->n);
    const data_sample *smp = &d->samples[k];
    mpx_value *inputs = NULL;
    /* The sample's files give their inputs: no value is made for them from
     * the host's specs only to be replaced (a bound sound would be decoded
     * for each sample). */
    char *but = calloc(g->n_inputs ? (size_t)g->n_inputs : 1u, 1);
    if (!but) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int j = 0; j < smp->n_src; j++) {
        int i = input_index(g, smp->src[j].input);
        if (i >= 0) but[i] = 1;
    }
    mpx_status st = h->make_inputs(h->ctx, but, &inputs, err);
    free(but);
    if (st) return st;
    char from[1200];
    if (smp->npz[0] || smp->stacked >= 0) {
        mpx_npz z = {0};
        const mpx_npz *zp = &d->stack;
        if (smp->npz[0]) {
            if ((st = mpx_npz_read(smp->npz, &z, err)) || (st = check_keys(g, h, &z, smp->npz, err))) goto fail_npz;
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
                else if (all->d) memcpy(v.d, all->d + smp->stacked * per, (size_t)per * sizeof *v.d);
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
        if ((st = h->read_file(h->ctx, &smp->src[j], g->inputs[i], true, &v, err))) goto fail;
        if ((st = put_value(g, i, &v, inputs, smp->src[j].path, err))) goto fail;
    }
    *out = inputs;
    return MPX_OK;
fail:
    mpx_dataset_free_inputs(g, inputs);
    /* Name the sample first: "sample 7 of 32 (data/007): ...". */
    return mpx_dataset_error_sample(err, k, d->n, smp->label);
}

/* ---- building a data set ------------------------------------------------------ */

static mpx_dataset *data_new(const char *source) {
    mpx_dataset *d = calloc(1, sizeof *d);
    if (d) snprintf(d->source, sizeof d->source, "%s", source);
    return d;
}

static data_sample *add_sample(mpx_dataset *d, const char *label, mpx_error *err) {
    if (d->n % 64 == 0) {
        data_sample *grown = realloc(d->samples, (size_t)(d->n + 64) * sizeof *grown);
        if (!grown) {
            mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            return NULL;
        }
        d->samples = grown;
    }
    data_sample *smp = &d->samples[d->n++];
    memset(smp, 0, sizeof *smp);
    smp->stacked = -1;
    snprintf(smp->label, sizeof smp->label, "%.1000s", label); /* a label names a file: cut, never overrun */
    return smp;
}

mpx_status mpx_dataset_of_labels(const char *source, int n, const char *const *labels, mpx_dataset **out,
                                 mpx_error *err) {
    mpx_dataset *d = data_new(source);
    if (!d) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    d->labels_only = true;
    d->matched = n;
    for (int i = 0; i < n; i++)
        if (!add_sample(d, labels[i] ? labels[i] : "?", err)) {
            mpx_dataset_free(d);
            return err->status;
        }
    *out = d;
    return MPX_OK;
}

static mpx_status add_source(data_sample *smp, const mpx_data_file *f, mpx_error *err) {
    mpx_data_file *grown = realloc(smp->src, (size_t)(smp->n_src + 1) * sizeof *grown);
    if (!grown) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    smp->src = grown;
    smp->src[smp->n_src++] = *f;
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
static mpx_status folder_sample(const mpx_graph *g, const mpx_data_host *h, mpx_dataset *d, const char *dir,
                                mpx_error *err) {
    char **files = NULL;
    int64_t n = 0;
    mpx_status st = list_dir(dir, &files, &n, err);
    if (st) return st;
    data_sample *smp = add_sample(d, dir, err);
    if (!smp) st = err->status;
    for (int64_t f = 0; f < n && !st; f++) {
        char input[256];
        snprintf(input, sizeof input, "%s", base_name(files[f]));
        char *dot = strrchr(input, '.');
        if (dot) *dot = '\0';
        if (input_index(g, input) < 0) {
            st = mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" is not named after an input of the model (a sample folder "
                               "holds <input>.npy, .png, .jpg or .wav files)", dir, base_name(files[f]));
            break;
        }
        const char *kind = mpx_data_kind(files[f]);
        if (!kind || strcmp(kind, "npz") == 0) {
            st = mpx_error_set(err, MPX_E_UNSUPPORTED, "%s: not an .npy, PNG, JPEG or sound file", files[f]);
            break;
        }
        mpx_data_file sp;
        memset(&sp, 0, sizeof sp);
        snprintf(sp.input, sizeof sp.input, "%s", input);
        snprintf(sp.path, sizeof sp.path, "%s", files[f]);
        sp.kind = strcmp(kind, "npy") == 0 ? MPX_DATA_NPY : strcmp(kind, "audio") == 0 ? MPX_DATA_AUDIO : MPX_DATA_IMAGE;
        if (h && h->file_opts) h->file_opts(h->ctx, input, sp.kind, &sp); /* the input's own options */
        st = add_source(smp, &sp, err);
    }
    free_list(files, n);
    return st;
}

/* The samples of a list of paths: .npz files, or sample folders. */
static mpx_status samples_of(const mpx_graph *g, const mpx_data_host *h, mpx_dataset *d, char **paths, int64_t n,
                             mpx_error *err) {
    mpx_status st = MPX_OK;
    for (int64_t i = 0; i < n && !st; i++) {
        if (is_dir(paths[i])) {
            st = folder_sample(g, h, d, paths[i], err);
        } else {
            const char *kind = mpx_data_kind(paths[i]);
            if (!kind || strcmp(kind, "npz") != 0) {
                st = mpx_error_set(err, MPX_E_UNSUPPORTED, "%s: not an .npz file nor a sample folder (a data set is "
                                   ".npz files or one folder per sample)", paths[i]);
                break;
            }
            data_sample *smp = add_sample(d, paths[i], err);
            if (!smp) st = err->status;
            else snprintf(smp->npz, sizeof smp->npz, "%s", paths[i]);
        }
    }
    return st;
}

/* A stacked .npz: one sample per index of its arrays' first axis. */
static mpx_status stacked_samples(const mpx_graph *g, const mpx_data_host *h, mpx_dataset *d, const char *source,
                                  int64_t limit, mpx_error *err) {
    mpx_status st;
    if ((st = mpx_npz_read(source, &d->stack, err)) || (st = check_keys(g, h, &d->stack, source, err))) return st;
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
    int64_t take = limit > 0 && count > limit ? limit : count;
    for (int64_t k = 0; k < take && !st; k++) {
        char label[1100];
        /* Numbered from 1, as every sample table and --sample k count. */
        snprintf(label, sizeof label, "%s #%lld", source, (long long)k + 1);
        data_sample *smp = add_sample(d, label, err);
        if (!smp) st = err->status;
        else smp->stacked = k;
    }
    return st;
}

/* The paths a glob matches (GLOB_MARK's trailing '/' taken off folders). */
static mpx_status glob_paths(const char *pattern, int flags, char ***out, int64_t *n, mpx_error *err) {
    glob_t gl;
    int r = glob(pattern, flags, NULL, &gl);
    mpx_status st = MPX_OK;
    *out = NULL;
    *n = 0;
    if (r == GLOB_NOMATCH || (r == 0 && gl.gl_pathc == 0)) {
        st = mpx_error_set(err, MPX_E_IO, "%s matches no file", pattern);
    } else if (r != 0) {
        st = mpx_error_set(err, MPX_E_IO, "%s: the pattern cannot be read", pattern);
    } else {
        char **paths = calloc(gl.gl_pathc, sizeof *paths);
        int64_t k = 0;
        if (!paths) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        for (size_t i = 0; !st && i < gl.gl_pathc; i++) {
            size_t len = strlen(gl.gl_pathv[i]);
            if (len > 1 && gl.gl_pathv[i][len - 1] == '/') gl.gl_pathv[i][len - 1] = '\0'; /* GLOB_MARK */
            if (!(paths[k++] = strdup(gl.gl_pathv[i]))) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        }
        if (st) free_list(paths, k);
        else *out = paths, *n = k;
    }
    if (r == 0) globfree(&gl);
    return st;
}

static mpx_status too_many(const char *source, int64_t n, const mpx_data_opts *o, mpx_error *err) {
    if (n > MPX_DATA_MAX_SAMPLES && !(o->limit > 0 && o->limit <= MPX_DATA_MAX_SAMPLES))
        return mpx_error_set(err, MPX_E_LIMIT, "%s matches %lld files, more than %d: give `limit <n>`", source,
                             (long long)n, MPX_DATA_MAX_SAMPLES);
    return MPX_OK;
}

mpx_status mpx_dataset_open(const mpx_graph *g, const char *source, const mpx_data_opts *o, const mpx_data_host *h,
                            mpx_dataset **out, mpx_error *err) {
    *out = NULL;
    mpx_dataset *d = data_new(source);
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
        } else if (o->stacked) {
            st = stacked_samples(g, h, d, source, o->limit, err);
        } else {
            data_sample *smp = add_sample(d, source, err);
            if (!smp) st = err->status;
            else snprintf(smp->npz, sizeof smp->npz, "%s", source);
            d->matched = 1;
        }
    } else {
        if (pattern) {
            st = glob_paths(source, GLOB_MARK, &paths, &n, err);
        } else {
            st = list_dir(source, &paths, &n, err);
            if (!st && n == 0) st = mpx_error_set(err, MPX_E_IO, "%s: the folder is empty", source);
            /* A folder of per-input files is itself one sample. */
            bool flat = !st;
            for (int64_t i = 0; flat && i < n; i++)
                flat = !is_dir(paths[i]) && !(mpx_data_kind(paths[i]) && strcmp(mpx_data_kind(paths[i]), "npz") == 0);
            if (flat && n) {
                free_list(paths, n);
                paths = NULL;
                n = 0;
                st = folder_sample(g, h, d, source, err);
                d->matched = 1;
            }
        }
        if (!st && paths) {
            d->matched = n;
            if (!(st = too_many(source, n, o, err))) {
                shuffle_limit(paths, &n, o->shuffle, o->seed, o->limit);
                st = samples_of(g, h, d, paths, n, err);
            }
        }
    }
    free_list(paths, n);
    if (!st && d->n == 0) st = mpx_error_set(err, MPX_E_IO, "%s gives no samples", source);
    if (st) {
        mpx_dataset_free(d);
        return st;
    }
    *out = d;
    return MPX_OK;
}

mpx_status mpx_dataset_of_files(const char *input, const char *pattern, const mpx_data_file *proto,
                                const mpx_data_opts *o, mpx_dataset **out, mpx_error *err) {
    *out = NULL;
    char **paths = NULL;
    int64_t n = 0;
    mpx_status st = glob_paths(pattern, 0, &paths, &n, err);
    if (st) return st;
    mpx_dataset *d = data_new(pattern);
    if (!d) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    else d->matched = n;
    if (!st) st = too_many(pattern, n, o, err);
    if (!st) shuffle_limit(paths, &n, o->shuffle, o->seed, o->limit);
    for (int64_t i = 0; i < n && !st; i++) {
        if (is_dir(paths[i])) {
            st = mpx_error_set(err, MPX_E_IO, "%s: a folder, not a file", paths[i]);
            break;
        }
        data_sample *smp = add_sample(d, paths[i], err);
        mpx_data_file f = *proto;
        snprintf(f.input, sizeof f.input, "%s", input);
        snprintf(f.path, sizeof f.path, "%s", paths[i]);
        st = smp ? add_source(smp, &f, err) : err->status;
    }
    free_list(paths, n);
    if (st) {
        mpx_dataset_free(d);
        return st;
    }
    *out = d;
    return MPX_OK;
}

/* ---- the shapes a sample brings ----------------------------------------------- */

mpx_status mpx_dataset_shapes(const mpx_dataset *d, const mpx_graph *g, int k, const mpx_data_host *h,
                              mpx_data_shape *shapes, int max, int *n, mpx_error *err) {
    const data_sample *smp = &d->samples[k];
    mpx_status st = MPX_OK;
    *n = 0;
    mpx_npz z = {0};
    const mpx_npz *zp = &d->stack;
    if (smp->npz[0]) {
        if ((st = mpx_npz_read(smp->npz, &z, err)) || (st = check_keys(g, h, &z, smp->npz, err))) goto done;
        zp = &z;
    }
    for (int j = 0; (smp->npz[0] || smp->stacked >= 0) && j < zp->n && *n < max; j++) {
        const mpx_value *a = &zp->values[j];
        int skip = smp->stacked >= 0 ? 1 : 0;
        mpx_data_shape *s = &shapes[*n];
        snprintf(s->input, sizeof s->input, "%s", zp->keys[j]);
        s->rank = a->rank - skip;
        for (int i = 0; i < s->rank && i < MPX_MAX_RANK; i++) s->dims[i] = a->dims[i + skip];
        (*n)++;
    }
    for (int j = 0; j < smp->n_src && *n < max; j++) {
        int i = input_index(g, smp->src[j].input);
        mpx_value f;
        if (i < 0) continue;
        if ((st = h->read_file(h->ctx, &smp->src[j], g->inputs[i], false, &f, err))) goto done;
        mpx_data_shape *s = &shapes[*n];
        snprintf(s->input, sizeof s->input, "%s", smp->src[j].input);
        s->rank = f.rank;
        for (int r = 0; r < f.rank && r < MPX_MAX_RANK; r++) s->dims[r] = f.dims[r];
        mpx_value_free(&f);
        (*n)++;
    }
done:
    mpx_npz_free(&z);
    if (st) return mpx_dataset_error_sample(err, k, d->n, smp->label);
    return st;
}

mpx_status mpx_dataset_check_bound(const mpx_dataset *d, const mpx_graph *g, const mpx_data_host *h, mpx_error *err) {
    mpx_data_shape shapes[64];
    int n = 0;
    mpx_status st = mpx_dataset_shapes(d, g, 0, h, shapes, 64, &n, err);
    if (st) return st;
    for (int j = 0; j < n; j++) {
        int i = input_index(g, shapes[j].input);
        if (i < 0 || shapes[j].rank == 0) continue;
        const mpx_tensor *t = g->inputs[i];
        char bound[256], got[256];
        mpx_dims_str(t->rank, t->dims, bound, sizeof bound);
        mpx_dims_str(shapes[j].rank, shapes[j].dims, got, sizeof got);
        if (strcmp(bound, got) != 0)
            return mpx_error_set(err, MPX_E_INVALID,
                                 "%s: sample 1 (%s) gives input %s the shape %s, the session's is %s: held-out samples "
                                 "must have the shape the search ran on", d->source, d->samples[0].label,
                                 shapes[j].input, got, bound);
    }
    mpx_value *v = NULL;
    if ((st = mpx_dataset_inputs(d, g, 0, h, &v, err))) return st;
    mpx_dataset_free_inputs(g, v);
    return MPX_OK;
}
