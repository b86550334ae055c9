/* repl_internal.h - what the command files of repl/ share: the session's
 * inner state and helpers, and the handlers the one command table in
 * commands.c points at, with the indices of each command's options. Only
 * repl/ includes it.
 *
 * Handler contract: validate everything and build results aside; touch the
 * session only once nothing can fail any more, so a failed command leaves
 * it exactly as it was. Results go to s->out; errors go into err. */
#ifndef MPX_REPL_INTERNAL_H
#define MPX_REPL_INTERNAL_H

#include "mpx_repl.h"
#include "mpx_explore.h"
#include "mpx_data.h"

#include <stdarg.h>
#include <stdint.h>

/* Each command's options by their index in its row's table (commands.c):
 * the handler reads args->opt[REPORT_TOP] and so on, parsed and checked. */
enum { OPT_JSON };                              /* ops, rules, diff */
enum { STATS_TOP, STATS_ALL, STATS_SAVE, STATS_LOAD };
enum { PLAN_CHANGED, PLAN_SCOPES, PLAN_JSON };
enum { RUN_LOCAL, RUN_KEEP, RUN_SAMPLES };
enum { REPORT_TOP, REPORT_ALL, REPORT_SORT, REPORT_SAMPLE, REPORT_SAMPLES, REPORT_JSON, REPORT_CSV };
/* report --sort's values past the metrics */
enum { REPORT_SORT_LOCAL = MPX_METRIC_COUNT, REPORT_SORT_ORDER };
enum { TENSOR_SAVE, TENSOR_SAVE_REF };
enum { COMPARE_LOCAL, COMPARE_JSON };
enum { SEARCH_METHOD, SEARCH_MAX_EVALS, SEARCH_TIME, SEARCH_APPLY_BEST, SEARCH_EVAL, SEARCH_VALIDATE,
       SEARCH_EVAL_TIMEOUT, SEARCH_JSON };
enum { SWEEP_JSON, SWEEP_CSV, SWEEP_PLOT, SWEEP_TABLE, SWEEP_SHARD }; /* merge: the first four */
enum { VIZ_AROUND, VIZ_TO_CAUSE, VIZ_SHAPES, VIZ_COLLAPSE, VIZ_FOLD, VIZ_CLUSTER, VIZ_WEIGHTS, VIZ_ALL, VIZ_OVERLAY,
       VIZ_LOCAL, VIZ_NO_LEGEND, VIZ_ENGINE, VIZ_GRAPH_COUNT,
       VIZ_WATCH = VIZ_GRAPH_COUNT, VIZ_UNWATCH,   /* svg */
       VIZ_NO_OVERLAY = VIZ_GRAPH_COUNT };         /* html */
enum { PLOT_LOCAL };
enum { EXPORT_FORCE, EXPORT_EXTERNAL, EXPORT_JSON };
/* A data set's keywords (data, input <name> files, search --validate):
 * repl_data_keywords (commands.c), parsed by repl_keywords_parse. */
enum { DATA_STACKED, DATA_LIMIT, DATA_SHUFFLE, DATA_KEYWORD_COUNT };
extern const mpx_opt repl_data_keywords[];
/* An image's and a sound's options (input <name> image|audio, and per file
 * in input <name> files and data-set folders): repl_image_keywords and
 * repl_audio_keywords (commands.c). */
enum { IMAGE_SIZE, IMAGE_LAYOUT, IMAGE_CHANNELS, IMAGE_SCALE, IMAGE_MEAN, IMAGE_STD, IMAGE_KEYWORD_COUNT };
enum { AUDIO_RATE, AUDIO_LENGTH, AUDIO_SCALE, AUDIO_KEYWORD_COUNT };
extern const mpx_opt repl_image_keywords[], repl_audio_keywords[];

