/* cmd_data.c - data sets: many samples for the model's inputs.
 *
 * `data <file.npz|folder|'glob'> [stacked] [limit n] [shuffle seed]` and
 * `input <name> files '<glob>' npy|image|audio [options]` give the session a
 * data set (explore/'s mpx_dataset: which samples, and the inputs of each);
 * every run then goes over its samples one at a time. A sample overrides the
 * inputs it holds; the others keep their `input` specs. Image and audio files
 * of a folder sample use the options of that input's `input ... image|audio`
 * spec, if any. This file holds the words of the commands, what the session
 * adds (binding the shapes a data set brings, its files protected, the
 * command `save` writes back) and the session's side of mpx_data_host. */
#include "repl_internal.h"

#include <stdlib.h>
#include <string.h>

typedef mpx_data_opts data_args;

struct repl_dataset {
    mpx_dataset *set;
    /* The command that made it, its words quoted (what `save` writes);
     * "" for merged shards' labels, which no command makes again. */
    char replay[2048];
};

void repl_data_free(repl_dataset *d) {
    if (!d) return;
    mpx_dataset_free(d->set);
    free(d);
}

static repl_dataset *wrap(mpx_dataset *set, mpx_error *err) {
    repl_dataset *d = calloc(1, sizeof *d);
    if (!d) {
        mpx_dataset_free(set);
        mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        return NULL;
    }
    d->set = set;
    return d;
}

static mpx_status protect_one(void *ctx, const char *path, mpx_error *err) {
    return repl_protect(ctx, path, "an input file of this session", err);
}

/* The data set's files are the session's inputs from now on: no command may
 * write over them (s->guard). */
static mpx_status protect_files(mpx_session *s, const repl_dataset *d, mpx_error *err) {
    return mpx_dataset_each_path(d->set, protect_one, s, err);
}

int repl_data_count(const repl_dataset *d) { return d ? mpx_dataset_count(d->set) : 0; }

const char *repl_data_replay(const repl_dataset *d) { return d && d->replay[0] ? d->replay : NULL; }

const char *repl_data_label(const repl_dataset *d, int k) { return mpx_dataset_label(d ? d->set : NULL, k); }

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

/* ---- the session's side of mpx_data_host -------------------------------------- */

static bool host_has_values(void *ctx, const char *input) { return repl_find_spec(ctx, input) != NULL; }

static mpx_input_kind input_kind(mpx_data_file_kind k) {
    return k == MPX_DATA_IMAGE ? MPX_INPUT_IMAGE : k == MPX_DATA_AUDIO ? MPX_INPUT_AUDIO : MPX_INPUT_FILE;
}

static bool host_file_opts(void *ctx, const char *input, mpx_data_file_kind kind, mpx_data_file *f) {
    const mpx_input_spec *own = repl_find_spec(ctx, input);
    if (!own || own->kind != input_kind(kind)) return false;
    snprintf(f->opts, sizeof f->opts, "%s", own->opts);
    f->convert = own->convert;
    return true;
}

static mpx_status host_read_file(void *ctx, const mpx_data_file *f, const mpx_tensor *t, bool kept, mpx_value *v,
                                 mpx_error *err) {
    mpx_input_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.name, sizeof sp.name, "%s", f->input);
    sp.kind = input_kind(f->kind);
    snprintf(sp.path, sizeof sp.path, "%s", f->path);
    snprintf(sp.opts, sizeof sp.opts, "%s", f->opts);
    sp.convert = f->convert;
    return kept ? repl_input_value_kept(ctx, &sp, t, v, err) : repl_input_value(&sp, t, v, err);
}

static mpx_status host_make_inputs(void *ctx, const char *but, mpx_value **out, mpx_error *err) {
    return repl_make_inputs_but(ctx, but, out, err);
}

static mpx_data_host host_of(const mpx_session *s) {
    return (mpx_data_host){.ctx = (void *)s, .has_values = host_has_values, .file_opts = host_file_opts,
                           .read_file = host_read_file, .make_inputs = host_make_inputs};
}

mpx_status repl_data_inputs(const mpx_session *s, int k, mpx_value **out, mpx_error *err) {
    mpx_data_host h = host_of(s);
    return mpx_dataset_inputs(s->data->set, s->graph, k, &h, out, err);
}

repl_dataset *repl_data_labels(mpx_dataset *set, mpx_error *err) { return wrap(set, err); }

/* Put d in: bind the shapes its first sample brings where they differ from
 * the bound ones (every sample must then share them), check that the first
 * sample makes inputs. On failure the session keeps its old data set (a shape
 * bound on the way stays bound, as `input ... shape` would leave it). */
