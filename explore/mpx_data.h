/* mpx_data.h - data sets: many samples for a model's inputs, and the merge
 * of the report JSONs of runs over parts of one data set (shards).
 *
 * A data set lists files, it does not hold their values (a stacked .npz is
 * the exception: one file that is all the samples, read once). A sample is
 * an .npz whose keys are inputs, one index of a stacked .npz's first axis,
 * or files for single inputs (a sample folder's <input>.npy/.png/.wav, or
 * one file of `input <name> files '<glob>'`). A sample gives the inputs it
 * holds; the program makes the others (its own input specs) through
 * mpx_data_host.
 *
 * Ownership: mpx_dataset and mpx_shards are opaque, made by the functions
 * below and freed by mpx_dataset_free / mpx_shards_free. The host is
 * borrowed for each call.
 *
 * Nothing here prints: functions return an mpx_status and fill an
 * mpx_error naming the file, key, input or sample at fault.
 */
#ifndef MPX_DATA_H
#define MPX_DATA_H

#include "mpx_numerics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* More files than this need a limit: a glob of a million files would make a
 * data set nobody meant. */
#define MPX_DATA_MAX_SAMPLES 100000

typedef enum mpx_data_file_kind {
    MPX_DATA_NPY = 1, /* .npy; convert: integer values converted for a float input */
    MPX_DATA_IMAGE,   /* PNG/JPEG, decoded with opts */
    MPX_DATA_AUDIO,   /* WAV, FLAC..., decoded with opts */
} mpx_data_file_kind;

/* A file that gives one input of a sample. */
typedef struct mpx_data_file {
    char input[256];
    mpx_data_file_kind kind;
    char path[1024];
    char opts[512]; /* image/audio options as the host reads them ("" none) */
    bool convert;
} mpx_data_file;

/* What a data set needs of the program that holds the inputs' own specs. */
typedef struct mpx_data_host {
    void *ctx;
    /* True when input `name` has values of its own, so a sample may leave it out. */
    bool (*has_values)(void *ctx, const char *input);
    /* The options (opts, convert) of the input's own spec when it reads a file
     * of this kind: a sample folder's files are decoded as the input's own
     * file would be. False: none (f left as it is). */
    bool (*file_opts)(void *ctx, const char *input, mpx_data_file_kind kind, mpx_data_file *f);
    /* The values of file f for input t, decoded with its options (t's bound
     * shape guides images; the values' shape is checked by the caller).
     * `kept`: a value the host keeps across runs may be copied out. */
    mpx_status (*read_file)(void *ctx, const mpx_data_file *f, const mpx_tensor *t, bool kept, mpx_value *v,
                            mpx_error *err);
    /* Values for every input of g from the program's own specs, except the
     * inputs whose `but` entry is non-zero (left with n = -1); *out holds
     * g->n_inputs values, freed with mpx_dataset_free_inputs. */
    mpx_status (*make_inputs)(void *ctx, const char *but, mpx_value **out, mpx_error *err);
} mpx_data_host;

/* How a source's files are taken. */
typedef struct mpx_data_opts {
    bool stacked;            /* one .npz: a sample per index of its arrays' first axis */
    bool shuffle;            /* seeded shuffle of the files before the limit */
    unsigned long long seed;
    int64_t limit;           /* the first `limit` files (samples of a stacked .npz); 0: all */
} mpx_data_opts;

typedef struct mpx_dataset mpx_dataset;

/* The data set of source: one .npz (one sample, or with stacked one per
 * index), a folder of .npz files or sample folders, a folder that is one
 * sample (files named after inputs), or a glob of .npz files or sample
 * folders. The .npz keys are checked against g's inputs. */
mpx_status mpx_dataset_open(const mpx_graph *g, const char *source, const mpx_data_opts *o, const mpx_data_host *h,
                            mpx_dataset **out, mpx_error *err);
/* One sample per file matching pattern, each giving input `input` as proto
 * says (kind, opts, convert; proto's input and path are set per file). */