/* ---- helpers (session.c) ------------------------------------------------ */
mpx_status repl_need_model(const mpx_session *s, mpx_error *err);
/* "1x3x224x224" -> dims; rejects empty parts, signs, junk and overflow. */
mpx_status repl_parse_shape(const char *text, int *rank, int64_t *dims, mpx_error *err);
/* A number: 1e-3, 1M, 64K, 1G (SI suffixes) - the whole word or an error
 * naming `what`. */
mpx_status mpx_explore_parse_number(const char *text, const char *what, double *out, mpx_error *err);
double repl_now_ms(void);
/* cmd_report.c: one layer's metrics as a JSON object (report, compare). */
struct cJSON *repl_metrics_json(const mpx_metrics *m);
/* The model's node called name, or NULL with "no node named ..." and a
 * did-you-mean in err. */
const mpx_node *repl_node_named(const mpx_session *s, const char *name, mpx_error *err);
/* "1x3x?x?" (? for an unknown dim), "scalar" for rank 0. */
/* Before writing path: refused when it is a file the session read (s->guard)
 * or a folder; the folders it needs are created when path is below the
 * current folder (relative, no ".."), else a missing folder is an error
 * naming it. */
mpx_status repl_make_parent(const mpx_session *s, const char *path, mpx_error *err);
/* The same, noting in made the topmost folder it created ("" for none), so
 * that a command failing after it can take the folders back out with
 * repl_unmake_parent (which removes only empty ones). */
mpx_status repl_make_parent_noted(const mpx_session *s, const char *path, char *made, size_t made_n,
                                  mpx_error *err);
void repl_unmake_parent(const char *path, const char *made);
/* Whether path could be written, checked before a long command (search,
 * sweep) so that a typo costs nothing: repl_make_parent's refusals, and a
 * folder that exists but cannot be written; nothing is created. */
mpx_status repl_check_target(const mpx_session *s, const char *path, mpx_error *err);
/* Refused when two of the n files one command writes (NULL: none) are one
 * file, by name or spelling (their folders must exist) or by identity. */
mpx_status repl_distinct_targets(const char *const *paths, int n, mpx_error *err);
/* Shards' ids (merged shards must share them): a file's content as "<size>
 * bytes, crc32 <hex>" (the model: the same in any folder), and the session's
 * inputs, data set, keep-io, target and rules as a CRC-32 of save's lines
 * for them. */
mpx_status repl_file_id(const char *path, char *out, size_t n, mpx_error *err);
mpx_status repl_session_id(const mpx_session *s, char *out, size_t n, mpx_error *err);
/* The loaded model's repl_file_id, made on first use and kept until the
 * next load; "" when the file cannot be read. */
const char *repl_model_id(mpx_session *s);
/* For a path that does not exist: "; did you mean <path>?" naming the
 * existing path whose parts are each the closest entry of their folder to
 * the part typed (mpx_name_hint's rule), else "" (into buf). */
const char *repl_path_tail(const char *path, char *buf, size_t n);
/* Write text to path whole or not at all (mpx_file_write_all: an exclusive
 * temporary file in its folder, synced, renamed), after repl_make_parent. */
mpx_status repl_write_file(const mpx_session *s, const char *path, const char *text, mpx_error *err);
/* Add path (a file the session read; what: what it is, for refusals) to
 * the files no command may write over (s->guard). */
mpx_status repl_protect(mpx_session *s, const char *path, const char *what, mpx_error *err);
/* Print text, or write it to path when path is non-NULL (saying so). Frees text. */
mpx_status repl_emit(mpx_session *s, char *text, const char *path, mpx_error *err);

/* Forget the last run, compare's runs and the run cache. */
void repl_drop_run(mpx_session *s);

/* ---- inputs (cmd_input.c) and data sets (cmd_data.c) -------------------- */
/* After an image's shape was refused for input t: appends to err's message
 * the `size HxW` that resizes images to t's fixed height and width (when
 * they are known). Returns err->status. */
