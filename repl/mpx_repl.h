/* mpx_repl.h - the session and its command table (the only module that talks
 * to a person).
 *
 * Ownership: an mpx_session owns everything it points at: the graph, the
 * inputs' values, the history of rules and settings, the current plan and
 * the last run's comparison. A load of another model frees the old ones only
 * once the new model is in. Commands never leave it half-changed: each builds
 * its result aside and swaps it in only on success.
 */
#ifndef MPX_REPL_H
#define MPX_REPL_H

#include <stdbool.h>
#include <stdio.h>

#include "mpx_colour.h"
#include "mpx_graph.h"
#include "mpx_numerics.h"

/* Exit statuses of the mpx program (documented in the README). */
enum {
    MPX_EXIT_OK = 0,
    MPX_EXIT_ERROR = 1,  /* a command failed */
    MPX_EXIT_ASSERT = 2, /* an assert failed */
    MPX_EXIT_USAGE = 64, /* bad command line */
};

/* How one model input's values are made (`input <name> random|const|file`).
 * The values are made again whenever the input's shape changes. */
typedef enum mpx_input_kind {
    MPX_INPUT_DEFAULT = 0, /* not set: random normal(0, 1), seed 0 */
    MPX_INPUT_NORMAL,      /* a = mean, b = std */
    MPX_INPUT_UNIFORM,     /* [a, b) */
    MPX_INPUT_CONST,       /* a */
    MPX_INPUT_FILE,        /* path (.npy); convert: integers to a float input */
    MPX_INPUT_IMAGE,       /* path (PNG/JPEG), opts */
    MPX_INPUT_AUDIO,       /* path (WAV, FLAC...), opts */
} mpx_input_kind;

typedef struct mpx_input_spec {
    char name[256];
    mpx_input_kind kind;
    double a, b;
    unsigned long long seed;
    char path[1024];
    bool convert;            /* file: integer values converted for a float input */
    char opts[512];          /* image/audio: the option words as typed (checked) */
    char shape[256];         /* as typed with `input <name> shape` or bound by a file, "" if never */
} mpx_input_spec;

typedef struct mpx_session {
    mpx_graph *graph;
    char model_path[1024];
    char model_id[48];       /* the model file's content (repl_model_id); "" not made yet */
    char merged_session_id[16]; /* the session merged shards ran from, while their samples are the data set */

    /* Inputs, in the order they were set (replayed by `save`). */
    int n_specs;
    mpx_input_spec *specs;
    /* A data set (`data`, `input <name> files`): runs go over its samples;
     * NULL: one run on the specs' values. */
    struct repl_dataset *data;

    /* Rules and plan options (target, keep-io, accumulation) with undo/redo;
     * the plan built from its current state (NULL without a model). */
    mpx_history *hist;
    mpx_plan *plan;

    /* The last run: its comparison and the plan options and rules it ran
     * under (so `report` can say what it reports). NULL before any run. */
    mpx_compare *last;
    const mpx_format *last_target; /* the target the last run ran */
    /* The plan the last run ran: s->plan until the plan changes (then kept
     * for the run's sake), NULL for runs not made from a plan. */
    mpx_plan *run_plan;
    bool last_local;         /* it has local metrics */
    double *absmax;          /* [n_nodes] from the last reference, for rules */
    /* `run`'s values and assignment (NULL before the first run): the next
     * `run` on the same inputs recomputes only what a plan change touched.
     * It checks the input values itself; freed with the run. */
    mpx_compare_cache *run_cache;
    /* The inputs made once for all the evaluations of one `search` (NULL
     * otherwise), which never changes them: repl_run_plan runs on them
     * instead of making them again (det's random input was 7% of a
     * search). Owned by that command, freed before it returns. */
    mpx_value *held_inputs;
    /* Over a data set: one cache per sample (n_sample_cache of them, made on
     * first use), the budget split between them, so that each sample's
     * reference and unchanged layers are computed once across runs. */
    mpx_compare_cache **sample_cache;
    int n_sample_cache;
    int cache_mb;            /* its budget (`set cache`, default 512; 0: no cache) */
    long memory_mb;          /* `set memory`: the readers' memory budget (0: the default, mpx_memory_budget) */
    long loops_s;            /* `set loops`: seconds a Loop/Scan node may run (mpx_set_loop_budget; 0: no limit) */
    /* Image and audio input files as decoded (and resized or resampled) for
     * their input, kept across runs, search evaluations and data-set passes
     * (cmd_input.c says when an entry is used; made on first use). */
    struct repl_decoded *decoded;

    /* `compare`'s runs, one per format (for `plot` and `html`). */
    int n_stash;
    struct {
        const mpx_format *fmt;
        mpx_compare *cmp;
    } stash[8];

    /* Settings (`set`). */
    bool bail;               /* scripts stop at the first error (default on) */
    int report_top;          /* rows of `report` without --top (default 20) */
    bool color;              /* ANSI colour (terminal and NO_COLOR unset) */
    bool progress;           /* progress on stderr (a terminal) */
    /* `output.<metric>` was read while a model output is named "output":
     * warned once that it means the worst output (out[output].<metric> the
     * tensor). */
    bool warned_output_name;
    bool pager;              /* `set pager`: long output at the prompt through $PAGER */

    /* Scripts: `source` depth, and the file and line being run (messages). */
    int depth;
    const char *cur_file;
    int cur_line;
    int assert_failed;       /* an assert failed: exit status 2 */

    const char *line;        /* the command line being run (rules keep its text) */
    /* Called after every change of the plan (e.g. `svg --watch` rewrites its
     * file); NULL when nothing follows the plan. */
    void (*on_plan_change)(struct mpx_session *s);
    const volatile int *cancel; /* set by the Ctrl-C handler (main.c) */
    /* Every file the session read (models and their external data, scripts,
     * input files, merged shards): no command writes over one, through any
     * name (made on first use; repl_protect). */
    mpx_file_guard *guard;
    bool quit;
    FILE *out;               /* what a command was asked for: tables, JSON, DOT (stdout) */
    /* What a command did, not what it was asked for: "loaded ...", "input
     * ...", plan summaries after a change, "wrote ...", warnings. The program
     * sends it to stderr (so `mpx -c '...; plan --json' | jq` reads JSON
     * alone) or nowhere (-q); mpx_session_init makes it out. */
    FILE *info;
} mpx_session;

