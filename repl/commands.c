/* commands.c - the one command table: every command's row and its options.
 *
 * A row says everything about a command's words: the synopsis of its plain
 * words, summary and help, how many plain words it takes and of what kind,
 * and its --options (mpx_opt: name, type, value, help line, default,
 * bounds; optional, repeated, alone, grouped, needing another). Dispatch
 * parses the words against the row (options.c) into the typed values the
 * handler reads by the option's index (the enums in repl_internal.h); the
 * usage line, `help`, the man page and completion (complete.c) are made from
 * the same rows, so an option's name is written once, here. The handlers
 * live in cmd_*.c, grouped by subject.
 */
#include "repl_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the commands' options (mpx_opt), each row indexed by its command's enum
 * (repl_internal.h), which the handler reads the parsed values by -------- */

/* report --sort: the metrics in the table's order, then local and order. */
static const char *sort_key_at(int k) {
    if (k < MPX_METRIC_COUNT) return mpx_metric_info_of((mpx_metric_id)k)->name;
    return k == REPORT_SORT_LOCAL ? "local" : k == REPORT_SORT_ORDER ? "order" : NULL;
}

static const char *search_method_at(int k) {
    return k < MPX_SEARCH_METHOD_COUNT ? mpx_search_method_name((mpx_search_method)k) : NULL;
}

#define JSON_TO_FILE(g) \
    {.name = "--json", .type = MPX_OPT_PATH, .meta = "<file>", .flags = MPX_OPT_OPTIONAL, .group = (g), \
     .help = "JSON instead of the text, printed or written to the file"}
#define CSV_TO_FILE(g) \
    {.name = "--csv", .type = MPX_OPT_PATH, .meta = "<file>", .flags = MPX_OPT_OPTIONAL, .group = (g), \
     .help = "CSV instead of the text, printed or written to the file"}

static const mpx_opt json_opts[] = {
    [OPT_JSON] = {.name = "--json", .help = "JSON instead of the text"},
    {0}};
static const mpx_opt json_file_opts[] = {[OPT_JSON] = JSON_TO_FILE(0), {0}};
static const mpx_opt stats_opts[] = {
    [STATS_TOP] = {.name = "--top", .type = MPX_OPT_INT, .meta = "<n>", .min = 1, .group = 1,
                   .help = "the n widest tensors (default: set top)"},
    [STATS_ALL] = {.name = "--all", .group = 1, .help = "every tensor"},
    [STATS_SAVE] = {.name = "--save", .type = MPX_OPT_PATH, .meta = "<ranges.json>", .help = "write the ranges as JSON"},
    [STATS_LOAD] = {.name = "--load", .type = MPX_OPT_PATH, .meta = "<ranges.json>", .flags = MPX_OPT_ALONE,
                    .help = "read such a file into the absmax rules, running nothing"},
    {0}};
static const mpx_opt plan_opts[] = {
    [PLAN_CHANGED] = {.name = "--changed", .help = "only nodes a rule decided or whose colour is not the default"},
    [PLAN_SCOPES] = {.name = "--scopes", .flags = MPX_OPT_ALONE, .help = "the scopes of node names as a tree"},
    [PLAN_JSON] = JSON_TO_FILE(0),
    {0}};
static const mpx_opt run_opts[] = {
    [RUN_LOCAL] = {.name = "--local", .help = "also each node's own error, fed the reference's inputs"},
    [RUN_KEEP] = {.name = "--keep", .type = MPX_OPT_NODES, .meta = "<tensor,...>", .flags = MPX_OPT_REPEAT,
                  .help = "keep these tensors' values for `tensor` (may be repeated)"},
    [RUN_SAMPLES] = {.name = "--samples", .type = MPX_OPT_SHARD, .meta = "<k>/<n>",
                     .help = "run only the samples i with i % n == k-1 (a shard)"},
    {0}};
static const mpx_opt report_opts[] = {
    [REPORT_TOP] = {.name = "--top", .type = MPX_OPT_INT, .meta = "<n>", .min = 1, .group = 1,
                    .help = "the n worst rows (default: set top)"},
    [REPORT_ALL] = {.name = "--all", .group = 1, .help = "every row"},
    [REPORT_SORT] = {.name = "--sort", .type = MPX_OPT_CHOICE, .meta = "<metric>", .name_at = sort_key_at,
                     .def = "rel_l2", .help = "the metric rows are sorted by, worst first; local; order"},
    [REPORT_SAMPLE] = {.name = "--sample", .type = MPX_OPT_INT, .meta = "<k>", .min = 1, .group = 2,
                       .help = "sample k's own figures (data sets)"},
    [REPORT_SAMPLES] = {.name = "--samples", .group = 2, .help = "one row per sample (data sets)"},
    [REPORT_JSON] = JSON_TO_FILE(3),
    [REPORT_CSV] = CSV_TO_FILE(3),
    {0}};
static const mpx_opt tensor_opts[] = {
    [TENSOR_SAVE] = {.name = "--save", .type = MPX_OPT_PATH, .meta = "<file.npy>", .help = "write the emulated values"},
    [TENSOR_SAVE_REF] = {.name = "--save-ref", .type = MPX_OPT_PATH, .meta = "<file.npy>",
                         .help = "write the fp32 reference's values"},
    {0}};
static const mpx_opt compare_opts[] = {
    [COMPARE_LOCAL] = {.name = "--local", .help = "also each node's own error"},
    [COMPARE_JSON] = {.name = "--json", .help = "JSON instead of the table"},
    {0}};
static const mpx_opt search_opts[] = {
    [SEARCH_METHOD] = {.name = "--method", .type = MPX_OPT_CHOICE, .name_at = search_method_at, .def = "auto",
                       .help = "how nodes are chosen (below)"},
    [SEARCH_MAX_EVALS] = {.name = "--max-evals", .type = MPX_OPT_INT, .meta = "<n>", .min = 1, .max = 1e6, .def = "500",
                          .help = "stop after n evaluations"},
    [SEARCH_TIME] = {.name = "--time", .type = MPX_OPT_NUMBER, .meta = "<s>", .min = 0, .max = 1e9,
                     .flags = MPX_OPT_ABOVE, .help = "stop after s seconds (checked before each evaluation)"},
    [SEARCH_APPLY_BEST] = {.name = "--apply-best", .help = "a search that stops applies its best plan so far"},
    [SEARCH_EVAL] = {.name = "--eval", .type = MPX_OPT_TEXT, .meta = "\"<command>\"",
                     .help = "your own figures eval, eval.<key>, from a command (below)"},
    [SEARCH_VALIDATE] = {.name = "--validate", .type = MPX_OPT_TEXT, .meta = "<data spec>",
                         .help = "read the condition again on held-out samples"},
    [SEARCH_EVAL_TIMEOUT] = {.name = "--eval-timeout", .type = MPX_OPT_NUMBER, .meta = "<s>", .min = 0, .max = 1e7,
                             .flags = MPX_OPT_ABOVE, .def = "60", .needs = "--eval",
                             .help = "--eval's command is killed after s seconds"},
    [SEARCH_JSON] = JSON_TO_FILE(0),
    {0}};