mpx_status repl_image_size_hint(const mpx_tensor *t, mpx_error *err);
/* The values a file spec (npy, image, audio) gives input t. */
mpx_status repl_input_value(const mpx_input_spec *sp, const mpx_tensor *t, mpx_value *v, mpx_error *err);
/* The same through the session's decoded inputs (s->decoded): an image or
 * audio file is decoded once for what its value depends on (the input's
 * name, rank, dims and dtype; the spec's kind, path, options; the file's
 * device, inode, size and modification time), then copied; other kinds read
 * as repl_input_value does. */
mpx_status repl_input_value_kept(const mpx_session *s, const mpx_input_spec *sp, const mpx_tensor *t, mpx_value *v,
                                 mpx_error *err);
struct repl_decoded *repl_decoded_new(void);
/* Drop the decoded inputs of input name (NULL: all). */
void repl_decoded_drop(mpx_session *s, const char *name);
/* How many image/audio files were decoded for inputs since the session
 * began (what the decoded inputs save: tests read it). */
long long repl_decoded_count(const mpx_session *s);
typedef struct repl_dataset repl_dataset;
void repl_data_free(repl_dataset *d);
int repl_data_count(const repl_dataset *d);         /* 0 for NULL */
/* The session's data set of set (taken: freed with it, or on failure); NULL
 * on out of memory. */
repl_dataset *repl_data_labels(mpx_dataset *set, mpx_error *err);
const char *repl_data_label(const repl_dataset *d, int k);
/* The command that made d (`data ...` or `input <name> files ...`), its
 * words quoted, for `save`; NULL for merged shards' labels. */
const char *repl_data_replay(const repl_dataset *d);
/* A data set made from a spec as `data <spec> [limit n] [shuffle seed]
 * [stacked]` (argv[0] the source) without binding it or any shape: its first
 * sample must match the shapes bound (search --validate's held-out set). */
mpx_status repl_data_open(mpx_session *s, int argc, char **argv, repl_dataset **out, mpx_error *err);
/* Input values of sample k (the session's specs for inputs it does not
 * hold); errors name the sample. */
mpx_status repl_data_inputs(const mpx_session *s, int k, mpx_value **out, mpx_error *err);
/* input <name> files '<glob>' ...: check parses the words after the pattern
 * (kind and its options) into a spec. */
mpx_status repl_data_from_files(mpx_session *s, const char *input, const char *pattern, int argc, char **argv,
                                mpx_status (*check)(int argc, char **argv, mpx_input_spec *sp, mpx_error *err),
                                mpx_error *err);

/* A JSON file (at most 256 MB), parsed; errors name it. */
struct cJSON;
mpx_status repl_read_json(mpx_session *s, const char *path, struct cJSON **out, mpx_error *err);
/* The same file's text (malloc'd), unparsed. */
mpx_status repl_read_text(mpx_session *s, const char *path, char **out, mpx_error *err);
/* merge <shard.json> ... [--json [<file>] | --csv [<file>]]: the shards of a
 * data-set run (run --samples k/n; report --json) made the session's last run,
 * as one unsharded run gives (explore/'s mpx_shards; data_merge.c reads the
 * files and loads the model). */
