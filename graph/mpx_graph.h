/* mpx_graph.h - the model representation every other module reads.
 *
 * Ownership:
 *  - An mpx_graph owns one arena (mpx_arena). Every tensor, node, attribute,
 *    string and value array reachable from the graph lives in that arena and is
 *    freed once, by mpx_graph_free(). Nothing inside a graph is freed piecemeal.
 *  - Loaders (mpx_graph_load*) return a new graph the caller frees, or NULL with
 *    the error filled. They free their parse trees (protobuf-c, cJSON) before
 *    returning, on success and on failure.
 *  - Shape inference (mpx_graph_infer) writes into the graph's tensors (current
 *    shapes, folded constant values, node costs); it allocates from the graph's
 *    arena. Re-running it after a new binding recomputes every derived figure.
 *  - mpx_error is a plain value the caller owns (usually on the stack).
 *
 * Nothing in graph/ prints, exits or reads stdin: functions return an
 * mpx_status and fill an mpx_error a person can act on.
 */
#ifndef MPX_GRAPH_H
#define MPX_GRAPH_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status and errors -------------------------------------------------- */

typedef enum mpx_status {
    MPX_OK = 0,
    MPX_E_IO,          /* file missing, unreadable, short read */
    MPX_E_PARSE,       /* bytes that are not a model / JSON syntax */
    MPX_E_INVALID,     /* parsed, but the model is inconsistent */
    MPX_E_UNSUPPORTED, /* valid, but mpx does not implement it */
    MPX_E_LIMIT,       /* a size beyond what mpx accepts */
    MPX_E_NOMEM,
    MPX_E_SHAPE,       /* shapes that do not fit together */
    MPX_E_ARG,         /* a bad argument from the caller (user input) */
    MPX_E_CANCELLED,   /* stopped on request (Ctrl-C) */
    MPX_E_ASSERT,      /* an `assert` that did not hold */
} mpx_status;

typedef struct mpx_error {
    mpx_status status;
    char file[512]; /* "" when not about a file */
    int line;       /* 1-based; 0 when unknown */
    int column;     /* 1-based; 0 when unknown */
    char msg[1024];
} mpx_error;

void mpx_error_clear(mpx_error *err);
/* Fill err (may be NULL) and return st. The message should name what is wrong
 * and where (node, tensor, JSON path), so the user can fix it. */