#define SWEEP_OPTS                                                                                                \
    [SWEEP_JSON] = JSON_TO_FILE(0), [SWEEP_CSV] = CSV_TO_FILE(0),                                                 \
    [SWEEP_PLOT] = {.name = "--plot", .type = MPX_OPT_PATH, .meta = "<file.svg>",                                 \
                    .help = "error against % of MACs low, with the Pareto front"},                                \
    [SWEEP_TABLE] = {.name = "--table", .help = "the table too, with --json, --csv or --plot"}
static const mpx_opt merge_opts[] = {SWEEP_OPTS, {0}};
static const mpx_opt sweep_opts[] = {
    SWEEP_OPTS,
    [SWEEP_SHARD] = {.name = "--shard", .type = MPX_OPT_SHARD, .meta = "<k>/<n>",
                     .help = "only the points i with i % n == k-1 (merge joins the shards)"},
    {0}};
/* The cast-graph options dot, svg and html share (cmd_viz.c reads them);
 * html's overlay is on by default, so its --local stands alone. */
#define GRAPH_OPTS(local_needs)                                                                                  \
    [VIZ_AROUND] = {.name = "--around", .type = MPX_OPT_NODE, .meta = "<node>", .type2 = MPX_OPT_INT,            \
                    .meta2 = "<depth>", .max = 1000, .help = "only nodes within depth edges of the node"},                   \
    [VIZ_TO_CAUSE] = {.name = "--upstream-to-cause", .needs = "--around",                                        \
                      .help = "also the path the node's error came along from its cause (after run --local)"},   \
    [VIZ_SHAPES] = {.name = "--shapes", .help = "edge labels add shapes"},                                       \
    [VIZ_COLLAPSE] = {.name = "--collapse", .help = "chains of nodes with the same formats as one node"},       \
    [VIZ_FOLD] = {.name = "--fold", .type = MPX_OPT_CHOICE, .choices = "scopes|regions", .flags = MPX_OPT_OPTIONAL, \
                  .help = "the model-level view (alone: scopes when names carry them, else regions)"},         \
    [VIZ_CLUSTER] = {.name = "--cluster", .type = MPX_OPT_INT, .meta = "<depth>", .max = 1000,                    \
                     .help = "group by the first depth components of node names"},                              \
    [VIZ_WEIGHTS] = {.name = "--weights", .help = "draw weights as nodes"},                                      \
    [VIZ_ALL] = {.name = "--all", .help = "Constant and folded nodes too"},                                      \
    [VIZ_OVERLAY] = {.name = "--overlay", .help = "border colour and width by the last run's rel_l2"},           \
    [VIZ_LOCAL] = {.name = "--local", .needs = (local_needs), .help = "the overlay shows each node's own error"}, \
    [VIZ_NO_LEGEND] = {.name = "--no-legend", .help = "leave the legend out"},                                  \
    [VIZ_ENGINE] = {.name = "--engine", .type = MPX_OPT_CHOICE, .choices = "dot|sfdp|neato", .def = "dot",     \
                    .help = "the Graphviz layout"}
static const mpx_opt dot_opts[] = {GRAPH_OPTS("--overlay"), {0}};
static const mpx_opt svg_opts[] = {
    GRAPH_OPTS("--overlay"),
    [VIZ_WATCH] = {.name = "--watch", .help = "re-write the file after every change of the plan"},
    [VIZ_UNWATCH] = {.name = "--unwatch", .flags = MPX_OPT_ALONE, .help = "stop watching"},
    {0}};
static const mpx_opt html_opts[] = {
    GRAPH_OPTS(NULL), [VIZ_NO_OVERLAY] = {.name = "--no-overlay", .help = "no error overlay on the graph"}, {0}};
static const mpx_opt plot_opts[] = {
    [PLOT_LOCAL] = {.name = "--local", .help = "each format's own error as a dashed line (after run --local)"}, {0}};
static const mpx_opt export_opts[] = {
    [EXPORT_FORCE] = {.name = "--force", .help = "write over an existing file"},
    [EXPORT_EXTERNAL] = {.name = "--external", .help = "weights of 1 KiB and more in <file.onnx>.data"},
    [EXPORT_JSON] = {.name = "--json", .type = MPX_OPT_PATH, .meta = "<file>", .flags = MPX_OPT_OPTIONAL,
                     .help = "what was written, as JSON"},
    {0}};

/* A data set's keywords, after its source in `data`, `input <name> files`
 * and search's --validate. */
const mpx_opt repl_data_keywords[] = {
    [DATA_STACKED] = {.name = "stacked", .help = "an .npz's arrays hold one sample per index (data only)"},
    [DATA_LIMIT] = {.name = "limit", .type = MPX_OPT_INT, .meta = "<n>", .min = 1,
                    .help = "the first n files (after the shuffle)"},
    [DATA_SHUFFLE] = {.name = "shuffle", .type = MPX_OPT_TEXT, .meta = "<seed>", .help = "a seeded shuffle first"},
    {0}};

/* The layouts and channel orders, in the order of mpx_image_layout and
 * mpx_image_channels (cmd_input.c maps the index). */
const mpx_opt repl_image_keywords[] = {
    [IMAGE_SIZE] = {.name = "size", .type = MPX_OPT_TEXT, .meta = "<H>x<W>", .help = "resize to H x W"},
    [IMAGE_LAYOUT] = {.name = "layout", .type = MPX_OPT_CHOICE, .choices = "nchw|nhwc", .help = "the input's layout"},
    [IMAGE_CHANNELS] = {.name = "channels", .type = MPX_OPT_CHOICE, .choices = "rgb|bgr|gray/grey",
                        .help = "the channels' order, or one gray channel (grey: the same)"},
    [IMAGE_SCALE] = {.name = "scale", .type = MPX_OPT_NUMBER, .meta = "<s>",
                     .help = "value = (pixel/255*scale - mean)/std"},
    [IMAGE_MEAN] = {.name = "mean", .type = MPX_OPT_TEXT, .meta = "<a,b,c>", .help = "per channel (1 or 3 values)"},
    [IMAGE_STD] = {.name = "std", .type = MPX_OPT_TEXT, .meta = "<a,b,c>", .help = "per channel (1 or 3 values)"},
    {0}};
const mpx_opt repl_audio_keywords[] = {
    [AUDIO_RATE] = {.name = "rate", .type = MPX_OPT_INT, .meta = "<hz>", .min = 1, .max = 2147483647,
                    .help = "resample to this rate"},
    [AUDIO_LENGTH] = {.name = "length", .type = MPX_OPT_INT, .meta = "<n>", .min = 1, .max = 2147483647,
                      .help = "pad with zeros or cut to n samples"},
    [AUDIO_SCALE] = {.name = "scale", .type = MPX_OPT_NUMBER, .meta = "<s>", .help = "times the values in [-1, 1)"},
    {0}};

static mpx_status cmd_help(mpx_session *s, const mpx_cmd_args *args, mpx_error *err);