void mpx_session_init(mpx_session *s, FILE *out);
void mpx_session_free(mpx_session *s);

/* Run one command line (already without comment and continuation handling).
 * Returns MPX_OK or the failing status with err filled; s is unchanged on
 * failure. */
mpx_status mpx_session_exec(mpx_session *s, const char *line, mpx_error *err);

/* The command table: one row per command carries its usage, help and its
 * arguments' spec, and dispatch, argument checking, `help`, completion and
 * the man page all read these rows (as Redis' commands.def does).
 *
 * What one word is, for checking and completion. */
typedef enum mpx_word_kind {
    MPX_WORD_TEXT = 0, /* anything (a number, a list, a glob) */
    MPX_WORD_FILE,
    MPX_WORD_NODE,
    MPX_WORD_NODE_OR_TENSOR,
    MPX_WORD_FORMAT,
    MPX_WORD_METRIC,
    MPX_WORD_COMMAND,
    MPX_WORD_CHOICE,   /* one of the row's `choices` ("on|off") */
} mpx_word_kind;

/* An --option's value, as dispatch parses it (what the handler reads):
 * FLAG takes no word; INT a whole number and NUMBER a number (1e-3, 1M,
 * 64K: mpx_explore_parse_number) within [min, max]; TEXT, PATH and NODE a
 * word as typed (PATH and NODE complete as files and node names); NODES
 * a comma list of nodes or tensors; CHOICE one of `choices` ("a|b|c") or of
 * the names `name_at` gives, read as its index; SHARD "k/n" with
 * 1 <= k <= n. */
typedef enum mpx_opt_type {
    MPX_OPT_FLAG = 0,
    MPX_OPT_INT,
    MPX_OPT_NUMBER,
    MPX_OPT_TEXT,
    MPX_OPT_PATH,
    MPX_OPT_NODE,
    MPX_OPT_NODES,
    MPX_OPT_CHOICE,
    MPX_OPT_SHARD,
} mpx_opt_type;

/* What else holds of an option. */
enum {
    MPX_OPT_OPTIONAL = 1, /* its value may be left out (--json [<file>]): the next word is taken
                           * when it is not an option (a CHOICE's: when it is a choice) */
    MPX_OPT_REPEAT = 2,   /* may be given more than once, every value kept; else twice is refused */
    MPX_OPT_ALONE = 4,    /* only with no other word (plan --scopes): usage "| plan --scopes" */
    MPX_OPT_ABOVE = 8,    /* NUMBER: more than min, not min itself */
};