mpx_status mpx_dataset_of_files(const char *input, const char *pattern, const mpx_data_file *proto,
                                const mpx_data_opts *o, mpx_dataset **out, mpx_error *err);
/* Samples that are names alone (merged shards): no files to run. */
mpx_status mpx_dataset_of_labels(const char *source, int n, const char *const *labels, mpx_dataset **out,
                                 mpx_error *err);
void mpx_dataset_free(mpx_dataset *d);

int mpx_dataset_count(const mpx_dataset *d);               /* 0 for NULL */
const char *mpx_dataset_source(const mpx_dataset *d);      /* as given */
const char *mpx_dataset_label(const mpx_dataset *d, int k); /* "?" out of range */
int64_t mpx_dataset_matched(const mpx_dataset *d);         /* files matched before the limit */
/* The file of sample k that gives input, or NULL. */
const mpx_data_file *mpx_dataset_file(const mpx_dataset *d, int k, const char *input);
/* f(ctx, path) for every file the data set reads (stopping at an error). */
mpx_status mpx_dataset_each_path(const mpx_dataset *d, mpx_status (*f)(void *ctx, const char *path, mpx_error *err),
                                 void *ctx, mpx_error *err);

/* The inputs of sample k: the host's values for the inputs the sample does
 * not give, the sample's for the others (each checked against the bound
 * shape and kind of values). *out: g->n_inputs values. The error names the
 * sample first ("sample 7 of 32 (data/007): ..."). */
mpx_status mpx_dataset_inputs(const mpx_dataset *d, const mpx_graph *g, int k, const mpx_data_host *h,
                              mpx_value **out, mpx_error *err);
void mpx_dataset_free_inputs(const mpx_graph *g, mpx_value *v);

/* The shapes sample k gives its inputs, read without the bound-shape check
 * (to learn the shapes a data set brings): at most max, in *n. */
typedef struct mpx_data_shape {
    char input[256];
    int rank;
    int64_t dims[MPX_MAX_RANK];
} mpx_data_shape;
mpx_status mpx_dataset_shapes(const mpx_dataset *d, const mpx_graph *g, int k, const mpx_data_host *h,
                              mpx_data_shape *shapes, int max, int *n, mpx_error *err);
/* A data set beside the bound shapes (a held-out set): its first sample
 * must give every input the shape g binds, and make inputs. */
mpx_status mpx_dataset_check_bound(const mpx_dataset *d, const mpx_graph *g, const mpx_data_host *h, mpx_error *err);

/* Prefix an error with the sample it happened in: "sample k+1 of n (label): ". */
mpx_status mpx_dataset_error_sample(mpx_error *err, int k, int n, const char *label);

/* ---- shards: report --json of runs over parts of one data set ------------------
 * Each shard holds per-sample figures of every layer (run --samples k/n, then
 * report --json). mpx_shards_parse checks they are of one model, target,
 * rule list and data set size; mpx_shards_compare joins them into the
 * comparison an unsharded run gives: every layer's worst, mean and p95 taken
 * over all samples again, every sample exactly once. */
typedef struct mpx_shards mpx_shards;

/* texts[i]: the JSON text of the shard at paths[i] (paths name it in messages). */
mpx_status mpx_shards_parse(int n, const char *const *paths, const char *const *texts, mpx_shards **out,
                            mpx_error *err);
void mpx_shards_free(mpx_shards *sh);
int mpx_shards_count(const mpx_shards *sh);
const char *mpx_shards_model(const mpx_shards *sh);  /* the model file the shards ran */
const char *mpx_shards_target(const mpx_shards *sh); /* the target format's name, "fp32" for none */
const char *mpx_shards_session_id(const mpx_shards *sh); /* the session they ran from (all share it) */
int mpx_shards_total(const mpx_shards *sh);          /* samples in the whole data set */
/* The comparison over g (the model the shards ran), and the data set of the
 * samples' labels (mpx_dataset_of_labels). */
mpx_status mpx_shards_compare(const mpx_shards *sh, const mpx_graph *g, mpx_compare **out, mpx_dataset **labels,
                              mpx_error *err);

#ifdef __cplusplus
}
#endif

#endif