static mpx_status cmd_quit(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    (void)args;
    (void)err;
    s->quit = true;
    return MPX_OK;
}

static const mpx_command commands[] = {
    {"load", "<file.onnx|file.json>", "load a model (the previous one stays if this fails)",
     "Loads an ONNX model or an mpx JSON model. Inputs keep their symbolic dims until\n"
     "bound with `input`. A model that fails to load leaves the session unchanged.\n"
     "ONNX opsets 1-6 are read in opset 7's form, each op with its version's meaning\n"
     "(\"opset 6 (read as 7)\"); a form that cannot be rewritten is refused naming the\n"
     "node, and such models do not export. The weights are packed for the kernels\n"
     "as the model loads (a MatMul's B, a recurrent op's W and R, a MatMulInteger's\n"
     "B), as a runtime's session does: the first run does not pack them.",
     repl_cmd_load, 1, 1, {MPX_WORD_FILE}, NULL, NULL, NULL},
    {"input", "<name> shape <AxBxC> | random [normal|uniform] [<a> <b>] [seed <n>] | const <v> | file <x.npy> [convert] | image <file> {image} | audio <file> {audio} | files '<glob>' npy|image|audio [options] {files}",
     "bind an input's shape, or say how its values are made",
     "shape: binds the input's dims (replacing symbolic ones such as\n"
     "p2o.DynamicDimension.0), then infers every tensor's shape and each node's cost\n"
     "figures; a shape that does not fit the model is refused and the previous\n"
     "binding stays.\n"
     "random: normal(mean, std) (default 0 1) or uniform [low, high) (default 0 1),\n"
     "seeded (default seed 0): the same seed gives the same values on every machine.\n"
     "const: every element the value. file: a NumPy .npy file, whose shape is bound;\n"
     "integer arrays feed a float input only with `convert` (each to the nearest float).\n"
     "image: a PNG or JPEG (libpng, libjpeg-turbo); value = (pixel/255*scale - mean)/std\n"
     "per channel (default 1, 0, 1; mean/std take 1 or 3 values). The shape follows the\n"
     "input: rank 4 gets batch 1, layout nchw unless the input's last dim is 1 or 3\n"
     "(nhwc), channels gray for a 1-channel input else rgb; alpha is dropped, gray from\n"
     "colour is 0.299R+0.587G+0.114B. size resizes (bilinear, half-pixel centres, no\n"
     "antialiasing) only when it differs from the file.\n"
     "audio: WAV, FLAC, OGG... (libsndfile), channels averaged, values in [-1, 1) times\n"
     "scale (32768: int16 range); rate resamples (libsamplerate, best sinc); length\n"
     "pads with zeros or cuts. Shape [n], [1, n] or [1, 1, n] by the input's rank.\n"
     "A file whose shape differs from the bound one binds its shape (and says so).\n"
     "An image or sound is decoded (and resized or resampled) once for its binding and\n"
     "kept for every run, search evaluation and data-set pass: a new binding, another\n"
     "shape or the file written again decodes it again (`set cache`).\n"
     "An input never set is random normal(0, 1), seed 0.",
     repl_cmd_input, MPX_ARGS_GRAMMAR, -1, {MPX_WORD_TEXT}, NULL, NULL, repl_complete_input},
    {"data", "[<file.npz>|<folder>|'<glob>' {data} | off]",
     "run over many samples: an .npz, a folder or glob of .npz files or sample folders",
     "An .npz whose keys are input names is one sample (stacked: its arrays have a\n"
     "leading sample axis, one sample per index, named file.npz #1, #2, ...: samples\n"
     "count from 1 everywhere). A folder or glob of .npz files gives\n"
     "one sample each; a folder of folders one sample per folder, each holding\n"
     "<input>.npy, .png, .jpg or .wav files (images and audio with the options of the\n"
     "input's own `input <name> image|audio` line). For one input's files:\n"
     "input <name> files '<glob>' npy|image|audio [options]. Files are taken in name\n"
     "order (shuffle <seed>: a seeded shuffle first), then the first <limit>; more than\n"
     "100000 files need a limit. Inputs a sample does not hold keep their own specs.\n"
     "The first sample's shapes are bound; every sample must share them.\n"
     "run, report, assert, search and sweep then go over every sample, one at a time:\n"
     "each layer's figures are its worst over the samples (report names the sample),\n"
     "absmax rules see the largest value over all samples. data off: back to one run.",
     repl_cmd_data, MPX_ARGS_GRAMMAR, -1, {MPX_WORD_TEXT}, NULL, NULL, repl_complete_data},
    {"stats", "",
     "every tensor's range in the fp32 reference, over all samples (calibration)",
     "Runs the fp32 reference on the inputs (every sample of a data set, one at a\n"
     "time) and shows per tensor min, max, absmax and the 99th and 99.9th percentile\n"
     "of |x|, largest absmax first, marking those beyond the target's largest finite\n"
     "value. Percentiles come from a histogram with 8 bins per power of two: the\n"
     "bin's upper edge, at most 9% above the true value. absmax rules (colour ... when\n"
     "absmax > ...) then use these ranges. --save writes them as JSON; --load reads\n"
     "such a file into the plan's absmax rules without running anything (the tensors\n"
     "must be the model's).",
     repl_cmd_stats, 0, 0, {MPX_WORD_TEXT}, NULL, stats_opts, NULL},
    {"info", "", "model summary: opset, node and parameter counts, inputs, outputs", NULL, repl_cmd_info, 0, 0, {MPX_WORD_TEXT}, NULL, NULL, NULL},
    {"ops", "", "per op type: nodes, parameters, MACs",
     "Lists each op type with its node count, weight elements and multiply-accumulates,\n"
     "then the totals (`info` and the plan's MAC share count the same way).\n"
     "params: each stored constant (initializer or Constant value; not values folded\n"
     "at load) counts once, with the first node that reads it, however many nodes or\n"
     "If branches share it; so the rows add up to the model's params, less constants\n"
     "no node reads (listed apart). MACs: one forward; the nodes of an If branch\n"
     "count only in the branch taken: the one a constant condition selects, or, when\n"
     "the condition is known only at run time, the branch with more MACs.\n"
     "--json prints (or writes) {\"ops\": [{\"op\", \"supported\", \"count\", \"params\",\n"
     "\"macs\"}...], \"nodes\", \"params\", \"params_unread\", \"macs\"} (macs null when unknown).",
     repl_cmd_ops, 0, 0, {MPX_WORD_TEXT}, NULL, json_file_opts, NULL},
    {"show", "<node>", "a node: op, inputs and outputs with shapes, attributes, cost figures", NULL,
     repl_cmd_show, 1, 1, {MPX_WORD_NODE}, NULL, NULL, NULL},
    {"target", "[<format> [block <k>]]", "the low-precision format (see: help target)",
     "Sets the format green nodes (and gray/clear nodes that follow them) run in.\n"
     "Nodes that read or write float64 stay float64 (red by default) unless a rule\n"
     "colours them: then they round to the target like any node (docs/float64.md).\n"
     "block k: a low accumulation format rounds the running sum after each block of k\n"
     "terms (summed in fp32) instead of after every addition (block 0, the default).\n"
     "Without arguments prints the current target.",
     repl_cmd_target, 0, 3, {MPX_WORD_FORMAT, MPX_WORD_CHOICE, MPX_WORD_TEXT}, "block", NULL, NULL},
    {"keep-io", "[on|off]", "keep model inputs and outputs in their declared type (default on)", NULL,
     repl_cmd_keep_io, 0, 1, {MPX_WORD_CHOICE}, "on|off", NULL, NULL},
    {"colour", "<selector> <colour> [when <expr> [else <colour>]]", "recolour nodes: green gray clear red",
     "selector: op types separated by commas (Conv,Gemm), * for every node, or\n"
     "name:<glob> (name:/backbone/*). colour: green (always low), gray (low when all\n"
     "float inputs arrive low), clear (follows its inputs), red (always fp32).\n"
     "when: comparisons of node figures - macs params in_elems out_elems in_ch out_ch\n"
     "kernel group k attr.<name> const_in (float inputs that are weights: initializers,\n"
     "constants, an Identity of one), transposed_b (1 when the second input is a\n"
     "Transpose swapping its last two axes: attention's Q K^T), and absmax (largest\n"
     "|fp32 output| of the last run) -\n"
     "with and/or/not and parentheses; numbers like 1e6, 1M, 64K. Nodes the condition\n"
     "does not hold for keep what earlier rules gave them, unless `else` says.\n"
     "Later rules override earlier ones. Example: colour Conv green when macs >= 1M else gray",
     repl_cmd_rule, MPX_ARGS_GRAMMAR, -1, {MPX_WORD_TEXT}, NULL, NULL, repl_complete_rule},
    {"color", "<selector> <colour> [when <expr> [else <colour>]]", "same as colour", NULL, repl_cmd_rule, MPX_ARGS_GRAMMAR, -1, {MPX_WORD_TEXT}, NULL, NULL, repl_complete_rule},
    {"accum", "<selector> <format> [options] [when <expr> [else <format> [options]]]",
     "the accumulation format of dot products and sums (default fp32)",
     "Selectors and conditions as for colour. With fp16 or bf16 the running sum of\n"
     "Conv, Gemm, MatMul, reductions and Softmax's sum is rounded after every addition\n"
     "(the exact sum rounded once, as an fp16 fused multiply-add does), or every\n"
     "block: see target. Options, after a format, for a runtime that sums otherwise:\n"
     "  bias-first  Conv (rounded format only): the running sum starts at the bias\n"
     "              instead of adding it last (PyTorch's CPU bf16 loop)\n"
     "  round-sum   GlobalAveragePool: the sum is rounded to the node's compute\n"
     "              format before the division (PyTorch's CPU bf16 mean)\n"
     "  welford     LayerNormalization (rounded format only): mean and variance by\n"
     "              Welford's algorithm in 16 lanes, every step rounded, then\n"
     "              1/sqrt rounded (PyTorch 1.13's CPU bf16 layer_norm)\n"
     "  steps       Sigmoid (rounded format only): 1/(1 + exp(-x)) with exp(-x)\n"
     "              and the sum each rounded; with `fuse silu` the Mul makes the\n"
     "              division, x / (1 + exp(-x)) (PyTorch 1.13's CPU bf16 silu)\n"
     "  reciprocal  Div (rounded format only): multiplies by the divisor's\n"
     "              reciprocal rounded to the format (PyTorch's gelu multiplies by\n"
     "              bf16(1/sqrt 2) where ONNX divides by sqrt 2)\n"
     "  sequential  Gemm, MatMul (fp32): the sum one term after another, not in\n"
     "              blocks of 64 (PyTorch 1.13's CPU bf16 Linear and Q K^T)\n"
     "  sleef-lanes Softmax over the last axis (fp32 only): exp by Sleef's\n"
     "              expf8_u10, the sum in 8 lanes reduced as a tree, the row's\n"
     "              last length mod 8 values by expf, each times 1/sum\n"
     "              (PyTorch 1.13's AVX2 softmax; a run needs AVX2 and FMA;\n"
     "              over another axis mpx's softmax runs)\n"
     "The selector may name the fuse patterns (silu, gelu, linear: see help fuse),\n"
     "selecting the nodes of each match but its last: accum silu bf16 steps.\n"
     "Example: accum Conv bf16 bias-first",
     repl_cmd_rule, MPX_ARGS_GRAMMAR, -1, {MPX_WORD_TEXT}, NULL, NULL, repl_complete_rule},
    {"fuse", "<selector> [when <expr>]",
     "hand nodes' outputs to their consumers unrounded: the pair rounds once",
     "A fused node's float output is held in fp32, as its arithmetic left it (its\n"
     "inputs and accumulation as before); each consumer reads it unrounded and\n"
     "rounds its own output: a runtime that computes the two as one op rounds once\n"
     "where a plan of ONNX's nodes rounds twice. Selectors and conditions as for\n"
     "colour, and these patterns (the nodes of each match but its last are fused):\n"
     "  linear  MatMul by a constant whose one consumer adds a constant (a Linear:\n"
     "          torch exports a 3-D Linear as MatMul then Add; addmm rounds once)\n"
     "  silu    Sigmoid(x) whose one consumer is Mul(x, Sigmoid(x))\n"
     "  gelu    GELU's erf form: Div (or Mul) by a constant, Erf, Add, Mul, Mul\n"
     "plan shows a fused node's output as fp32 and `fused` in set by; export\n"
     "refuses such a plan (ONNX cannot hand a low node's result on unrounded).\n"
     "Example: fuse linear, silu, gelu",
     repl_cmd_rule, MPX_ARGS_GRAMMAR, -1, {MPX_WORD_TEXT}, NULL, NULL, repl_complete_rule},
    {"profile", "[<name>]", "set the whole plan that mirrors a runtime's low precision",
     "Replaces the target, block, keep-io and rules with a profile's, in one step\n"
     "(undo takes it back); without a name lists each profile with its rules. A\n"
     "profile's rules are ordinary rules: `rules` lists them, later rules refine\n"
     "them, `save` writes them.\n"
     "  torch-cpu-bf16  PyTorch 1.13's CPU bf16 (model.to(torch.bfloat16)) on a CPU\n"
     "      without AVX512-BF16 (docs/fidelity.md measures each op against it):\n"
     "      every op bf16, input and output held in bf16; Conv and the products of\n"
     "      two activations as torch's loop (each product rounded, then the running\n"
     "      sum; a Conv's from its bias), attention's Q K^T and Linear in fp32 summed\n"
     "      term by term (a Linear's MatMul and Add rounded once), the mean's sum\n"
     "      rounded before the division, LayerNormalization's statistics by bf16\n"
     "      Welford, SiLU as x / (1 + exp(-x)) step by step, GELU's x / sqrt 2 as\n"
     "      x * bf16(1/sqrt 2), Softmax with Sleef's exp and 8-lane sums.",
     repl_cmd_profile, 0, 1, {MPX_WORD_TEXT}, NULL, NULL, repl_complete_profile},
    {"rules", "", "the rules in order, with how many nodes each selects and sets", NULL,
     repl_cmd_rules, 0, 0, {MPX_WORD_TEXT}, NULL, json_opts, NULL},
    {"unrule", "<n>", "remove rule n (numbers as `rules` shows them)", NULL, repl_cmd_unrule, 1, 1, {MPX_WORD_TEXT}, NULL, NULL, NULL},
    {"undo", "", "undo the last change of rules, target or keep-io", NULL, repl_cmd_undo, 0, 0, {MPX_WORD_TEXT}, NULL, NULL, NULL},
    {"redo", "", "redo what undo undid", NULL, repl_cmd_undo, 0, 0, {MPX_WORD_TEXT}, NULL, NULL, NULL},
    {"plan", "", "every node's colour and formats, the casts, the summary",
     "--scopes: the model's own structure instead, the scopes of its node\n"
     "names (/stage1/conv3/Conv: stage1, stage1/conv3; an If's branches) as a tree,\n"
     "each with its nodes, their formats and colours (green/gray/clear/red), the\n"
     "runtime casts on its border (in/out), and after a run of this plan its worst\n"
     "rel_l2 (where) and overflow: the structure the review page and dot/svg --fold\n"
     "scopes draw. --json: {\"target\", \"keep_io\", \"counts\": {green, gray, clear, red,\n"
     "casts, weights_converted, weight_bytes_before, weight_bytes_after,\n"
     "low_macs_pct, low_cost_pct}, \"nodes\": [{name, op, colour, default, rule, compute, accum,\n"
     "accum_options, output[, fused, fuse_rule]}], \"casts\": [{tensor, from, to, consumers}]}.\n"
     "The accum column shows an accum rule's options after the format: bf16+bias-first.\n"
     "A node a fuse rule fused shows output fp32 (unrounded) and \"fused by <rule>\" in\n"
     "set by (fused: true and fuse_rule in JSON).",
     repl_cmd_plan, 0, 0, {MPX_WORD_TEXT}, NULL, plan_opts, NULL},
    {"diff", "", "what the last change did: nodes recoloured, casts added and removed",
     "--json: {\"nodes\": [{name, op, colour_before, colour_after, compute_before,\n"
     "compute_after}], \"casts_added\", \"casts_removed\": [{tensor, from, to}],\n"
     "\"casts_before\", \"casts_after\"}.",
     repl_cmd_diff, 0, 0, {MPX_WORD_TEXT}, NULL, json_opts, NULL},
    {"why", "<node>", "how a node got its colour and formats: default, rules, propagation",
     "A node inside a Loop's, Scan's or SequenceMap's body (outer/body/...) is\n"
     "explained by the node whose body holds it: a body runs as one node of the\n"
     "plan, every node of it in that node's format each iteration.\n"
     "After a run, a node whose output holds non-finite values where fp32 is finite\n"
     "gets their cause (the run's overflow line gives the first node's): fp32 values\n"
     "beyond the format's range; or, when they fit, a constant it reads that\n"
     "overflows or flushes to zero, an input already non-finite, an input that\n"
     "underflowed (and the flushed constant upstream that made it so), or its own\n"
     "arithmetic. Constants it reads are marked when their conversion flushes or\n"
     "overflows them.",
     repl_cmd_why, 1, 1, {MPX_WORD_NODE}, NULL, NULL, NULL},
    {"run", "", "run the plan against the fp32 reference, layer by layer",
     "Runs the inputs (see input) through the fp32 reference and through the plan's\n"
     "emulated formats side by side and compares every float tensor a node computes\n"
     "on every metric (help report lists them).\n"
     "--local also feeds each node the reference values of its inputs (in its\n"
     "formats), separating a layer's own error from what it inherits. --keep keeps\n"
     "those tensors' values for `tensor` (model outputs are always kept). Ctrl-C\n"
     "stops a run; the session stays as it was. With a data set (see data) every\n"
     "sample is run, one at a time; `tensor` shows the sample whose output is worst.\n"
     "--samples k/n runs only samples i with i % n == k-1: a shard, whose report\n"
     "--json `merge` joins with the others into the unsharded run's report.",
     repl_cmd_run, 0, 0, {MPX_WORD_TEXT}, NULL, run_opts, NULL},
    {"report", "",
     "per-layer error of the last run, worst first",
     "metric: one of the metrics listed below (default rel_l2), local (the node's own\n"
     "rel_l2; needs run --local) or order (graph order). The terminal shows the\n"
     "top rows (set top <n>); --json and --csv give every row unless --top. --json:\n"
     "{\"target\", \"local\", \"sort\", \"overflow\", \"underflow\", \"layers\": [{tensor, node, op, order, format, output, metrics:\n"
     "{the real metrics, absmax_ref, the counts, n}, local: {...}}]}; inf and NaN are\n"
     "written as strings.\n"
     "Values inside Loop, Scan and SequenceMap bodies (nested ones too) follow in a\n"
     "second table: each compared iteration by iteration (the candidate's body run\n"
     "against the reference's of the same iteration), with its worst figures over the\n"
     "iterations, the iteration of its worst rel_l2 (a nested body counts its runs\n"
     "across the outer iterations) and its mean rel_l2; JSON: \"body\": [{tensor, node,\n"
     "op, owner, order, format, runs, worst_run, metrics, mean, local, local_mean}]\n"
     "(over a data set: the sample whose worst model output is worst).\n"
     "After a run over a data set (see data): each layer's figures are its worst over\n"
     "the samples, with the sample of its worst rel_l2 and the mean rel_l2; JSON adds\n"
     "\"samples\" (their files) and per layer worst_sample, mean and per_sample; CSV adds\n"
     "worst_sample and mean_rel_l2. --sample k: sample k's own figures. --samples: one\n"
     "row per sample with its worst model output and worst layer.",
     repl_cmd_report, 0, 0, {MPX_WORD_TEXT}, NULL, report_opts, NULL},
    {"tensor", "<name>",
     "one tensor of the last run: range, error; save it as .npy",
     "name: a node (its first output) or a tensor. A tensor the last run did not\n"
     "keep is computed by a fresh run of the current plan (the last run stays).",
     repl_cmd_tensor, 1, 1, {MPX_WORD_NODE_OR_TENSOR}, NULL, tensor_opts, NULL},
    {"compare", "<format> [<format> ...]", "the current rules under several targets, side by side",
     "Plans and runs the rules with each target (e.g. compare fp16 bf16) and prints\n"
     "casts, share of MACs in the low format, the worst output and layer rel_l2, and\n"
     "overflow/underflow counts. The fp32 reference runs once for all the targets\n"
     "(at most 8). The runs are kept for plot and html.",
     repl_cmd_compare, 1, -1, {MPX_WORD_FORMAT}, NULL, compare_opts, NULL},
    {"assert", "<figure> <op> <number> [and ...]", "fail the script unless a figure of the plan or run holds",
     "op: < <= > >= == !=. Plan figures: casts green gray clear red low_nodes\n"
     "low_macs_pct low_cost_pct (the share of cost low: see help search)\n"
     "weights_converted weights_overflow (values). Run figures: overflow underflow\n"
     "subnormal layers,\n"
     "output.<metric> (the worst over all model outputs), out[<name>].<metric> (the\n"
     "model output called name: with an output named \"output\", output.rel_l2 is still\n"
     "the worst of all, said once in a warning, and out[output].rel_l2 the tensor),\n"
     "worst.<metric> (worst layer), <node or tensor>.<metric>; metric as in report,\n"
     "plus absmax, plus the task figures, shares in [0, 1] read from the run's values\n"
     "against the reference's: top1 (rows along the last\n"
     "axis whose argmax agrees; an output whose last axis has one element is refused),\n"
     "topk_overlap@k (the share of each row's k largest that are the reference's,\n"
     "k 5 when not given), iou@t (per sample, the first axis, the intersection over\n"
     "union of the elements above t, none in either counting 1; the mean), and\n"
     "sign_agree@t (elements on the same side of t), e.g. output.top1 >= 0.99 or\n"
     "out[mask].iou@0.5 > 0.95. Over several outputs the worst is the smallest.\n"
     "Over a data set a task figure is the mean of every sample's (top1 over\n"
     "32 one-image samples: the share of images whose class agrees); worst: is the\n"
     "lowest sample's; the run must hold the values of every sample (search does\n"
     "for its condition; run --keep <tensor> does, within the memory budget).\n"
     "After a run over a\n"
     "data set, run figures are the worst over its samples; prefixes choose others:\n"
     "mean:, p95: (nearest rank), sample <k>: (e.g. assert p95:output.rel_l2 < 1e-3).\n"
     "A failed assert stops a script with exit status 2.\n"
     "Example: assert output.rel_l2 < 1e-3 and overflow == 0 and casts <= 40",
     repl_cmd_assert, 1, -1, {MPX_WORD_TEXT}, NULL, NULL, repl_complete_condition},
    {"search", "<figure> <op> <number> [and ...]",
     "find the nodes to keep in fp32 so that a condition holds",
     "The condition is assert's (same figures and grammar), e.g.\n"
     "  search output.rel_l2 < 1e-3 and casts <= 40\n"
     "Each evaluation plans the rules so far plus `colour name:<node> red` for a set\n"
     "of nodes and runs it. auto (the default) maximises the share of cost low\n"
     "(low_cost_pct, below) among the plans that meet the condition: nodes whose\n"
     "weights overflow go fp32 first (when a plain\n"
     "run fails); one local run ranks the low nodes (own output overflowing\n"
     "first, then the predicted output error keeping each fp32 removes, with the\n"
     "gray nodes following it, per cost kept fp32); under an error bound the first\n"
     "of the ranking (a quarter, at most 24) are measured falling back alone and\n"
     "reranked by error taken away per cost, if a prefix then does what it\n"
     "predicts; the shortest prefix that meets the condition goes fp32 (if the\n"
     "effects do not add up: bisect's segments to 4 nodes); then nodes go back\n"
     "to low while it holds: halves, quarters, ... of the set, the most cost\n"
     "bought per predicted error first, then single nodes, the last-ranked first\n"
     "(1-minimal); last, each node, the dearest first, is tried swapped for the gray\n"
     "nodes that followed it into fp32 (kept when more cost is low). greedy: auto\n"
     "without giving back. The peers' methods: bisect, onnxconverter-common's\n"
     "(segments of the topological order tried low, failing ones halved);\n"
     "sensitivity, Intel Neural Compressor's (each node measured falling back to\n"
     "fp32 alone, then nodes fall back one at a time, the one that helped most\n"
     "first, until the condition holds).\n"
     "The result is added as rules `colour name:<node> red  # search:\n"
     "<condition>`, one undo step.\n"
     "Low share: low_macs_pct (multiply-adds) and low_cost_pct, the share of the\n"
     "plan's cost computed low, where cost is multiply-adds plus one per element a\n"
     "node reads or writes, and every runtime cast costs 2 per element (so an Add\n"
     "kept fp32 between low Convs costs its pass and its casts).\n"
     "Stops: --max-evals, --time, Ctrl-C (or SIGTERM in a script), no plan meeting\n"
     "the condition, an error. It then reports the best plan so far that met the\n"
     "condition and exits non-zero, applying nothing; --apply-best applies it\n"
     "(`search, best at <how it ended>: ...` in the rules) and succeeds.\n"
     "--json prints (or writes), however the search ended, {condition, method,\n"
     "ended (done no_plan max_evals time interrupted failed), error, fp32: [names],\n"
     "figures, low_macs_pct, low_cost_pct (null without a plan), applied,\n"
     "candidates, n_evaluations, n_unchanged (sets whose plan an earlier one\n"
     "computed), ms, evaluations: [{set, holds, figures, low_macs_pct, low_cost_pct,\n"
     "ms, nodes_run, local (a ranking run)}]}; an evaluation stopped by Ctrl-C is\n"
     "{set, interrupted: true, ms}, a failed one {set, error, ms}. A search refused\n"
     "at the start (a bad figure, option, --validate data or --json file) writes\n"
     "none. Printed, it is stdout's only text (the summary line goes to stderr).\n"
     "On a terminal a progress line shows evaluations, best plan and time left.\n"
     "--eval \"<command>\": your own figure. Once per evaluation mpx writes every\n"
     "model output as float32 .npy, $MPX_EVAL_DIR/cand/<output>.npy (the plan's)\n"
     "and $MPX_EVAL_DIR/ref/<output>.npy (fp32), '/' in a name made '_', runs the\n"
     "command with /bin/sh and reads its stdout: one number is the figure eval, a\n"
     "JSON object of numbers the figures eval.<key>, e.g.\n"
     "  search eval.top1 >= 0.99 --eval \"python3 my_metric.py\"\n"
     "A command that is not found, exits non-zero, prints nothing, more than one\n"
     "value or a number that is not finite, or runs past --eval-timeout (default\n"
     "60 s; then killed with its children) is an error naming it. Over a data set\n"
     "each file stacks every sample's output on a new leading axis\n"
     "($MPX_EVAL_SAMPLES), one command run per evaluation. The folder (in $TMPDIR)\n"
     "is removed after.\n"
     "--validate <data spec> (quoted when it has blanks, e.g. \"held/ limit 32\"; as\n"
     "for data): the plan found runs on those held-out samples (shapes checked\n"
     "first) and every clause is read there: the condition holds there too, or\n"
     "not (the plan then meets it on the search's samples only); the JSON's\n"
     "validation {data, samples, figures, holds}.",
     repl_cmd_search, 1, -1, {MPX_WORD_TEXT}, NULL, search_opts, repl_complete_condition},
    {"sweep", "<name> in <v1>,<v2>,... : <command using $name>",
     "try a plan change with several values, every point planned and run",
     "e.g. sweep t in 0,64k,256k,1M,4M : colour Conv green when macs >= $t else gray\n"
     "Each point is the session's rules plus the command (colour, color, accum, target\n"
     "or keep-io) with $name replaced by the value, planned and run on the session's\n"
     "inputs through the run cache (the fp32 reference once, each point recomputing\n"
     "only what its plan changes). Nothing is applied: the rules are the same after.\n"
     "Table: colour counts, casts, % of MACs and of cost low (help search), weight\n"
     "bytes, output rel_l2,\n"
     "overflow and underflow counts, the worst layer. --json/--csv instead of the\n"
     "table (to a file or stdout); --plot writes error against % of MACs low with\n"
     "the Pareto front. With any of them the table is printed only with --table. --shard k/n runs only the points i with i % n == k-1 (its\n"
     "JSON is merged with `merge`). A command that fails for one value names it and\n"
     "keeps nothing.",
     repl_cmd_sweep, MPX_ARGS_GRAMMAR, -1, {MPX_WORD_TEXT}, NULL, sweep_opts, repl_complete_sweep},
    {"merge", "<shard.json> ...",
     "join the JSON shards of a sweep, or of a run over a data set",
     "The shards must be of one sweep (name, command, values, target), of one\n"
     "model by its content (model_id: the file's size and CRC-32, whatever folder it\n"
     "was in) and of one session (session_id: a CRC-32 of save's lines for the\n"
     "inputs, data set and its order, keep-io, target and rules), and together hold\n"
     "every point once; the result is what the unsharded sweep gives. Shards of a\n"
     "data set (run --samples k/n, then report --json; not run --local) become the\n"
     "last run, as the unsharded run gives it (the model loaded if need be): report,\n"
     "assert and --json/--csv (the report's) then work on all samples. A sweep's\n"
     "table is printed when no --json, --csv or --plot is given, or with --table.\n"
     "Also `mpx merge a.json b.json ...` from the shell.",
     repl_cmd_merge, 1, -1, {MPX_WORD_FILE}, NULL, merge_opts, NULL},
    {"dot", "[<file.dot>]",
     "the cast graph as DOT text (printed, or written to a file)",
     "Nodes are filled by colour and labelled with op type and name; runtime casts\n"
     "are hexagons labelled with the conversion (fp32->fp16); edges carry the format\n"
     "of their values; a double border marks a colour set by a rule; W->fp16 marks\n"
     "weights converted offline. Constant and folded nodes are left out (--all\n"
     "draws them). --around <node> <depth>: only nodes within depth edges of the\n"
     "node (or of the tensor's producer). --upstream-to-cause (after run --local):\n"
     "also the path along which the node's error was inherited from its cause, the\n"
     "upstream node with the largest own error, however far (red edges).\n"
     "--shapes: edge labels add shapes.\n"
     "--collapse: chains of nodes with the same formats become one node.\n"
     "--fold [scopes|regions]: the model-level view. scopes: the model's own\n"
     "structure, the top scopes of node names (/stage1/conv3/Conv: stage1; an If's\n"
     "branches) as boxes with their node count, formats, colour shares, casts on\n"
     "their border, worst error and overflow (plan --scopes lists the same), casts\n"
     "on the edges between boxes, nodes outside any box folded into regions.\n"
     "regions: connected nodes in the same formats with no cast between them\n"
     "become one box (op counts, colour shares, worst error), about 16 boxes for\n"
     "any model; casts and nodes a name: rule set stay. --fold alone: scopes when\n"
     "the names carry them, else regions.\n"
     "--cluster <n>: group by the first n components of node names\n"
     "(/backbone/stage2/...). --weights: draw weights as nodes.\n"
     "--overlay [--local]: border colour and width by the last run's rel_l2 (log\n"
     "scale), overflow and underflow marked. The text is the same for the same\n"
     "plan and options (ids from graph indices), so it can be diffed.",
     repl_cmd_dot, 0, 1, {MPX_WORD_FILE}, NULL, dot_opts, NULL},
    {"svg", "<file.svg>",
     "the cast graph as SVG, laid out in-process by Graphviz",
     "Options as for dot. --watch re-writes the file after every change of the plan\n"
     "(rules, target, undo...), so a viewer that reloads on change follows along;\n"
     "svg --unwatch stops. --engine: the Graphviz layout (dot, the default, draws\n"
     "layers top to bottom; sfdp and neato are force-directed).",
     repl_cmd_svg, 0, 1, {MPX_WORD_FILE}, NULL, svg_opts, NULL},
    {"plot", "<file.svg> [<metric>]", "per-layer error along the graph as an SVG plot",
     "One line per run: the last run (under its target) and the runs of `compare`\n"
     "(e.g. compare fp16 bf16). metric: one of the metrics listed below (default\n"
     "rel_l2; cos is drawn as 1 - cos); log scale except sqnr_db. Red nodes and\n"
     "runtime casts of the current plan are marked, overflowing layers crossed,\n"
     "underflow (1% or more of a layer's values) as bars under the axis, the three\n"
     "worst layers named without overlap. --local (after run --local): each\n"
     "format's own error as a dashed line beside the inherited one.",
     repl_cmd_plot, 1, 2, {MPX_WORD_FILE, MPX_WORD_METRIC}, NULL, plot_opts, NULL},
    {"html", "<file.html>", "one self-contained review page",
     "What to look at first (worst output and layer, the largest own error after\n"
     "run --local, overflow, weights that do not fit, nodes search kept fp32), model\n"
     "summary, target and rules, the plan's figures and casts, the cast graph (with\n"
     "the last run's error overlay), the error plot and the per-layer table, in one\n"
     "file that opens from disk with no network. Graphs of more than 150 nodes open\n"
     "as the model-level view (see dot's --fold: by the scopes of node names, a\n"
     "scope opening in place on a click, or by regions); one too large to lay out\n"
     "whole gets the model-level view alone.",
     repl_cmd_html, 1, 1, {MPX_WORD_FILE}, NULL, html_opts, NULL},
    {"export", "<file.onnx>",
     "write the plan as a mixed-precision ONNX model",
     "Writes the current plan as an ONNX model a runtime can load: weights read by\n"
     "low nodes stored in the low format (rounded as the emulation rounds them), one\n"
     "Cast per plan cast, the model's float Casts retyped, keep-io Casts at inputs and\n"
     "outputs, the opset raised where the format needs it (bf16: 13, fp8: 19; refused\n"
     "when one of the model's ops changed meaning in between; refused for models of\n"
     "opsets 1-6, read in opset 7's form). A model loaded from\n"
     ".onnx keeps its metadata, doc strings and value_info. ONNX has no attribute for\n"
     "the accumulation format: it goes into metadata mpx.accumulate and the low nodes'\n"
     "doc strings; the accum options (bias-first, round-sum) have no place at all: the\n"
     "summary names the nodes that have them. tf32 is refused (no ONNX type). If branches get their casts inside\n"
     "them; a Loop's or Scan's body is written in the format the plan runs it in.\n"
     "Never overwrites the loaded model;\n"
     "an existing file needs --force; missing folders are made below the current\n"
     "folder only (as for every command that writes); a failure leaves no file.\n"
     "Weights of 1 KiB and more go to external data, <file.onnx>.data beside the model,\n"
     "when the model would pass protobuf's 2 GB limit, or always with --external.\n"
     "Check the result in ONNX Runtime with scripts/verify-export.sh.",
     repl_cmd_export, 1, 1, {MPX_WORD_FILE}, NULL, export_opts, NULL},
    {"source", "<file.mpx>", "run the commands of a script file in this session",
     "Comments (#), blank lines and trailing-backslash continuations as in scripts.\n"
     "An error names the sourced file and its line and stops it (and the scripts\n"
     "that sourced it) unless `set bail off`; the commands before the error stay\n"
     "done. Scripts nest up to 16 deep. Paths are relative to the current folder;\n"
     "inside a script, a file to read that is not found there is looked up beside\n"
     "the script (load, source, input file/image/audio/files, data).",
     repl_cmd_source, 1, 1, {MPX_WORD_FILE}, NULL, NULL, NULL},
    {"set", "[bail on|off | top <n> | cache <MB> | pager on|off | memory <MB> | loops <s>]", "change a setting; without arguments, list them",
     "bail: on (default) stops a script at its first error; off goes on with the\n"
     "next command (the exit status still says a command failed).\n"
     "top: the rows `report` shows without --top (default 20).\n"
     "cache: megabytes of the last run's values `run` keeps (default 512; 0: none), so\n"
     "a re-run after a recolour recomputes only the nodes downstream of the change;\n"
     "a quarter of it keeps decoded images and sounds (input), 0 decodes at each run.\n"
     "memory: megabytes a file read may claim before mpx allocates for it (an .npz\n"
     "member's size, an image's width x height, a sound's frames); larger claims are\n"
     "refused by name. 0 (default): half the machine's physical memory.\n"
     "loops: seconds one Loop, Scan or SequenceMap node may spend on its iterations\n"
     "(default 300; 0: no limit), checked before each iteration: past it the run\n"
     "fails naming the node and the iterations done, and the session goes on.",
     repl_cmd_set, MPX_ARGS_GRAMMAR, -1, {MPX_WORD_TEXT}, NULL, NULL, repl_complete_set},
    {"save", "[<file.mpx>]", "write the session as a script that rebuilds it (no file: print it)",
     "Writes load, the inputs (shape, then values), the data set (the `data` or\n"
     "`input <name> files` command that made it, limit and shuffle included),\n"
     "target and keep-io, the rules in order as typed (a `run` before the first\n"
     "that uses absmax), and the\n"
     "settings that differ from their defaults. The current state is saved, not the\n"
     "undo history. The file is replaced whole or not at all.",
     repl_cmd_save, 0, 1, {MPX_WORD_FILE}, NULL, NULL, NULL},
    {"help", "[<command>]", "list commands, or explain one", NULL, cmd_help, 0, 1, {MPX_WORD_COMMAND}, NULL, NULL, NULL},
    {"quit", "", "leave mpx (also: exit, Ctrl-D)", NULL, cmd_quit, 0, 0, {MPX_WORD_TEXT}, NULL, NULL, NULL},
};