/* One --option of a command: every fact about it (dispatch, usage, help,
 * completion, the man page and the suggestion for a mistyped one read it;
 * the handler reads its parsed value by its index in the table). */
typedef struct mpx_opt {
    const char *name;    /* "--top" */
    mpx_opt_type type;   /* of its value (FLAG: none) */
    const char *meta;    /* its value in usage ("<n>"); NULL: the choices */
    const char *help;    /* one line for `help` and the man page */
    const char *def;     /* the default, parsed as a typed value would be (NULL: none) */
    double min, max;     /* INT and NUMBER bounds (both 0: any) */
    unsigned flags;      /* MPX_OPT_OPTIONAL | MPX_OPT_REPEAT | ... */
    int group;           /* options of one non-zero group exclude each other: [--json | --csv] */
    const char *needs;   /* an option that must be given with it: [--eval <c> [--eval-timeout <s>]] */
    const char *choices; /* CHOICE: "dot|sfdp|neato" */
    const char *(*name_at)(int k); /* CHOICE: the k-th name (NULL past the last), when a table has them */
    mpx_opt_type type2;  /* a second value (--around <node> <depth>: INT), FLAG for none */
    const char *meta2;
} mpx_opt;

/* The parsed value of one option (by its index in the command's table). */
enum { MPX_OPT_REPEAT_MAX = 16 };
typedef struct mpx_opt_value {
    bool given;        /* on the line; otherwise the fields hold the default (if any) */
    bool has_value;    /* a value is there (given, or the default) */
    const char *text;  /* the value's word as typed (or the default's text) */
    long long i;       /* INT; CHOICE: the index; SHARD: k; the second value (INT) goes in n */
    long long n;       /* SHARD: n; the second value */
    double d;          /* NUMBER (INT too, as a double) */
    int count;         /* how many times given (MPX_OPT_REPEAT: every value in all[]) */
    const char *all[MPX_OPT_REPEAT_MAX];
} mpx_opt_value;

enum { MPX_ARGS_MAX = 64, MPX_OPTS_MAX = 24 };
/* A command line as dispatch parsed it against the command's row. */
typedef struct mpx_cmd_args {
    int argc;                        /* every word as typed: argv[0] is the command */
    char **argv;
    int n;                           /* the plain words: not options nor their values */
    char *word[MPX_ARGS_MAX];
    mpx_opt_value opt[MPX_OPTS_MAX];
} mpx_cmd_args;

enum { MPX_ARGS_GRAMMAR = -1 }; /* min_args: the handler parses its own grammar */

typedef struct mpx_command {
    const char *name;
    const char *words;   /* the synopsis of the plain words ("<file.onnx>"); the usage adds the options */
    const char *summary;
    const char *help;    /* longer text for `help <command>` (the options' own lines follow it) */
    mpx_status (*handler)(struct mpx_session *s, const mpx_cmd_args *args, mpx_error *err);
    /* Words after the name that are not options or their values: at least
     * min_args (MPX_ARGS_GRAMMAR: checked by the handler's own grammar, e.g.
     * colour rules), at most max_args (-1: any number). */
    int min_args, max_args;
    mpx_word_kind args[3];   /* the kind of word k (the last repeats) */
    const char *choices;     /* for MPX_WORD_CHOICE words */
    const mpx_opt *options;  /* ends with a {NULL} row; NULL: none */
    /* Completion of a grammar the spec cannot say (input, colour, set...):
     * adds candidates for word pos (0 = the command) given the words before. */
    void (*complete)(const char *text, int pos, char **words);
} mpx_command;

const mpx_command *mpx_commands(int *count);
const mpx_command *mpx_command_find(const char *name); /* NULL: no such command (exit = quit) */
/* The row's option called name (NULL: it has none of that name). */
const mpx_opt *mpx_command_option(const mpx_command *c, const char *name);
/* The command's usage line: its name, its words and its options from the
 * table ("report [--top <n> | --all] ..."); built once, kept. */
const char *mpx_command_usage(const mpx_command *c);
/* Parse words (argv[0] the command) against the row into *out: options
 * typed, defaults filled, plain words counted. Refusals name the option, the
 * value and what was expected, with a suggestion for a mistyped option, and
 * end with the usage. */
mpx_status mpx_command_parse(const mpx_command *c, int argc, char **argv, mpx_cmd_args *out, mpx_error *err);

#endif