static mpx_status adopt(mpx_session *s, repl_dataset *d, mpx_error *err) {
    mpx_data_shape shapes[64];
    int n = 0;
    mpx_data_host h = host_of(s);
    mpx_status st = mpx_dataset_shapes(d->set, s->graph, 0, &h, shapes, 64, &n, err);
    if (st) return st;
    for (int j = 0; j < n && !st; j++) {
        const char *name = shapes[j].input;
        const mpx_tensor *t = NULL;
        for (int i = 0; i < s->graph->n_inputs && !t; i++)
            if (strcmp(s->graph->inputs[i]->name, name) == 0) t = s->graph->inputs[i];
        char bound[256], shape[256];
        if (!t || shapes[j].rank == 0) continue;
        mpx_dims_str(shapes[j].rank, shapes[j].dims, shape, sizeof shape);
        mpx_dims_str(t->rank, t->dims, bound, sizeof bound);
        if (t->nelem >= 0 && strcmp(bound, shape) == 0) continue;
        if ((st = repl_input_shape(s, name, shape, err))) {
            const mpx_data_file *f = mpx_dataset_file(d->set, 0, name);
            return f && f->kind == MPX_DATA_IMAGE ? repl_image_size_hint(t, err) : st;
        }
        const mpx_input_spec *had = repl_find_spec(s, name);
        if (had) {
            mpx_input_spec sp = *had;
            snprintf(sp.shape, sizeof sp.shape, "%.255s", shape);
            if ((st = repl_set_spec(s, &sp, err))) return st;
        }
    }
    /* The first sample must make inputs. */
    mpx_value *v = NULL;
    if ((st = mpx_dataset_inputs(d->set, s->graph, 0, &h, &v, err))) return st;
    repl_free_inputs(s, v);
    if ((st = protect_files(s, d, err))) return st;
    repl_set_data(s, d);
    return MPX_OK;
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
    mpx_data_host h = host_of(s);
    mpx_dataset *set = NULL;
    if ((st = mpx_dataset_open(s->graph, argv[0], &a, &h, &set, err))) return st;
    if ((st = mpx_dataset_check_bound(set, s->graph, &h, err))) {
        mpx_dataset_free(set);
        return st;
    }
    return (*out = wrap(set, err)) ? MPX_OK : err->status;
}

static void say_data(mpx_session *s, const repl_dataset *d, int64_t limit) {
    int n = mpx_dataset_count(d->set);
    int64_t matched = mpx_dataset_matched(d->set);
    fprintf(s->info, "data: %s, %d sample%s", mpx_dataset_source(d->set), n, n == 1 ? "" : "s");
    if (matched > n) fprintf(s->info, " (of %lld matched: limit %lld)", (long long)matched, (long long)limit);
    fprintf(s->info, "; runs go over every sample\n");
}

/* A data set's keywords (repl_data_keywords: stacked, limit n, shuffle
 * seed) among words, taken out of them into a. */
static mpx_status take_list_args(int *argc, char **argv, data_args *a, bool allow_stacked, mpx_error *err) {
    mpx_opt_value v[DATA_KEYWORD_COUNT];
    mpx_status st = repl_keywords_parse(repl_data_keywords, argc, argv, v, err);
    if (st) return st;
    if (v[DATA_STACKED].given && !allow_stacked)
        return mpx_error_set(err, MPX_E_ARG, "stacked is for an .npz's arrays (data), not for one input's files");
    a->stacked = v[DATA_STACKED].given;
    if (v[DATA_LIMIT].given) a->limit = (int64_t)v[DATA_LIMIT].i;
    if (v[DATA_SHUFFLE].given) {
        /* a seed is any unsigned 64-bit number: more than a double holds */
        const char *w = v[DATA_SHUFFLE].text;
        char *end;
        a->shuffle = true;
        a->seed = strtoull(w, &end, 10);
        if (!*w || *end || w[0] == '-') return mpx_error_set(err, MPX_E_ARG, "shuffle: \"%s\" is not a seed", w);
    }
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
    mpx_data_file f;
    memset(&f, 0, sizeof f);
    f.kind = proto.kind == MPX_INPUT_IMAGE ? MPX_DATA_IMAGE : proto.kind == MPX_INPUT_AUDIO ? MPX_DATA_AUDIO : MPX_DATA_NPY;
    snprintf(f.opts, sizeof f.opts, "%s", proto.opts);
    f.convert = proto.convert;
    mpx_dataset *set = NULL;
    repl_dataset *d = NULL;
    if (!(st = mpx_dataset_of_files(input, pattern, &f, &a, &set, err)) && (d = wrap(set, err)))
        replay_text(d->replay, sizeof d->replay, prefix, 4, typed, n_typed);
    free(typed);
    if (!st && !d) st = err->status;
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
    /* the words after `data`, copied: the source is resolved beside the
     * script and the keywords are taken out */
    int argc = args->n;
    char *argv[MPX_ARGS_MAX];
    memcpy(argv, args->word, (size_t)argc * sizeof *argv);
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    if (argc == 0) {
        if (!s->data) fprintf(s->out, "data: none (runs use the inputs' own specs)\n");
        else {
            const mpx_dataset *set = s->data->set;
            int n = mpx_dataset_count(set);
            fprintf(s->out, "data: %s, %d sample%s", mpx_dataset_source(set), n, n == 1 ? "" : "s");
            if (mpx_dataset_matched(set) > n) fprintf(s->out, " of %lld", (long long)mpx_dataset_matched(set));
            fprintf(s->out, " (first: %s)\n", mpx_dataset_label(set, 0));
        }
        return MPX_OK;
    }
    if (argc == 1 && strcmp(argv[0], "off") == 0) {
        repl_set_data(s, NULL);
        fprintf(s->info, "data: off (runs use the inputs' own specs)\n");
        return MPX_OK;
    }
    char beside[4096];
    argv[0] = (char *)repl_beside_script(s, argv[0], true, beside, sizeof beside);
    data_args a = {0};
    char replay[sizeof ((repl_dataset *)0)->replay];
    char *cmd[1] = {"data"};
    replay_text(replay, sizeof replay, cmd, 1, argv, argc); /* before take_list_args moves words */
    int rest = argc - 1;
    if ((st = take_list_args(&rest, argv + 1, &a, true, err))) return st;
    if (rest) return repl_usage_error(err, "data", "unexpected \"%s\"", argv[1]);
    mpx_data_host h = host_of(s);
    mpx_dataset *set = NULL;
    if ((st = mpx_dataset_open(s->graph, argv[0], &a, &h, &set, err))) return st;
    repl_dataset *d = wrap(set, err);
    if (!d) return err->status;
    memcpy(d->replay, replay, sizeof replay);
    if ((st = adopt(s, d, err))) {
        repl_data_free(d);
        return st;
    }
    say_data(s, d, a.limit);
    return MPX_OK;
}