const mpx_command *mpx_commands(int *count) {
    *count = (int)(sizeof commands / sizeof commands[0]);
    return commands;
}

const mpx_command *mpx_command_find(const char *name) {
    if (strcmp(name, "exit") == 0) name = "quit";
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

mpx_status repl_usage_error(mpx_error *err, const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    mpx_status st = repl_usage_verror(err, mpx_command_find(cmd), cmd, fmt, ap);
    va_end(ap);
    return st;
}

/* "; did you mean colour?" for a mistyped command, or "". */
static const char *command_hint(const char *typed, char *buf, size_t n) {
    mpx_name_hint h;
    mpx_name_hint_init(&h, typed);
    /* Aliases (color) are left out: the hint names the command help lists. */
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strncmp(commands[i].summary, "same as ", 8) != 0) mpx_name_hint_add(&h, commands[i].name);
    return mpx_name_hint_tail(&h, buf, n);
}

static mpx_status cmd_help(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    if (args->n == 0) {
        /* Names and summaries; the usage lines are long, `help <command>` has them. */
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            fprintf(s->out, "  %-9s %s\n", commands[i].name, commands[i].summary);
        fprintf(s->out, "help <command> gives its usage and details.\n");
        return MPX_OK;
    }
    const char *name = args->word[0];
    const mpx_command *c = mpx_command_find(name);
    if (!c) {
        char hint[128];
        return mpx_error_set(err, MPX_E_ARG, "no command \"%s\" (try: help)%s", name, command_hint(name, hint, sizeof hint));
    }
    const char *usage = mpx_command_usage(c);
    fprintf(s->out, "usage: %s\n%s\n", usage, c->summary);
    if (c->help) fprintf(s->out, "\n%s\n", c->help);
    char text[8192];
    if (repl_options_help(c, text, sizeof text)) fprintf(s->out, "\n%s", text);
    /* The formats and metrics a command takes come from their tables. */
    if (strstr(usage, "<format>") || strstr(usage, "<fmt>")) {
        char names[256];
        fprintf(s->out, "formats: %s (fp8e4m3 saturates, fp8e4m3nan overflows to NaN)\n", mpx_format_names(" ", true, names, sizeof names));
    }
    if (strstr(usage, "<metric>") || strstr(usage, "<figure>")) {
        char names[256];
        fprintf(s->out, "metrics: %s\n", mpx_metric_names(" ", names, sizeof names));
    }
    return MPX_OK;
}