mpx_status repl_merge_samples(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
/* Make c (a run of the session's plan, or merged shards) the last run: the
 * measured absmax taken from it, its summary printed. Takes c. */
/* session.c: the only functions that change the session's state (see its
 * comment). ran: the plan the run ran (s->plan), NULL for runs not made from
 * a plan (merged shards). */
mpx_status repl_take_run(mpx_session *s, mpx_compare *c, const mpx_format *target, bool local, const mpx_plan *ran,
                         mpx_error *err);
mpx_status repl_replan(mpx_session *s, bool say, mpx_error *err);
mpx_status repl_rebind_graph(mpx_session *s, mpx_error *err);
const mpx_input_spec *repl_find_spec(const mpx_session *s, const char *name);
mpx_status repl_set_spec(mpx_session *s, const mpx_input_spec *sp, mpx_error *err);
void repl_set_data(mpx_session *s, struct repl_dataset *d);
/* Why layer L of run c holds non-finite values where fp32 is finite
 * (mpx_nonfinite_cause_text, against the plan c ran), into buf. */
void repl_overflow_cause(const mpx_session *s, const mpx_compare *c, const mpx_layer *L, char *buf, size_t n);
/* The run's text summary (outputs, worst layer, overflow, underflow). */
void repl_print_run_summary(mpx_session *s, const mpx_compare *c, const mpx_format *target);
/* "k/n" with 1 <= k <= n; opt names the option in messages. */
mpx_status repl_parse_shard(const char *text, const char *opt, int *k, int *n, mpx_error *err);

/* Put a new model in (load): drops rules, inputs, the data set and the last
 * run; builds its plan first and on failure frees g and leaves the session
 * as it was. Takes g either way. */
mpx_status repl_set_graph(mpx_session *s, mpx_graph *g, const char *path, mpx_error *err);

/* ---- model: load, input shapes, info, ops, show (cmd_model.c) ----------- */
/* commands.c: run the words (argv[0] the command) as dispatch runs a
 * line: parsed against the command's row, then its handler. */
mpx_status repl_exec_words(mpx_session *s, int argc, char **argv, mpx_error *err);
/* commands.c: "usage: <the row's usage>", after a detail when fmt is given
 * ("unknown option "--jsn"; did you mean --json?; usage: ..."). */
__attribute__((format(printf, 3, 4))) mpx_status repl_usage_error(mpx_error *err, const char *cmd, const char *fmt,
                                                                  ...);
/* options.c: the same with the row (or, when c is NULL, name) and a va_list. */
mpx_status repl_usage_verror(mpx_error *err, const mpx_command *c, const char *name, const char *fmt, va_list ap);

/* commands.c: choice k of a row's "a|b|c" into buf (NULL past the last or
 * when it does not fit), and how many words after argv[i], option o, are its
 * values (MPX_TAKES_MAYBE: the next word unless it is another --option);
 * dispatch and completion both read words by these. */
const char *repl_choice_at(const char *choices, int k, char *buf, size_t n);
/* The index of the choice that w names in a `choices` string, by its name
 * or another spelling of it ("gray/grey"), or -1. */
int repl_choice_find(const char *choices, const char *w);
/* options.c: option o's choice k (from its choices or its name_at) into
 * buf, NULL past the last; how many words after argv[i] are o's values;
 * the options' lines of `help` (name, value, help, default) into buf. */
const char *repl_opt_choice(const mpx_opt *o, int k, char *buf, size_t n);
int repl_opt_takes(const mpx_opt *o, int i, int argc, char *const *argv);
size_t repl_options_help(const mpx_command *c, char *buf, size_t n);
/* Keyword options among a grammar's words (`data x/ limit 32 shuffle 7`):
 * the table's words (names without "--") and their values are taken out of
 * argv[0..*argc) into out (one per row, defaults filled), the other words
 * kept in order and counted in *argc. Refusals as for --options. */
mpx_status repl_keywords_parse(const mpx_opt *table, int *argc, char **argv, mpx_opt_value *out, mpx_error *err);
/* The same when every word must be one of the table's (what names them in
 * the refusal: "unknown image option ..."). */
mpx_status repl_keywords_only(const mpx_opt *table, const char *what, int argc, char **argv, mpx_opt_value *out,
                              mpx_error *err);

/* complete.c: the candidates for word `text` at position pos (0 = the
 * command) given the words before, names from s's model; returns how many.
 * Take them one by one (the caller frees each); free at the end. */
int repl_complete(const mpx_session *s, const char *text, int pos, char **words);
char *repl_complete_take(void);
const char *repl_complete_peek(int i);
void repl_complete_free(void);
/* Completers of grammars a row's spec cannot say (named in their rows). */
void repl_complete_input(const char *text, int pos, char **words);
void repl_complete_data(const char *text, int pos, char **words);
void repl_complete_rule(const char *text, int pos, char **words);
void repl_complete_condition(const char *text, int pos, char **words);
void repl_complete_sweep(const char *text, int pos, char **words);
void repl_complete_set(const char *text, int pos, char **words);
void repl_complete_profile(const char *text, int pos, char **words);
/* cmd_session.c: the settings' names (to add) and an on/off setting's words. */
void repl_setting_names(const char *text, void (*add)(const char *prefix, const char *word));
const char *repl_setting_choices(const char *name);

mpx_status repl_cmd_load(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_info(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_ops(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_show(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
/* `input <name> shape ...` (the shape form; the value forms are cmd_run.c's) */
mpx_status repl_input_shape(mpx_session *s, const char *name, const char *shape, mpx_error *err);

/* ---- colouring and the plan (cmd_plan.c) ------------------------------ */
mpx_status repl_cmd_target(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_keep_io(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_rule(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);   /* colour, color, accum */
mpx_status repl_cmd_unrule(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_undo(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);   /* undo, redo */
mpx_status repl_cmd_rules(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_profile(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_plan(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
/* Whether the last run ran the current plan: its target, and every compared
 * tensor in the format the plan gives it now (cmd_viz.c). */
bool repl_run_is_current(const mpx_session *s);
mpx_status repl_cmd_diff(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_why(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
/* Plan rules and options for the session's graph (measured figures from
 * the last reference run when there is one). */
mpx_status repl_build_plan(const mpx_session *s, const mpx_rules *r, const mpx_plan_opts *o, mpx_plan **out,
                           mpx_error *err);
/* Plan (rules, opts); on success push it as the new state (one undo step),
 * swap the plan in and print the one line saying what changed. */
mpx_status repl_apply_rules(mpx_session *s, const mpx_rules *r, const mpx_plan_opts *o, mpx_error *err);
/* After the plan changed: s->on_plan_change, if set. */
void repl_after_plan_change(mpx_session *s);

/* ---- inputs and runs (cmd_run.c) --------------------------------------- */
mpx_status repl_cmd_input(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_data(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);   /* cmd_data.c */
mpx_status repl_cmd_stats(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);  /* cmd_stats.c */
mpx_status repl_cmd_run(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
/* Check every weight the plan converts (once): the number of weights with
 * values that overflow the format (n_overflow: values; n_flushed: weights
 * with a non-zero value flushed to zero); when there is one, header and a
 * line per damaged weight to out if non-NULL. */
int repl_check_weights(const mpx_session *s, const mpx_plan *p, FILE *out, const char *header, int64_t *n_overflow,
                       int *n_flushed);
/* When weights of plan p have values flushed to zero (mpx_weight_check's
 * rule: the count compare's w.flush and export give), one line to out
 * saying how many and naming them; nothing otherwise. For the plan and run
 * summaries when repl_check_weights listed nothing. */
void repl_print_flushed(const mpx_session *s, const mpx_plan *p, FILE *out, const char *indent);
mpx_status repl_cmd_report(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_tensor(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_compare(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
/* Free the per-sample run caches (a new data set, model or cache budget). */
void repl_drop_sample_caches(mpx_session *s);
/* How a run uses the session's run cache (s->run_cache, or with a data set
 * each sample's): not at all (commands that run other plans, which would only
 * churn it), through it, or through it keeping what it replaces so that
 * repl_undo_trial can bring the cache's previous run back (search). */
typedef enum repl_cached { REPL_UNCACHED, REPL_CACHED, REPL_CACHED_UNDOABLE } repl_cached;
/* Run plan p on the session's inputs against the fp32 reference (Ctrl-C
 * cancels; progress on a terminal). keep: tensors to keep, or NULL;
 * measure: the layers whose metrics are taken, or NULL for all
 * (mpx_compare_opts). */
mpx_status repl_run_plan(mpx_session *s, const mpx_plan *p, bool local, const bool *keep, const bool *measure,
                         repl_cached how, mpx_compare **out, mpx_error *err);
/* Back to the run the cache(s) held before the last undoable run (a failed
 * search trial); nothing when there is none. */
void repl_undo_trial(mpx_session *s);
/* Every model input's values from the session's specs (default: random
 * normal, seed 0), in g->inputs order; free with repl_free_inputs. */
mpx_status repl_make_inputs(const mpx_session *s, mpx_value **out, mpx_error *err);
void repl_free_inputs(const mpx_session *s, mpx_value *v);
/* The same but leaving out input i where but[i] is set (absent: n = -1), for
 * a data-set sample that gives them itself. */
mpx_status repl_make_inputs_but(const mpx_session *s, const char *but, mpx_value **out, mpx_error *err);

/* ---- figures and conditions (figures.c): assert, search, sweep ---------- */
mpx_status repl_cmd_assert(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_search(mpx_session *s, const mpx_cmd_args *args, mpx_error *err); /* cmd_search.c */
mpx_status repl_cmd_sweep(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);  /* cmd_sweep.c */
mpx_status repl_cmd_merge(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
bool repl_is_output(const mpx_graph *g, int tensor);
/* "; did you mean <name>?" (or "") for a node and/or tensor name, a metric
 * (extra: also absmax and local), a format: graph/names.c's rule. */
const char *repl_name_tail(const mpx_graph *g, const char *typed, bool nodes, bool tensors, char *buf, size_t n);

/* search --eval (eval.c): the user's command, run once per evaluation on the
 * outputs written as .npy; its figures are eval and eval.<key>. */
typedef struct repl_eval repl_eval;
/* cancel: the session's Ctrl-C flag (NULL: none); set, it stops the
 * command under way (MPX_E_CANCELLED). */
mpx_status repl_eval_new(const char *command, double timeout_s, const volatile int *cancel, repl_eval **out,
                         mpx_error *err);
void repl_eval_free(repl_eval *e);
/* Figure fig ("eval" or "eval.<key>") of comparison c: the command runs
 * once per comparison (its answer is kept for the other figures of c). */
mpx_status repl_eval_figure(void *e, const mpx_graph *g, const mpx_compare *c, const char *fig, double *out,
                            mpx_error *err);

/* The session as explore/'s host (search, sweep): plans with the
 * session's options (or those given), runs through its run cache (local
 * runs bypass it; undoable ones can be taken back out, repl_undo_trial), the
 * progress lines on a terminal, Ctrl-C, and eval's figures when eval is
 * given. */
mpx_explore_host repl_explore_host(mpx_session *s, repl_eval *eval);

/* Warns once a session, on s->info, when a clause reads output.<metric> and
 * a model output is named "output" (output. is the worst over outputs). */
void repl_cond_warn(mpx_session *s, const mpx_cond *c);

/* ---- scripts (script.c) and the session commands (cmd_session.c) ------- */
mpx_status repl_cmd_source(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_set(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_save(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);

/* ---- export (cmd_export.c) ------------------------------------------- */
mpx_status repl_cmd_export(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
/* `source` nests at most this deep (counting the script run from the
 * command line). */
#define REPL_SOURCE_DEPTH 16
/* Run the commands read from in (path names it in messages): comments (#),
 * blank lines, trailing-backslash continuations. Each error is printed as
 * path:line: error: ... (the line the command starts on); the script stops
 * at the first unless `set bail off`, and at quit or Ctrl-C. Returns an exit
 * status: MPX_EXIT_OK, _ERROR, or _ASSERT (a command failed MPX_E_ASSERT). */
int repl_run_stream(mpx_session *s, const char *path, FILE *in);
/* A script named on the command line: repl_run_stream's status, or
 * MPX_EXIT_USAGE when the file cannot be opened. */
int repl_run_file(mpx_session *s, const char *path);
/* -c 'cmd; cmd' (split on ; outside quotes). */
int repl_run_inline(mpx_session *s, const char *text);
/* One line typed at the prompt: errors without file:line. */
int repl_run_line(mpx_session *s, const char *line);
/* Run a script from inside a command; its errors are printed by its own
 * runner, so a failure comes back "already reported" (repl_error_reported). */
mpx_status repl_source(mpx_session *s, const char *path, mpx_error *err);
bool repl_error_reported(const mpx_error *err);
/* A file a command reads (load, source, input file/image/audio/files, data):
 * a relative path that does not exist from the current folder, given in a
 * script (not -c, stdin or the prompt), is looked up beside that script;
 * buf[n] holds the path found there. pattern: path may be a glob (found
 * when it matches a file). Returns the path to use (path itself otherwise). */
const char *repl_beside_script(const mpx_session *s, const char *path, bool pattern, char *buf, size_t n);
/* "error: ..." on stderr, after "where:line: " when known. */
void repl_print_error(const mpx_session *s, const char *where, int line, const mpx_error *err);
/* The exit status of two outcomes together (an error outranks an assert). */
int repl_exit_worst(int a, int b);

/* `mpx --help`'s text (usage.c); the man page carries it too. */
extern const char repl_usage_text[];

/* ---- words: quoting, comments, separators, line length (lex.c) ------------ */
/* The longest script line (continuations joined) and typed line, in bytes. */
#define REPL_LINE_MAX ((size_t)1 << 20)
/* Split line in place into words: blanks separate, 'single' and "double"
 * quotes keep blanks (\" and \\ escapes inside double quotes), quoted and
 * plain parts join. An unterminated quote is an error naming its column,
 * unless lenient (completion reads half-typed lines). */
mpx_status repl_split_words(char *line, int *argc, char **argv, int max, bool lenient, mpx_error *err);
/* The first character of set outside quotes, or NULL. */
char *repl_find_unquoted(char *text, const char *set);
/* Cut a trailing comment (a # outside quotes). */
void repl_strip_comment(char *text);
/* w as one word that repl_split_words reads back (quoted where needed);
 * false when it does not fit in n or holds a line break. */
bool repl_quote_word(char *buf, size_t n, const char *w);
/* The last word of line (being typed: it may hold a quote still open):
 * where its text starts, what it reads as (into buf) and the quote left
 * open (0: none). */
char repl_last_word(const char *line, size_t *start, char *buf, size_t n);
/* A completion cand of that word (typed: its text as on the line, reading as
 * cand's first done characters; q: the quote left open) written as the
 * lexer reads it back: quoted where cand holds a blank, a quote, # or ;.
 * The typed text is kept when it already quotes (or needs no quoting),
 * else the whole word is quoted. open: the word goes on (a folder), so its
 * quote is not closed. False when it does not fit. */
bool repl_complete_quoted(const char *typed, char q, const char *cand, size_t done, bool open, char *buf, size_t n);
/* One line of in, its end of line kept, into *buf (grown, at most
 * REPL_LINE_MAX + 2 bytes): 0 and *len; 1 when the line is longer than
 * REPL_LINE_MAX (read up to the limit: repl_skip_line drops the rest); 2 at
 * a NUL byte (not text: the caller stops reading); -1 at the end of the
 * file; -2 out of memory. */
int repl_read_line(FILE *in, char **buf, size_t *cap, size_t *len);
/* The rest of a line: 0, or 2 at a NUL byte. */
int repl_skip_line(FILE *in);

/* ---- pictures: dot, svg, plot, html (cmd_viz.c) ------------------------ */
mpx_status repl_cmd_dot(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_svg(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_plot(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
mpx_status repl_cmd_html(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
/* Re-write the file of `svg <file> --watch` after a change of the plan (a
 * no-op when nothing is watched). `svg --watch` installs it as
 * s->on_plan_change; callers may also call it directly. Prints nothing unless
 * the re-write fails (a warning on stderr: the command that changed the plan
 * has succeeded all the same). */
void repl_viz_after_change(mpx_session *s);

#endif