mpx_status mpx_error_set(mpx_error *err, mpx_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
mpx_status mpx_error_at(mpx_error *err, mpx_status st, const char *file, int line,
                        int column, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* What the modules' error wrappers build on: the message is node's
 * "node "<name>" (<op>): " (when node is non-NULL) followed by fmt with ap;
 * file as in mpx_error_at (NULL: none), line and column unknown. fmt's
 * arguments may point into err->msg. */
struct mpx_node;
mpx_status mpx_error_vnode(mpx_error *err, mpx_status st, const char *file,
                           const struct mpx_node *node, const char *fmt, va_list ap);
/* "file:line:col: message" with the parts that are known. Returns buf. */
const char *mpx_error_format(const mpx_error *err, char *buf, size_t n);
const char *mpx_status_name(mpx_status st);

/* ---- arena --------------------------------------------------------------- */

typedef struct mpx_arena mpx_arena;

mpx_arena *mpx_arena_new(void);
void mpx_arena_free(mpx_arena *a);
/* Zeroed, 16-byte aligned; NULL on overflow or out of memory. */
void *mpx_arena_alloc(mpx_arena *a, size_t size);
/* n * size with overflow check. */
void *mpx_arena_calloc(mpx_arena *a, size_t n, size_t size);
char *mpx_arena_strdup(mpx_arena *a, const char *s);
char *mpx_arena_strndup(mpx_arena *a, const char *s, size_t n);
size_t mpx_arena_bytes(const mpx_arena *a);

/* ---- element types (numbering = ONNX TensorProto.DataType) ------------- */

typedef enum mpx_dtype {
    MPX_DT_UNDEFINED = 0,
    MPX_DT_FLOAT = 1,
    MPX_DT_UINT8 = 2,
    MPX_DT_INT8 = 3,
    MPX_DT_UINT16 = 4,
    MPX_DT_INT16 = 5,
    MPX_DT_INT32 = 6,
    MPX_DT_INT64 = 7,
    MPX_DT_STRING = 8,
    MPX_DT_BOOL = 9,
    MPX_DT_FLOAT16 = 10,
    MPX_DT_DOUBLE = 11,
    MPX_DT_UINT32 = 12,
    MPX_DT_UINT64 = 13,
    MPX_DT_COMPLEX64 = 14,
    MPX_DT_COMPLEX128 = 15,
    MPX_DT_BFLOAT16 = 16,
    MPX_DT_FLOAT8E4M3FN = 17,
    MPX_DT_FLOAT8E4M3FNUZ = 18,
    MPX_DT_FLOAT8E5M2 = 19,
    MPX_DT_FLOAT8E5M2FNUZ = 20,
    MPX_DT_COUNT_
} mpx_dtype;

/* One table of what each type is (graph/dtype.c): the loaders, numerics/
 * and the exporter read these rather than a switch of their own. */
const char *mpx_dtype_name(mpx_dtype t);    /* "float32", "int64", ... */
mpx_dtype mpx_dtype_from_name(const char *s); /* UNDEFINED if unknown */
bool mpx_dtype_is_float(mpx_dtype t);        /* float, double, fp16, bf16, fp8 */
/* Values of float dtypes are held as fp32, but float64's as double (its
 * reference computes in double: an fp32 copy would turn 1e229 into inf), of
 * integer and bool dtypes as int64. */
bool mpx_dtype_is_int_like(mpx_dtype t);
/* Bytes an element takes in raw little-endian data (ONNX raw_data, side
 * files, .npy); 0 for types without such a layout mpx reads (string,
 * undefined). */
size_t mpx_dtype_size(mpx_dtype t);
/* A float type's element from its little-endian code (the low
 * 8 * mpx_dtype_size(t) bits of code): exact for every type but double
 * (rounded to the nearest fp32); NaN payloads are kept where the type has
 * them (fp16, bf16, float8e5m2); float8e4m3fn's and the FNUZ types' one
 * NaN reads as the quiet NaN. NaN for a type that is not a float. */
float mpx_dtype_decode(mpx_dtype t, uint64_t code);

/* ---- limits -------------------------------------------------------------- */

enum {
    MPX_MAX_RANK = 8,
    MPX_MAX_SUBGRAPH_DEPTH = 16, /* If branches inside If branches; Loop bodies inside bodies */
};
/* Largest element count of one tensor mpx accepts (2^31): beyond it a model is
 * refused as malformed rather than allocated. */
#define MPX_MAX_ELEMS ((int64_t)1 << 31)

/* ---- op registry ----------------------------------------------------------- */

typedef enum mpx_op {
    MPX_OP_UNKNOWN = 0, /* an op the registry does not know: loads, marked unsupported */
#define MPX_OP(name, shape, cost, fold) MPX_OP_##name,
#include "ops.def"
#undef MPX_OP
    MPX_OP_COUNT
} mpx_op;

const char *mpx_op_name(mpx_op op);             /* "Conv"; "?" for UNKNOWN */
struct mpx_node;
/* An If whose condition is known at load (a constant or folded value): 0
 * then, 1 else; -1 unknown or not an If. */
int mpx_node_if_pick(const struct mpx_node *n);
/* A node of an If branch that a known condition rules out (at any depth). */
bool mpx_node_inactive(const struct mpx_node *n);
/* Where a product op's second operand (weights) is: 3 for QLinearConv and
 * QLinearMatMul (after a's scale and zero point), else 1; its bias: 8 for
 * QLinearConv, 3 for DeformConv (after the offsets), none (-1) for
 * ConvInteger and MatMulInteger, else 2. Shape
 * inference and cost read the same inputs. */
int mpx_node_weight_input(const struct mpx_node *n);
int mpx_node_bias_input(const struct mpx_node *n);
mpx_op mpx_op_from_name(const char *op_type);   /* exact, case-sensitive; UNKNOWN if none */
/* The op a node of this domain ("" or "ai.onnx": ONNX's; "com.microsoft":
 * ONNX Runtime's contrib ops) and op_type means; UNKNOWN if none. */
mpx_op mpx_op_from_domain_name(const char *domain, const char *op_type);
/* Case-insensitive lookup for user input ("conv" -> Conv). */
mpx_op mpx_op_from_name_ci(const char *op_type);
/* Whether a path has a ".." step (files.c): a path that may leave the folder
 * it is relative to (JSON side files, output folders). */
bool mpx_path_has_dotdot(const char *path);
/* The folder part of path into buf[n] (files.c): "." for a bare name, "/"
 * for a file in the root. Returns buf, or NULL when path does not fit. */
const char *mpx_path_folder(const char *path, char *buf, size_t n);
/* Every reader's way to open a file it is given (files.c): open path for
 * reading without blocking (a FIFO without a writer, a device), then refuse
 * anything but a regular file, or also a FIFO or pipe when allow_pipe (a
 * script: `mpx <(cmd)`). Returns a blocking, close-on-exec fd, or -1 with err
 * filled (MPX_E_IO, file = path): "cannot open: why", or "a FIFO, not a
 * regular file" (a folder, a device, a socket). */
int mpx_file_open_read(const char *path, bool allow_pipe, mpx_error *err);
/* The memory budget (files.c; process-wide, in bytes): what a file read may
 * claim before anything is allocated for it (a model's external data, an
 * .npz member's size, an image's width x height, a sound's frames), so that a small compressed file cannot
 * take the machine's memory. Default: half the machine's physical memory
 * (sysconf), 1 GiB when that is unknown. mpx_set_memory_budget(0) restores
 * the default. */
void mpx_set_memory_budget(uint64_t bytes);
uint64_t mpx_memory_budget(void);
/* MPX_E_LIMIT naming path and what claims bytes, when bytes exceed the
 * budget ("x.npz: 4.0 GB claimed for its members, more than the memory
 * budget of 7.8 GB (set memory <MB>)"); MPX_OK otherwise. */
mpx_status mpx_check_budget(const char *path, const char *what, uint64_t bytes, mpx_error *err);
/* The library's version, "0.1.0" (graph/version.c). */
const char *mpx_version(void);

/* ---- did you mean (names.c) ----------------------------------------------
 * For every name lookup that fails: feed the candidates, get the closest
 * when it is a plausible typo (case only, one slip, two slips in a name of
 * four letters or more, or up to a third of the name), else NULL. The hint
 * points into the candidates: use it before they go. */
typedef struct mpx_name_hint {
    const char *typed;
    const char *best;
    size_t dist;
} mpx_name_hint;
/* Case-insensitive edit distance (insert, delete, replace, swap of two
 * neighbours); SIZE_MAX for names over 255 characters. */
size_t mpx_name_distance(const char *a, const char *b);
void mpx_name_hint_init(mpx_name_hint *h, const char *typed);
void mpx_name_hint_add(mpx_name_hint *h, const char *cand);
const char *mpx_name_hint_get(const mpx_name_hint *h);
/* "; did you mean <best>?" or "" into buf. */
const char *mpx_name_hint_tail(const mpx_name_hint *h, char *buf, size_t n);
/* The closest op type: the registry's, then g's own (g may be NULL). */
struct mpx_graph;
const char *mpx_op_suggest(const char *typed, const struct mpx_graph *g);

/* ops.def's FOLD column: whether shape inference computes the op's values
 * when its inputs are known (see "constant folding" below). */
bool mpx_op_folds(mpx_op op);

/* ---- tensors, attributes, nodes ----------------------------------------- */

typedef struct mpx_node mpx_node;
typedef struct mpx_graph mpx_graph;

enum mpx_tensor_flags {
    MPX_T_INPUT = 1u << 0,       /* a model input the user binds */
    MPX_T_OUTPUT = 1u << 1,      /* a model output */
    MPX_T_INITIALIZER = 1u << 2, /* value from the model file (initializer) */
    MPX_T_CONSTANT = 1u << 3,    /* value known at load: initializer or Constant output */
    MPX_T_FOLDED = 1u << 4,      /* value computed by constant folding (shape chains) */
    MPX_T_SEQUENCE = 1u << 5,    /* a sequence or optional of tensors (dtype: the items'); never planned */
    MPX_T_OPTIONAL = 1u << 6,    /* with MPX_T_SEQUENCE: an optional (0 or 1 tensor) */
    MPX_T_INNER_SEQ = 1u << 7,   /* with MPX_T_OPTIONAL: what it may hold is a sequence of tensors */
};

typedef struct mpx_tensor {
    const char *name;
    int32_t index;      /* position in graph->tensors */
    mpx_dtype dtype;    /* declared or inferred; UNDEFINED until known */
    uint32_t flags;

    /* Declared shape from the model (inputs, outputs, value_info, initializers).
     * decl_rank -1: none declared. decl_dims[i] -1 with decl_sym[i] the symbolic
     * name ("p2o.DynamicDimension.0", "batch") or NULL when anonymous. */
    int decl_rank;
    int64_t decl_dims[MPX_MAX_RANK];
    const char *decl_sym[MPX_MAX_RANK];

    /* Current shape after binding and inference. rank -1: unknown. dims[i] -1:
     * unknown (sym[i] carries the symbolic name while it is unbound). */
    int rank;
    int64_t dims[MPX_MAX_RANK];
    const char *sym[MPX_MAX_RANK];
    int64_t nelem;      /* product of dims when all known, else -1 */

    /* Value, when known (initializer, Constant, or folded): exactly one of these
     * is non-NULL, with nelem elements. Float dtypes as fp32, float64 as
     * double (f64), integers and bool as int64. Strings carry no value. */
    float *f32;
    int64_t *i64;
    double *f64;

    mpx_node *producer; /* NULL for inputs, initializers */
    mpx_node **consumers;
    int n_consumers;

    /* A kernel's derived form of this constant's value (numerics/kern_gemm.c:
     * weights packed for the GEMM core), made on first use; owned by the
     * tensor and freed with the graph by derived_free. NULL until then. */
    void *derived;
    void (*derived_free)(void *);
} mpx_tensor;

typedef enum mpx_attr_type {
    MPX_ATTR_UNDEFINED = 0,
    MPX_ATTR_FLOAT = 1,
    MPX_ATTR_INT = 2,
    MPX_ATTR_STRING = 3,
    MPX_ATTR_TENSOR = 4,
    MPX_ATTR_GRAPH = 5,
    MPX_ATTR_FLOATS = 6,
    MPX_ATTR_INTS = 7,
    MPX_ATTR_STRINGS = 8,
    MPX_ATTR_TENSORS = 9,
    MPX_ATTR_GRAPHS = 10,
    MPX_ATTR_SPARSE_TENSOR = 11,
    MPX_ATTR_SPARSE_TENSORS = 12,
    MPX_ATTR_TYPE_PROTO = 13,
    MPX_ATTR_TYPE_PROTOS = 14,
} mpx_attr_type; /* numbering = ONNX AttributeProto.AttributeType */

typedef struct mpx_attr {
    const char *name;
    mpx_attr_type type;
    float f;
    int64_t i;
    const char *s;         /* STRING: bytes, NUL-terminated copy */
    size_t s_len;
    int n;                 /* element count of FLOATS/INTS/STRINGS/TENSORS/GRAPHS */
    float *floats;
    int64_t *ints;
    const char **strings;
    mpx_tensor *t;         /* TENSOR: a detached tensor (not in graph->tensors) */
    mpx_tensor **tensors;  /* TENSORS */
    /* GRAPH/GRAPHS: subgraphs are kept as their node count and name; an If's
     * branches are also flattened into the graph (mpx_node.guard), Loop and
     * Scan bodies are not run. SPARSE_TENSOR and TYPE_PROTO kinds keep only
     * their kind. */
    const char *graph_name;
    int graph_nodes;
} mpx_attr;

/* Cost figures, for rules ("macs >= 1M") and reports. -1 where unknown
 * (shape not bound yet). */
typedef struct mpx_cost {
    int64_t macs;      /* multiply-accumulates of one forward */
    int64_t params;    /* elements of constant inputs (weights, biases) */
    int64_t in_elems;  /* elements of non-constant inputs */
    int64_t out_elems; /* elements of all outputs */
    int64_t in_ch;     /* channels in (dim 1 of input 0 for NCHW ops; K for Gemm/MatMul) */
    int64_t out_ch;    /* channels out */
    int64_t kernel;    /* product of kernel spatial dims (1 for non-window ops) */
    int64_t group;     /* Conv group (1 otherwise) */
    int64_t k;         /* reduction depth: terms summed per output value */
} mpx_cost;

struct mpx_node {
    const char *name;      /* never NULL: ONNX's name, or "<op_type>_<index>" */
    int32_t index;         /* position in graph->nodes (topological) */
    mpx_op op;             /* MPX_OP_UNKNOWN when not in the registry */
    const char *op_type;   /* as in the file */
    const char *domain;    /* "" for the default ONNX domain */
    int opset;             /* opset version of the node's domain */
    int n_inputs;
    mpx_tensor **inputs;   /* an omitted optional input ("") is NULL */
    int n_outputs;
    mpx_tensor **outputs;  /* an omitted optional output is NULL */
    int n_attrs;
    mpx_attr *attrs;
    mpx_cost cost;
    int file_order;        /* position in the model file */
    /* A node of an If's branch (the loader flattens If subgraphs into the
     * graph, docs/ARCHITECTURE.md): the If and which branch (0 then, 1 else);
     * it runs only when that If's condition selects its branch. NULL for
     * the nodes of the main graph. */
    const struct mpx_node *guard;
    int branch;
    /* Loop and Scan: the body, a graph of its own (owned by the graph that
     * holds this node), run once per iteration by the kernel. Its inputs are
     * the body's formal ones, then every tensor of the enclosing graphs it
     * reads; this node reads those after its n_explicit inputs from the
     * file. NULL for every other node. */
    struct mpx_graph *body;
    int n_explicit;
};

/* The newest opset of ONNX's default domain whose ops the registry follows
 * (docs/op-coverage.md); a newer model is read as this one's. */
#define MPX_OPSET_NEWEST 23

struct mpx_graph {
    mpx_arena *arena;
    const char *path;      /* the file it came from ("" if built in memory) */
    const char *name;
    const char *producer;  /* producer_name [producer_version] */
    int64_t ir_version;
    int opset;             /* default-domain opset (the form the nodes hold) */
    int opset_file;        /* the file's, when older models were read in opset 7's form
                            * (graph/onnx_legacy.c); 0 when it is opset */
    /* The first node of an experimental op of opsets 1-9 the loader read as
     * standard ops (graph/onnx_legacy.c: ImageScaler as Mul and Add, ...),
     * which export cannot map back to the file; NULL if none. */
    const char *split_node;
    const char *split_op;

    int n_tensors;
    mpx_tensor **tensors;
    int n_nodes;
    mpx_node **nodes;      /* topological order, ties broken by file order */
    int n_inputs;
    mpx_tensor **inputs;   /* model inputs the user binds (not initializers) */
    int n_outputs;
    mpx_tensor **outputs;

    struct mpx_name_map *map_; /* name -> tensor; private to graph.c */
    struct mpx_name_map *node_map_; /* name -> node; private to graph.c */
    int tensors_cap_, nodes_cap_;
    /* Loop and Scan bodies of this graph's nodes (freed with it). */
    struct mpx_graph **children_;
    int n_children_, children_cap_;
    /* Side files the load read (mpx_graph_note_file; names in the arena). */
    const char **files_;
    int n_files_, files_cap_;
};

/* ---- building a graph (used by the loaders and by tests) --------------- */

/* A new empty graph with its own arena; NULL on out of memory. */
mpx_graph *mpx_graph_new(const char *path);
void mpx_graph_free(mpx_graph *g);

/* The tensor called name, created (dtype UNDEFINED, rank -1) if new. NULL only
 * on out of memory. */
mpx_tensor *mpx_graph_tensor(mpx_graph *g, const char *name);
mpx_tensor *mpx_graph_find_tensor(const mpx_graph *g, const char *name);
mpx_node *mpx_graph_find_node(const mpx_graph *g, const char *name);
/* A node inside a Loop's, Scan's or SequenceMap's body (nested ones too),
 * by name; *owner (may be NULL) gets the node of g whose body holds it, the
 * one the plan colours. NULL when no body holds such a node. */
const mpx_node *mpx_graph_find_body_node(const mpx_graph *g, const char *name, const mpx_node **owner);
/* Calls visit for every node inside the bodies of g's nodes (nested ones
 * too), with the node of g whose body holds it; stops when visit returns
 * false. */
void mpx_graph_each_body_node(const mpx_graph *g, bool (*visit)(void *ctx, const mpx_node *n, const mpx_node *owner),
                              void *ctx);

/* Append a node in file order. inputs/outputs arrays are allocated with the
 * given counts (all NULL); the loader fills them with mpx_graph_tensor(). A NULL
 * or empty name gets "<op_type>_<n>". */
mpx_node *mpx_graph_add_node(mpx_graph *g, const char *name, const char *op_type,
                             const char *domain, int n_inputs, int n_outputs,
                             int n_attrs);

/* Set a tensor's declared shape (dims -1 with sym for symbolic). */
mpx_status mpx_tensor_declare(mpx_tensor *t, mpx_dtype dtype, int rank,
                              const int64_t *dims, const char *const *sym,
                              mpx_error *err);
/* Allocate a value for t from the graph's arena (f32 or i64 by dtype), with
 * t's shape set from dims and the CONSTANT flag. The caller fills the data.
 * Fails with MPX_E_LIMIT when the element count overflows or exceeds
 * MPX_MAX_ELEMS. */
mpx_status mpx_tensor_alloc_value(mpx_graph *g, mpx_tensor *t, mpx_dtype dtype,
                                  int rank, const int64_t *dims, mpx_error *err);

/* Checked product of dims: -1 if any is negative, and MPX_E_LIMIT when the
 * product overflows or exceeds MPX_MAX_ELEMS. */
mpx_status mpx_dims_product(int rank, const int64_t *dims, int64_t *out,
                            mpx_error *err);

/* After all nodes are added: resolve ops against the registry, check the graph
 * (every input produced once, by a node, an initializer or a model input; no
 * tensor with two producers; no cycle), sort nodes topologically, fill
 * consumer lists, give Constant nodes' outputs their values, and (unless the
 * loader filled them) list graph->inputs / graph->outputs from the tensors
 * flagged MPX_T_INPUT / MPX_T_OUTPUT, in tensor-creation order. An input that is
 * also an initializer stays a weight. The error names the file and the node or
 * tensor at fault. */
mpx_status mpx_graph_finalize(mpx_graph *g, mpx_error *err);

/* ---- loaders --------------------------------------------------------------- */

/* By extension: .onnx or .json. */
mpx_graph *mpx_graph_load(const char *path, mpx_error *err);
mpx_graph *mpx_graph_load_onnx(const char *path, mpx_error *err);
/* From bytes in memory; dir is where external data files are looked up
 * (NULL: external data is refused). path names the source in errors. */
mpx_graph *mpx_graph_load_onnx_buffer(const uint8_t *buf, size_t len,
                                      const char *path, const char *dir,
                                      mpx_error *err);
/* One serialized ONNX TensorProto (as ONNX's test data input_0.pb) into a new
 * tensor from g's arena that is not one of g's tensors: name, dtype, shape
 * and, for numeric dtypes, the value (f32/i64), decoded and checked as
 * initializers are. External data is refused. path names the source. */
/* A SequenceProto (or an OptionalProto holding a tensor) of tensors, as in
 * ONNX's test data: its tensors decoded as detached tensors of g (*n of
 * them, *items in g's arena), its name into name. An OptionalProto holding
 * a sequence (inner non-NULL): *inner and *inner_len get that
 * SequenceProto's bytes (inside buf) and *n is 0; *inner NULL otherwise.
 * Other nested containers are refused by name. */
mpx_status mpx_sequence_proto_decode(mpx_graph *g, const uint8_t *buf, size_t len, const char *path,
                                     mpx_tensor ***items, int *n, char *name, size_t name_len,
                                     const uint8_t **inner, size_t *inner_len, mpx_error *err);
mpx_status mpx_tensor_proto_decode(mpx_graph *g, const uint8_t *buf, size_t len,
                                   const char *path, mpx_tensor **out, mpx_error *err);
mpx_graph *mpx_graph_load_json(const char *path, mpx_error *err);
mpx_graph *mpx_graph_load_json_text(const char *text, size_t len,
                                    const char *path, const char *dir,
                                    mpx_error *err);

/* ---- attributes ------------------------------------------------------------ */

const mpx_attr *mpx_node_attr(const mpx_node *n, const char *name);
/* Typed getters with a default. The float getter also accepts an INT attribute
 * (and the int getter a FLOAT with an integral value), since hand-written
 * models often spell 1.0 as 1. */
int64_t mpx_node_attr_int(const mpx_node *n, const char *name, int64_t dflt);
float mpx_node_attr_float(const mpx_node *n, const char *name, float dflt);
const char *mpx_node_attr_string(const mpx_node *n, const char *name,
                                 const char *dflt);
/* INTS: returns the count (0 if absent) and sets *vals (NULL if absent). */
int mpx_node_attr_ints(const mpx_node *n, const char *name, const int64_t **vals);
/* The element type a Cast or CastLike converts to: Cast's attribute `to`,
 * CastLike's second input's type (only its type is read, never its values).
 * MPX_DT_UNDEFINED for other nodes and where the type is unknown. */
mpx_dtype mpx_node_cast_to(const mpx_node *n);
/* Whether output j is one whose element type the op fixes to float32
 * whatever its inputs' (a type "U" of float in the schema): the Mean and
 * InvStdDev of LayerNormalization with stash_type 1, the mean and
 * inv_std_var of ONNX Runtime's Skip(Simplified)LayerNormalization and the
 * inv_std_var of SimplifiedLayerNormalization. A runtime running the node
 * in fp16 writes them in fp32, so a plan holds them fp32 and the executor
 * does not round them. */
bool mpx_node_output_is_f32(const mpx_node *n, int j);

/* ---- seeded random numbers (graph/random.c) ------------------------------- */

/* The same stream for a seed on every machine (JSON random weights, random
 * inputs). A caller-owned value; no allocation. */
typedef struct mpx_rng {
    uint64_t s[4];
    bool have_spare;
    double spare;
} mpx_rng;

void mpx_rng_init(mpx_rng *r, uint64_t seed);
uint64_t mpx_rng_next(mpx_rng *r);
double mpx_rng_unit(mpx_rng *r);                           /* [0, 1), steps of 2^-53 */
double mpx_rng_normal(mpx_rng *r, double mean, double std); /* Box-Muller */

/* ---- shapes, constant folding, costs -------------------------------------- */

/* Bind a model input's shape (replacing its symbolic dims). Checks the rank and
 * every fixed declared dim; the message names the input and the dim. */
mpx_status mpx_graph_bind_input(mpx_graph *g, const char *input, int rank,
                                const int64_t *dims, mpx_error *err);

/* Infer every tensor's dtype and shape from the bound inputs, fold constant
 * shape-computing chains (Shape -> Gather/Slice -> Concat -> Reshape ...), and
 * compute node costs. Tensors downstream of an unbound input or an unknown op
 * stay unknown (rank -1); that is not an error. Shapes that do not fit
 * together (Add of 3x4 and 5, Reshape of 12 elements to 5x5) are errors naming
 * the node. Safe to call again after re-binding. */
mpx_status mpx_graph_infer(mpx_graph *g, mpx_error *err);

/* ---- constant folding: one evaluator of op meaning ------------------------
 *
 * graph/ defines what each op does to shapes (shape.c, shape_ops.c); what an op
 * computes is defined once, by numerics' kernels. Constant folding (inside
 * mpx_graph_infer: shape chains such as Shape -> Cast -> Slice -> Concat ->
 * Reshape) runs those kernels through the evaluator registered here, so the
 * layers keep their direction (graph/ never includes numerics/) and a new op
 * needs no folding code: its kernel and "fold" in its ops.def row are all it
 * takes for its values to fold.
 *
 * mpx_graph_infer folds a node of an op marked fold in ops.def when every
 * present input has a value (t->f32 or t->i64), the node has at least one
 * input, and an output has a known shape of at most MPX_FOLD_MAX_ELEMS
 * elements (inputs may be any size: a Gather from a weight). graph/ allocates those
 * outputs' buffers (f32 or i64 by dtype, nelem elements, shape as inferred)
 * and calls the evaluator, which fills every allocated buffer and sets *done;
 * *done false (an op without a kernel, a result that is not exact to compute,
 * a kernel refusing the values for a reason only a run may have) leaves the
 * outputs unknown, which is never an error. It returns an error (err filled,
 * naming the node) only when the values do not fit the op (MPX_E_SHAPE: a
 * Gather index out of range), as the run would fail the same way. Shape and
 * Size (their values need only the input's shape) and empty outputs fold
 * without it.
 *
 * Registration is process-wide and explicit: a program calls
 * mpx_numerics_init() (numerics/mpx_numerics.h) once, before inferring, from
 * one thread. A program that links graph/ alone, or registers nothing, still
 * infers every shape that needs no folded value. */
/* Largest folded value: shape chains carry a handful of int64s; anything
 * bigger is real data and is left to the executor. */
enum { MPX_FOLD_MAX_ELEMS = 4096 };
typedef mpx_status (*mpx_node_eval_fn)(const mpx_node *n, bool *done, mpx_error *err);
void mpx_graph_set_evaluator(mpx_node_eval_fn fn); /* NULL: none */
mpx_node_eval_fn mpx_graph_evaluator(void);

/* ---- index arithmetic both layers use (graph/index.c) ----------------------- */

/* ONNX Slice on one axis of length d (d >= 0) with start s, end e and step
 * (non-zero): negative starts/ends count from the end; starts clamp to [0, d]
 * ([0, d-1] for negative steps), ends to [0, d] ([-1, d-1]). Returns the
 * output length and sets *start to the first index taken. Shape inference and
 * the Slice kernel both call it, so a shape and its values agree. */
int64_t mpx_slice_axis(int64_t d, int64_t s, int64_t e, int64_t step, int64_t *start);

/* Multidirectional (numpy) broadcasting of one dim pair, aligned from the
 * right: 1 takes the other, equal dims stay; -1 is an unknown dim (shape
 * inference): with a known one it takes that, two unknowns stay unknown.
 * Returns the result dim, or MPX_BCAST_NO when they do not broadcast. Shape
 * inference and the elementwise kernels both call it. */
#define MPX_BCAST_NO ((int64_t)-2)
int64_t mpx_bcast_dim(int64_t a, int64_t b);

/* The dims a Shape node n reads from an input of rank `rank` (its start and
 * end attributes, clamped as ONNX says): returns how many, from *start. Shape
 * inference and the Shape kernel both call it. */
int64_t mpx_shape_op_range(const mpx_node *n, int rank, int64_t *start);

/* ---- op geometry both layers use (graph/geom.c) ------------------------------
 * Shape inference calls these with dims that may be unknown (-1), the
 * kernels with their values' dims: one computation, so a shape and the
 * values agree. Messages name no node (the caller's error adds it). */

/* Window attributes (kernel_shape, strides, dilations, pads, output_padding,
 * output_shape) beyond this are refused, so window arithmetic on int64 cannot
 * overflow (dims are below 2^31). */
#define MPX_WINDOW_ATTR_MAX ((int64_t)1 << 30)
enum { MPX_WINDOW_MAX_SP = MPX_MAX_RANK - 2 };
typedef enum mpx_autopad {
    MPX_AUTOPAD_NOTSET,
    MPX_AUTOPAD_SAME_UPPER,
    MPX_AUTOPAD_SAME_LOWER,
    MPX_AUTOPAD_VALID
} mpx_autopad;
/* A sliding window over the spatial dims of an N x C x D1 x ... tensor. */
typedef struct mpx_window {
    int nsp;                          /* spatial dims */
    int64_t in[MPX_WINDOW_MAX_SP];    /* input lengths (-1 unknown) */
    int64_t out[MPX_WINDOW_MAX_SP];   /* output lengths (mpx_window_out, mpx_window_transpose_out) */
    int64_t k[MPX_WINDOW_MAX_SP];     /* kernel lengths (-1 unknown) */
    int64_t s[MPX_WINDOW_MAX_SP];     /* strides */
    int64_t d[MPX_WINDOW_MAX_SP];     /* dilations */
    int64_t pb[MPX_WINDOW_MAX_SP];    /* padding before (set from auto_pad by the _out functions) */
    int64_t pe[MPX_WINDOW_MAX_SP];    /* padding after */
    mpx_autopad auto_pad;
} mpx_window;
/* Node n's window over an input of rank `rank` with spatial lengths in[]:
 * kernel_shape (required when kernel is NULL, else checked against the
 * weights' lengths kernel[], -1 unknown), strides, dilations, pads, auto_pad. */
mpx_status mpx_window_read(const mpx_node *n, int rank, const int64_t *in, const int64_t *kernel, mpx_window *w,
                           mpx_error *err);
/* Output lengths of Conv and the pools (ceil_mode for the pools) and the
 * padding auto_pad implies: SAME_* pads so that out = ceil(in / stride), the
 * odd unit at the end (UPPER) or the beginning (LOWER), the total clamped at
 * 0; VALID pads nothing. With ceil_mode the last window must start inside the
 * input or the leading padding. Unknown lengths give -1. */
mpx_status mpx_window_out(mpx_window *w, bool ceil_mode, mpx_error *err);
/* ConvTranspose's output lengths (output_padding, output_shape read from n)
 * and the pads they imply. */
mpx_status mpx_window_transpose_out(const mpx_node *n, mpx_window *w, mpx_error *err);
/* MaxUnpool's length of spatial dim i without output_shape:
 * (in - 1) * stride + kernel - pads (-1 when in is unknown). */
int64_t mpx_window_unpool_len(const mpx_window *w, int i);

/* Einsum's equation over its inputs: labels are letters, "..." stands for
 * broadcast batch dims (right-aligned across the inputs). Label ids: 'a'-'z'
 * 0-25, 'A'-'Z' 26-51, the "..." dims 52 on. */
enum { MPX_EINSUM_MAX_IN = 16, MPX_EINSUM_LABELS = 52 + MPX_MAX_RANK };
typedef struct mpx_einsum {
    int n_in;
    int in_rank[MPX_EINSUM_MAX_IN];
    int in_label[MPX_EINSUM_MAX_IN][MPX_MAX_RANK]; /* each input axis's label id */
    int n_out;
    int out_label[MPX_MAX_RANK];                    /* each output axis's label id */
    int64_t size[MPX_EINSUM_LABELS];                /* -2 in no input, -1 unknown */
    int first[MPX_EINSUM_LABELS];                   /* order of first appearance, -1 none */
    int count[MPX_EINSUM_LABELS];                   /* occurrences over the inputs */
    int ell_rank;                                   /* dims "..." stands for */
} mpx_einsum;
/* Parse eq for n_in inputs of ranks[k] and dims[k] (a rank -1 is unknown:
 * then only the syntax and the terms are checked and *complete is false).
 * Sizes of one label broadcast (mpx_bcast_dim); the output is as written, or
 * "..." then the labels that occur once in character order. */
mpx_status mpx_einsum_parse(const char *eq, int n_in, const int *ranks, const int64_t *const *dims, mpx_einsum *e,
                            bool *complete, mpx_error *err);

/* Resize's and Upsample's output lengths: for an input of rank `rank` and
 * dims (-1 unknown), from scales or sizes (one of them, n_given values, for
 * the axes Resize-18's axes attribute lists, every axis otherwise or when
 * legacy: Upsample, Resize-10), with keep_aspect_ratio_policy. A length is
 * the fp32 product floored, as ONNX and ONNX Runtime compute it; upsample
 * refuses a scale below 1. */
typedef struct mpx_resize_geometry {
    int rank, na;
    int axes[MPX_MAX_RANK];     /* the axes the values speak of, in order */
    int64_t out[MPX_MAX_RANK];  /* output lengths per axis of X (-1 unknown) */
    float scale[MPX_MAX_RANK];  /* the fp32 scale per axis (1 where not resized) */
    bool exact[MPX_MAX_RANK];   /* the length came from sizes (stretch): scale is out / in */
} mpx_resize_geometry;
/* The axes alone (every axis of X unless Resize-18 lists them). */
mpx_status mpx_resize_axes(const mpx_node *n, bool legacy, int rank, int *axes, int *na, mpx_error *err);
mpx_status mpx_resize_geom(const mpx_node *n, bool legacy, bool upsample, int rank, const int64_t *dims,
                           const float *scales, const int64_t *sizes, int64_t n_given, mpx_resize_geometry *g,
                           mpx_error *err);

/* "1x3x224x224" (dims >= 0, "" is rank 0) into dims[MPX_MAX_RANK]: the rank,
 * or -1 for anything else (the benches' and test tools' argument syntax). */
int mpx_dims_parse(const char *s, int64_t *dims);

/* Number of tensors whose shape is still unknown after mpx_graph_infer (and,
 * when first_unknown is non-NULL, the first such tensor in topological order). */
int mpx_graph_count_unknown(const mpx_graph *g, const mpx_tensor **first_unknown);

/* Totals over the graph: parameter elements (initializers and Constant values of
 * every dtype) and MACs of one forward (-1 if some node's MACs are unknown). */
int64_t mpx_graph_param_count(const mpx_graph *g);
/* A count for people: 1234, 12.3K, 4.56M, 7.89G; "?" when negative (unknown). */
const char *mpx_count_str(int64_t v, char *buf, size_t n);
int64_t mpx_graph_macs(const mpx_graph *g);
/* Each fact counted once, per node (arrays of g->n_nodes; either may be
 * NULL), what `ops`, `info` and the plan's MAC share add up:
 * params[i]: the elements of the stored constants (initializers, Constant
 * values; not values folded at load) node i reads that no node before it
 * reads, so a weight shared by several nodes or If branches counts once and
 * the sum is mpx_graph_param_count less constants no node reads.
 * macs[i]: node i's MACs (-1 unknown) when it runs in one forward, else 0:
 * the nodes of an If's branch count only in the branch it takes, the one a
 * constant condition selects, else (a condition known only at run time) the
 * branch with more MACs. mpx_graph_macs is their sum. False when out of
 * memory. */
bool mpx_graph_count_once(const mpx_graph *g, int64_t *params, int64_t *macs);

/* The cost a plan's low share is counted in (low_cost_pct), defined once
 * here (graph/cost.c says why): a node's multiply-adds plus
 * MPX_COST_PER_ELEMENT for every element it reads or writes (weights
 * included); a runtime cast reads and writes each element of its tensor
 * once. -1 when unknown (shapes not bound). */
#define MPX_COST_PER_ELEMENT 1
int64_t mpx_cost_node_work(const mpx_node *n);
int64_t mpx_cost_cast_work(const mpx_tensor *t);

/* "1x3x640x640" for rank and dims ("?" for a dim below 0, "scalar" for
 * rank 0, "(unknown)" for a rank below 0), cut to n bytes. Returns buf. */
const char *mpx_dims_str(int rank, const int64_t *dims, char *buf, size_t n);
/* "1x3x640x640", "?x3x?x?" or "(unknown)". Returns buf. */
const char *mpx_tensor_shape_str(const mpx_tensor *t, char *buf, size_t n);

/* ---- files written (file_write.c) ------------------------------------------ *
 *
 * Every file mpx writes goes through these: to a temporary file created
 * exclusively (never through an existing name or a planted link) in the
 * target's folder, flushed to disk, renamed over the target. A failure at any
 * point leaves the old target (or none) and no temporary file.
 *
 * Ownership: an mpx_file_guard belongs to whoever made it (the session); it
 * holds the identities of files read, so that a target that is one of them,
 * a symlink to one or a hard link of one is refused. An mpx_out_file belongs
 * to the caller from open until commit or abort, which free it.
 */
typedef struct mpx_file_guard mpx_file_guard;
mpx_file_guard *mpx_file_guard_new(void); /* NULL on out of memory */
void mpx_file_guard_free(mpx_file_guard *g);
/* Protect the file path names (followed through links); what says what it
 * is in refusals ("the model this session loaded"; NULL: "a file this
 * session read"). A name that is not a regular file protects nothing and is
 * not an error. */
mpx_status mpx_file_guard_add(mpx_file_guard *g, const char *path, const char *what, mpx_error *err);
/* Protect a loaded model: its file and every file its load read
 * (mpx_graph_note_file). */
mpx_status mpx_file_guard_add_model(mpx_file_guard *g, const mpx_graph *model, mpx_error *err);
/* Undo one add of path (a script that has finished running): the file is
 * writable again once every add of it is dropped. */
void mpx_file_guard_drop(mpx_file_guard *g, const char *path);
size_t mpx_file_guard_count(const mpx_file_guard *g);
/* Whether path may be written: not a folder, not a file g protects (g may
 * be NULL). */
mpx_status mpx_file_check_target(const char *path, const mpx_file_guard *g, mpx_error *err);

typedef struct mpx_out_file mpx_out_file;
/* Start writing path (its folder must exist). */
mpx_status mpx_file_open_write(const char *path, const mpx_file_guard *g, mpx_out_file **out, mpx_error *err);
mpx_status mpx_out_file_write(mpx_out_file *o, const void *buf, size_t len, mpx_error *err);
/* A stdio stream on the temporary file (for writers that print); NULL on out
 * of memory. Errors show at commit. */
FILE *mpx_out_file_stream(mpx_out_file *o);
/* Flush, sync, check the target again, rename into place; frees o. */
mpx_status mpx_out_file_commit(mpx_out_file *o, const mpx_file_guard *g, mpx_error *err);
/* Remove the temporary file; frees o (NULL is fine). */
void mpx_out_file_abort(mpx_out_file *o);
/* The whole of buf as path's new content. */
mpx_status mpx_file_write_all(const char *path, const mpx_file_guard *g, const void *buf, size_t len,
                              mpx_error *err);
/* Unlink every temporary file being written: async-signal-safe, for the
 * program's SIGINT/SIGTERM handlers before the process ends. */
void mpx_file_remove_pending(void);

/* ---- scopes: the structure a model's node names give it (graph/scopes.c) ---- */

/* Exporters name nodes by the module that made them: PyTorch
 * "/stage1/rebnconv3/conv_s1/Conv", TensorFlow "model/conv2d_19/BiasAdd"; an
 * If's flattened branch nodes live under "<if>/then_branch/". The scope tree
 * is that structure: each '/' component but a name's last is a scope, each
 * If branch a scope inside its If's scope (its nodes' names read relative to
 * it; an inliner's "<x>__Inline_<n>__" component is no scope). Shaped for a
 * reader: a scope holding one node is that node (in its parent), a scope
 * with no node of its own and one child is one scope with the child
 * ("encoder/layer.3"), a scope with more than MPX_SCOPE_MAX_CHILDREN
 * children gathers runs of consecutive ones into groups. The review page,
 * dot/svg --fold scopes and plan --scopes all read this tree. */
#define MPX_SCOPE_MAX_CHILDREN 16

typedef enum mpx_scope_kind {
    MPX_SCOPE_ROOT,   /* the whole model: scopes[0] */
    MPX_SCOPE_NAME,   /* a component of node names */
    MPX_SCOPE_BRANCH, /* an If's branch */
    MPX_SCOPE_GROUP,  /* consecutive siblings gathered (see above) */
} mpx_scope_kind;

typedef struct mpx_scope {
    const char *path;   /* the prefix its nodes' names share ("/stage1/rebnconv3", "If_0/then_branch"); "" root */
    const char *label;  /* what its box says ("rebnconv3", "If_0: then_branch", "conv2d_1 ... conv2d_9") */
    mpx_scope_kind kind;
    int parent;         /* -1 for the root */
    int depth;          /* 0 for the root */
    int n_children;     /* child scopes, in graph order of their first node */
    int *children;
    int n_nodes;        /* nodes directly in it (in no child), in graph order */
    int *nodes;
    int n_total;        /* nodes in it and below */
    int first;          /* its first node (graph order) */
} mpx_scope;

typedef struct mpx_scopes {
    int n;
    mpx_scope *s;          /* s[0]: the root; a parent before its children */
    int n_graph_nodes;
    int *of_node;          /* [n_graph_nodes] the innermost scope of each node; -1 for a skipped node */
    const char **short_name; /* [n_graph_nodes] the name less its scope's path (points into the name) */
    /* Where a first view opens: the root, or the scope below a chain of
     * scopes that each hold one child and no node. */
    int top;
    /* Nodes in a scope other than the root: 0 when the names carry no
     * structure (PaddlePaddle's "p2o.Conv.0"). */
    int n_scoped;
    mpx_arena *arena;
} mpx_scopes;

/* The scope tree of g; skip (may be NULL) marks nodes to leave out (the
 * pictures leave out Constant and folded nodes). Free with mpx_scopes_free. */
mpx_status mpx_graph_scopes(const mpx_graph *g, const bool *skip, mpx_scopes **out, mpx_error *err);
void mpx_scopes_free(mpx_scopes *s);
/* Whether scope a is s or one of its ancestors. */
bool mpx_scope_within(const mpx_scopes *sc, int s, int a);
/* Whether the tree is worth a view of its own: the names carry scopes for at
 * least half the nodes and the first view holds two items or more. */
bool mpx_scopes_useful(const mpx_scopes *sc);
/* A branch node's name relative to its If branch, inliner components left
 * out ("stft/padding/Pad" for "If_0/else_branch/If_0_else_branch__Inline_0__/
 * stft/padding/Pad"); other nodes' names as they are. Points into the name. */
const char *mpx_node_local_name(const mpx_node *n);

/* Files other than g->path that loading g read (ONNX external data, JSON
 * side files), each named once (loaders call note; the session protects
 * each from its writes). each visits g's and its bodies' files. */
mpx_status mpx_graph_note_file(mpx_graph *g, const char *path);
void mpx_graph_each_file(const mpx_graph *g, void (*visit)(void *ctx, const char *path), void *ctx);

#ifdef __cplusplus
}
#endif

#endif