/* ---- dispatch -------------------------------------------------------------- */

mpx_status repl_exec_words(mpx_session *s, int argc, char **argv, mpx_error *err) {
    const mpx_command *c = argc > 0 ? mpx_command_find(argv[0]) : NULL;
    if (!c) return mpx_error_set(err, MPX_E_ARG, "unknown command \"%s\"", argc > 0 ? argv[0] : "");
    /* the parsed words are large (every option's values): on the heap, as
     * sweep's points and merge run commands inside a command */
    mpx_cmd_args *args = malloc(sizeof *args);
    if (!args) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    mpx_status st = mpx_command_parse(c, argc, argv, args, err);
    if (!st) st = c->handler(s, args, err);
    free(args);
    return st;
}

mpx_status mpx_session_exec(mpx_session *s, const char *line, mpx_error *err) {
    mpx_error_clear(err);
    size_t len = strlen(line);
    char *copy = malloc(len + 1);
    if (!copy) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    memcpy(copy, line, len + 1);
    int argc = 0;
    char *argv[MPX_ARGS_MAX];
    mpx_status st = repl_split_words(copy, &argc, argv, MPX_ARGS_MAX, false, err);
    if (st == MPX_OK && argc > 0) {
        const mpx_command *c = mpx_command_find(argv[0]);
        if (!c) {
            char hint[128];
            st = mpx_error_set(err, MPX_E_ARG, "unknown command \"%s\" (try: help)%s", argv[0],
                               command_hint(argv[0], hint, sizeof hint));
        } else {
            const char *saved = s->line;
            s->line = line;
            st = repl_exec_words(s, argc, argv, err);
            s->line = saved;
        }
    }
    free(copy);
    return st;
}
