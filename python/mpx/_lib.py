"""libmpx through ctypes: the library, the C structures the package reads
and the prototypes of the functions it calls.

The structures mirror the public headers (graph/mpx_graph.h, numerics/'s
four, colour/mpx_colour.h, viz/mpx_viz.h, export/mpx_export.h,
explore/mpx_explore.h). Structures
the package only reads through a pointer (a graph, a tensor, a node, a
comparison, a plan) are declared up to the last field it reads; those it
allocates or indexes in arrays (an error, a value, a layer, options) are
declared whole. tests/python/abi_check.py holds every mirror (MIRRORS, at
the end) to the layout the compiler gives the headers, field by field; the
other tests compare the package's figures with the mpx program's.

Which libmpx is loaded: $MPX_LIBRARY (a path) when set (the build tree's
tests), else the one installed beside the package (_install.py, written by
`cmake --install`), else libmpx.so.0 by its soname (the loader's path).
"""
import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char, c_char_p, c_double, c_float, c_int,
                    c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p)

SONAME = "libmpx.so.0"
MAX_RANK = 8


def _find_library():
    env = os.environ.get("MPX_LIBRARY")
    if env:
        return env
    try:
        from . import _install  # written by cmake --install
        path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), _install.LIBRARY))
        if os.path.exists(path):
            return path
    except ImportError:
        pass
    return SONAME


LIBRARY = _find_library()
lib = ctypes.CDLL(LIBRARY)

# ---- structures -------------------------------------------------------------


class Error_(Structure):  # mpx_error
    _fields_ = [("status", c_int), ("file", c_char * 512), ("line", c_int), ("column", c_int),
                ("msg", c_char * 1024)]


class Tensor(Structure):  # mpx_tensor, up to f32, i64 and f64
    _fields_ = [("name", c_char_p), ("index", c_int32), ("dtype", c_int), ("flags", c_uint32),
                ("decl_rank", c_int), ("decl_dims", c_int64 * MAX_RANK), ("decl_sym", c_char_p * MAX_RANK),
                ("rank", c_int), ("dims", c_int64 * MAX_RANK), ("sym", c_void_p * MAX_RANK), ("nelem", c_int64),
                ("f32", POINTER(c_float)), ("i64", POINTER(c_int64)), ("f64", POINTER(c_double))]


class Node(Structure):  # mpx_node, up to outputs
    _fields_ = [("name", c_char_p), ("index", c_int32), ("op", c_int), ("op_type", c_char_p), ("domain", c_char_p),
                ("opset", c_int), ("n_inputs", c_int), ("inputs", POINTER(POINTER(Tensor))), ("n_outputs", c_int),
                ("outputs", POINTER(POINTER(Tensor)))]


class Graph(Structure):  # mpx_graph, up to outputs
    _fields_ = [("arena", c_void_p), ("path", c_char_p), ("name", c_char_p), ("producer", c_char_p),
                ("ir_version", c_int64), ("opset", c_int), ("opset_file", c_int), ("split_node", c_char_p),
                ("split_op", c_char_p), ("n_tensors", c_int), ("tensors", POINTER(POINTER(Tensor))),
                ("n_nodes", c_int), ("nodes", POINTER(POINTER(Node))), ("n_inputs", c_int),
                ("inputs", POINTER(POINTER(Tensor))), ("n_outputs", c_int), ("outputs", POINTER(POINTER(Tensor)))]


class Value(Structure):  # mpx_value
    pass


Value._fields_ = [("dtype", c_int), ("rank", c_int), ("dims", c_int64 * MAX_RANK), ("n", c_int64),
                  ("f", POINTER(c_float)), ("i", POINTER(c_int64)), ("d", POINTER(c_double)), ("borrowed", c_bool),
                  ("mapped", c_size_t),
                  ("is_seq", c_bool), ("is_opt", c_bool), ("seq", POINTER(Value))]


class Metrics(Structure):  # mpx_metrics
    _fields_ = [("n", c_int64), ("max_abs", c_double), ("mean_abs", c_double), ("rel_l2", c_double),
                ("cos", c_double), ("sqnr_db", c_double), ("overflow", c_int64), ("underflow", c_int64),
                ("subnormal", c_int64), ("absmax_ref", c_double)]


class Layer(Structure):  # mpx_layer
    _fields_ = [("tensor", c_int), ("node", c_int), ("fmt", c_void_p), ("m", Metrics), ("has_local", c_bool),
                ("local", Metrics), ("unmeasured", c_bool)]


class Compare(Structure):  # mpx_compare
    _fields_ = [("g", c_void_p), ("n_layers", c_int), ("layers", POINTER(Layer)), ("ref", POINTER(Value)),
                ("cand", POINTER(Value)), ("ms_ref", c_double), ("ms_cand", c_double), ("ms_local", c_double),
                ("ms_metrics", c_double), ("peak_bytes", c_size_t), ("n_run", c_int), ("incremental", c_bool),
                ("samples", c_void_p), ("n_body", c_int), ("body", c_void_p), ("n_shared", c_int),
                ("n_values", c_int)]


PROGRESS = CFUNCTYPE(None, c_void_p, c_int, c_int)


class CompareOpts(Structure):  # mpx_compare_opts
    _fields_ = [("local", c_bool), ("keep", POINTER(c_bool)), ("cancel", POINTER(c_int)), ("progress", PROGRESS),
                ("progress_ctx", c_void_p), ("threads", c_int), ("cache", c_void_p), ("measure", POINTER(c_bool)),
                ("undoable", c_bool)]


class PlanOpts(Structure):  # mpx_plan_opts
    _fields_ = [("target", c_void_p), ("keep_io", c_bool), ("accum", c_void_p), ("accum_block", c_int)]


class PlanMeasured(Structure):  # mpx_plan_measured
    _fields_ = [("n_nodes", c_int), ("absmax", POINTER(c_double))]


class PlanNode(Structure):  # mpx_plan_node
    _fields_ = [("dflt", c_int), ("dflt_source", c_char_p), ("colour", c_int), ("colour_rule", c_int),
                ("accum_rule", c_int), ("is_float", c_bool), ("folded", c_bool), ("low", c_bool),
                ("compute", c_void_p), ("accum", c_void_p), ("accum_flags", c_uint32), ("output", c_void_p),
                ("cause", c_int), ("fused", c_bool), ("fuse_rule", c_int)]


class PlanTensor(Structure):  # mpx_plan_tensor
    _fields_ = [("format", c_void_p), ("constant", c_bool)]


class PlanCast(Structure):  # mpx_plan_cast
    _fields_ = [("tensor", c_int), ("from_", c_void_p), ("to", c_void_p), ("n_consumers", c_int),
                ("consumers", POINTER(c_int))]


COLOUR_COUNT = 5  # MPX_COLOUR_COUNT


class PlanCounts(Structure):  # mpx_plan_counts
    _fields_ = [("nodes", c_int * COLOUR_COUNT), ("float_nodes", c_int), ("low_nodes", c_int), ("casts", c_int),
                ("weights_converted", c_int), ("weight_bytes_before", c_int64), ("weight_bytes_after", c_int64),
                ("macs_total", c_int64), ("macs_low", c_int64), ("macs_unknown", c_int),
                ("low_macs_pct", c_double), ("cost_total", c_int64), ("cost_low", c_int64),
                ("low_cost_pct", c_double)]


class Plan(Structure):  # mpx_plan, up to counts
    _fields_ = [("g", c_void_p), ("opts", PlanOpts), ("n_nodes", c_int), ("n_tensors", c_int),
                ("nodes", POINTER(PlanNode)), ("tensors", POINTER(PlanTensor)), ("n_casts", c_int),
                ("casts", POINTER(PlanCast)), ("n_weights", c_int), ("weights", c_void_p), ("n_rules", c_int),
                ("rule_selected", POINTER(c_int)), ("rule_applied", POINTER(c_int)), ("counts", PlanCounts)]


class ImageOpts(Structure):  # mpx_image_opts
    _fields_ = [("height", c_int64), ("width", c_int64), ("layout", c_int), ("channels", c_int),
                ("scale", c_double), ("mean", c_double * 3), ("std", c_double * 3)]


class AudioOpts(Structure):  # mpx_audio_opts
    _fields_ = [("rate", c_int), ("length", c_int64), ("scale", c_double)]


class VizOpts(Structure):  # mpx_viz_opts
    _fields_ = [("around", c_char_p), ("depth", c_int), ("to_cause", c_bool), ("shapes", c_bool),
                ("collapse", c_bool), ("fold", c_int), ("fold_by", c_int), ("open_scope", c_int), ("cluster", c_int),
                ("weights", c_bool), ("all", c_bool),
                ("legend", c_bool), ("overlay", c_void_p), ("overlay_local", c_bool), ("rules", c_void_p),
                ("title", c_char_p), ("engine", c_char_p)]


class VizSeries(Structure):  # mpx_viz_series
    _fields_ = [("label", c_char_p), ("cmp", c_void_p)]


class PlotOpts(Structure):  # mpx_viz_plot_opts
    _fields_ = [("metric", c_int), ("local", c_bool), ("marks", c_void_p), ("title", c_char_p), ("width", c_int),
                ("height", c_int)]


class VizPage(Structure):  # mpx_viz_page
    _fields_ = [("plan", c_void_p), ("rules", c_void_p), ("model_path", c_char_p), ("series", POINTER(VizSeries)),
                ("n_series", c_int), ("graph", POINTER(VizOpts)), ("plot", POINTER(PlotOpts)),
                ("sample_labels", c_void_p), ("n_sample_labels", c_int)]


class ExportSummary(Structure):  # mpx_export_summary (export/mpx_export.h)
    _fields_ = [("nodes", c_int), ("casts", c_int), ("casts_retyped", c_int), ("weights", c_int),
                ("weight_elems", c_int64), ("bytes_before", c_int64), ("bytes_after", c_int64),
                ("opset_before", c_int), ("opset", c_int), ("upgraded", c_int), ("n_overflow", c_int),
                ("overflow", c_char * 256), ("n_flushed", c_int), ("flushed", c_char * 256), ("n_kept", c_int),
                ("kept", c_char * 256), ("n_accum_options", c_int), ("accum_options", c_char * 256),
                ("external_bytes", c_int64), ("external", c_char * 1100), ("target", c_void_p), ("accum", c_void_p),
                ("accum_block", c_int), ("keep_io", c_bool)]


# ---- prototypes ---------------------------------------------------------------

E = POINTER(Error_)
_P = c_void_p


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


version = _fn("mpx_version", c_char_p)
error_format = _fn("mpx_error_format", c_char_p, E, c_char_p, c_size_t)
status_name = _fn("mpx_status_name", c_char_p, c_int)
numerics_init = _fn("mpx_numerics_init", None)
dtype_name = _fn("mpx_dtype_name", c_char_p, c_int)
dtype_is_float = _fn("mpx_dtype_is_float", c_bool, c_int)
dtype_is_int_like = _fn("mpx_dtype_is_int_like", c_bool, c_int)

graph_load = _fn("mpx_graph_load", POINTER(Graph), c_char_p, E)
graph_free = _fn("mpx_graph_free", None, POINTER(Graph))
graph_bind_input = _fn("mpx_graph_bind_input", c_int, POINTER(Graph), c_char_p, c_int, POINTER(c_int64), E)
graph_infer = _fn("mpx_graph_infer", c_int, POINTER(Graph), E)
graph_find_tensor = _fn("mpx_graph_find_tensor", POINTER(Tensor), POINTER(Graph), c_char_p)
graph_find_node = _fn("mpx_graph_find_node", POINTER(Node), POINTER(Graph), c_char_p)
graph_macs = _fn("mpx_graph_macs", c_int64, POINTER(Graph))
graph_param_count = _fn("mpx_graph_param_count", c_int64, POINTER(Graph))
exec_prepare = _fn("mpx_exec_prepare", c_size_t, POINTER(Graph))

file_guard_new = _fn("mpx_file_guard_new", _P)
file_guard_free = _fn("mpx_file_guard_free", None, _P)
file_guard_add = _fn("mpx_file_guard_add", c_int, _P, c_char_p, c_char_p, E)
file_guard_add_model = _fn("mpx_file_guard_add_model", c_int, _P, POINTER(Graph), E)
file_write_all = _fn("mpx_file_write_all", c_int, c_char_p, _P, c_void_p, c_size_t, E)

format_by_name = _fn("mpx_format_by_name", _P, c_char_p)
format_name = _fn("mpx_format_name", c_char_p, _P)
format_count = _fn("mpx_format_count", c_size_t)
format_at = _fn("mpx_format_at", _P, c_size_t)

value_alloc = _fn("mpx_value_alloc", c_int, POINTER(Value), c_int, c_int, POINTER(c_int64), E)
value_free = _fn("mpx_value_free", None, POINTER(Value))
value_fill = _fn("mpx_value_fill", None, POINTER(Value), c_int, c_double, c_double, c_uint64)
fill_check = _fn("mpx_fill_check", c_int, c_int, c_double, c_double, POINTER(Error_))
FILL = {"normal": 0, "uniform": 1, "const": 2}  # mpx_fill_kind
npy_read = _fn("mpx_npy_read", c_int, c_char_p, POINTER(Value), E)
npy_write = _fn("mpx_npy_write", c_int, c_char_p, _P, POINTER(Value), E)
image_opts_default = _fn("mpx_image_opts_default", None, POINTER(ImageOpts))
image_read = _fn("mpx_image_read", c_int, c_char_p, POINTER(ImageOpts), c_int, POINTER(c_int64), POINTER(Value), E)
audio_opts_default = _fn("mpx_audio_opts_default", None, POINTER(AudioOpts))
audio_read = _fn("mpx_audio_read", c_int, c_char_p, POINTER(AudioOpts), c_int, POINTER(Value), POINTER(c_int), E)
data_kind = _fn("mpx_data_kind", c_char_p, c_char_p)

set_cancel_flag = _fn("mpx_set_cancel_flag", None, POINTER(c_int))
compare_run = _fn("mpx_compare_run", c_int, POINTER(Graph), _P, POINTER(Value), POINTER(CompareOpts),
                  POINTER(POINTER(Compare)), E)
compare_run_many = _fn("mpx_compare_run_many", c_int, POINTER(Graph), POINTER(_P), c_int, POINTER(Value),
                       POINTER(CompareOpts), POINTER(POINTER(Compare)), E)
compare_free = _fn("mpx_compare_free", None, POINTER(Compare))
compare_worst_layer = _fn("mpx_compare_worst_layer", POINTER(Layer), POINTER(Compare), c_int)
WORST = {"any": 0, "output": 1, "own": 2}  # mpx_worst_of
compare_cache_new = _fn("mpx_compare_cache_new", _P, c_size_t)
compare_cache_clear = _fn("mpx_compare_cache_clear", None, _P)
compare_cache_free = _fn("mpx_compare_cache_free", None, _P)
assign_free = _fn("mpx_assign_free", None, _P)
metric_info_of = _fn("mpx_metric_info_of", POINTER(c_char_p), c_int)  # first field: the name
metric_by_name = _fn("mpx_metric_by_name", c_bool, c_char_p, POINTER(c_int))
metric_value = _fn("mpx_metric_value", c_double, POINTER(Metrics), c_int)
metrics_compute = _fn("mpx_metrics_compute", c_int, POINTER(Value), POINTER(Value), _P, POINTER(Metrics), E)

colour_name = _fn("mpx_colour_name", c_char_p, c_int)
rules_accum_option = _fn("mpx_rules_accum_option", c_char_p, c_int, POINTER(c_uint32))
colour_from_name = _fn("mpx_colour_from_name", c_int, c_char_p)
rules_new = _fn("mpx_rules_new", _P)
rules_copy = _fn("mpx_rules_copy", _P, _P)
rules_free = _fn("mpx_rules_free", None, _P)
rules_count = _fn("mpx_rules_count", c_int, _P)
rules_text = _fn("mpx_rules_text", c_char_p, _P, c_int)
rules_add = _fn("mpx_rules_add", c_int, _P, c_char_p, POINTER(Graph), E)
rules_uses_measured = _fn("mpx_rules_uses_measured", c_bool, _P, c_int)
rules_remove = _fn("mpx_rules_remove", c_int, _P, c_int, E)
plan_opts_default = _fn("mpx_plan_opts_default", None, POINTER(PlanOpts))
history_new = _fn("mpx_history_new", _P, POINTER(PlanOpts))
history_free = _fn("mpx_history_free", None, _P)
history_rules = _fn("mpx_history_rules", _P, _P)
history_opts = _fn("mpx_history_opts", POINTER(PlanOpts), _P)
history_push = _fn("mpx_history_push", c_int, _P, _P, POINTER(PlanOpts), E)
history_undo = _fn("mpx_history_undo", c_bool, _P)
history_redo = _fn("mpx_history_redo", c_bool, _P)
plan_build = _fn("mpx_plan_build", c_int, POINTER(Graph), _P, POINTER(PlanOpts), POINTER(PlanMeasured),
                 POINTER(POINTER(Plan)), E)
plan_free = _fn("mpx_plan_free", None, POINTER(Plan))
plan_to_assign = _fn("mpx_plan_to_assign", _P, POINTER(Plan), E)
plan_summary = _fn("mpx_plan_summary", c_size_t, POINTER(Plan), c_char_p, c_size_t)
plan_why = _fn("mpx_plan_why", c_size_t, POINTER(Plan), c_int, c_char_p, c_size_t)
plan_node_changed = _fn("mpx_plan_node_changed", c_bool, POINTER(Plan), c_int)

viz_opts_default = _fn("mpx_viz_opts_default", None, POINTER(VizOpts))
viz_dot = _fn("mpx_viz_dot", c_int, POINTER(Plan), POINTER(VizOpts), POINTER(c_void_p), _P, E)
viz_svg = _fn("mpx_viz_svg", c_int, POINTER(Plan), POINTER(VizOpts), POINTER(c_void_p), _P, E)
viz_plot_opts_default = _fn("mpx_viz_plot_opts_default", None, POINTER(PlotOpts))
viz_plot = _fn("mpx_viz_plot", c_int, POINTER(VizSeries), c_int, POINTER(PlotOpts), POINTER(c_void_p), E)
viz_html = _fn("mpx_viz_html", c_int, POINTER(VizPage), POINTER(c_void_p), _P, E)
export_onnx = _fn("mpx_export_onnx", c_int, POINTER(Plan), c_char_p, c_bool, c_bool, _P, POINTER(ExportSummary), E)

libc = ctypes.CDLL(None)
free = libc.free
free.restype = None
free.argtypes = [c_void_p]

STATUS_CANCELLED = 9  # MPX_E_CANCELLED

numerics_init()


def metric_names():
    """The metric table (numerics/metrics.def), in its order."""
    names = []
    while True:
        info = metric_info_of(len(names))
        if not info:
            return names
        names.append(info[0].decode())


def take_text(ptr):
    """A malloc'ed C string from a viz writer, as str; freed."""
    try:
        return ctypes.string_at(ptr.value).decode("utf-8")
    finally:
        free(ptr)

# ---- explore/ (explore/mpx_explore.h): conditions and search ------------------

COND_MAX = 16  # MPX_COND_MAX


class Clause(Structure):  # mpx_clause
    _fields_ = [("fig", c_char * 512), ("num", c_char * 64), ("op", c_int), ("want", c_double)]


class Cond(Structure):  # mpx_cond
    _fields_ = [("n", c_int), ("c", Clause * COND_MAX), ("text", c_char * 1024)]


class SearchProgress(Structure):  # mpx_search_progress
    _fields_ = [("fig", c_char_p), ("n_evals", c_int), ("have_best", c_bool), ("best_k", c_int),
                ("best_got0", c_double), ("best_low_cost_pct", c_double), ("left_ms", c_double)]


class SearchOpts(Structure):  # mpx_search_opts
    _fields_ = [("method", c_int), ("max_evals", c_int), ("max_ms", c_double), ("log", c_bool)]


class SearchResult(Structure):  # mpx_search_result
    _fields_ = [("end", c_int), ("set", POINTER(c_bool)), ("k", c_int), ("got", POINTER(c_double)),
                ("low_macs_pct", c_double), ("low_cost_pct", c_double), ("n_cand", c_int), ("cand", POINTER(c_int)),
                ("n_evals", c_int), ("n_unchanged", c_int), ("ms", c_double)]


# The host's callbacks (mpx_explore_host); pointers the package only passes
# on are c_void_p.
HOST_PLAN = CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(PlanOpts), POINTER(POINTER(Plan)), E)
HOST_RUN = CFUNCTYPE(c_int, c_void_p, POINTER(Plan), c_bool, c_bool, c_void_p, c_void_p, POINTER(POINTER(Compare)), E)
HOST_UNDO = CFUNCTYPE(None, c_void_p)
HOST_PROGRESS = CFUNCTYPE(None, c_void_p, POINTER(SearchProgress))
HOST_POINT = CFUNCTYPE(None, c_void_p, c_void_p, c_int)
HOST_CANCELLED = CFUNCTYPE(c_bool, c_void_p)


class ExploreHost(Structure):  # mpx_explore_host
    _fields_ = [("ctx", c_void_p), ("plan", HOST_PLAN), ("run", HOST_RUN), ("undo", HOST_UNDO),
                ("progress", HOST_PROGRESS), ("point", HOST_POINT), ("cancelled", HOST_CANCELLED),
                ("eval", c_void_p), ("eval_ctx", c_void_p)]


SEARCH_METHODS = ("auto", "greedy", "bisect", "sensitivity")  # mpx_search_method's order (checked on load)

cond_parse = _fn("mpx_cond_parse", c_int, c_char_p, c_int, POINTER(c_char_p), POINTER(Cond), E)
cond_needs_run = _fn("mpx_cond_needs_run", c_bool, POINTER(Cond))
cond_output_ambiguity = _fn("mpx_cond_output_ambiguity", c_char_p, POINTER(Graph), POINTER(Cond))
figure_check = _fn("mpx_figure_check", c_int, POINTER(Graph), c_char_p, E)
search_method_name = _fn("mpx_search_method_name", c_char_p, c_int)
search_end_name = _fn("mpx_search_end_name", c_char_p, c_int)
search_new = _fn("mpx_search_new", c_int, POINTER(Graph), POINTER(Plan), _P, POINTER(Cond), POINTER(SearchOpts),
                 POINTER(ExploreHost), POINTER(c_void_p), E)
search_run = _fn("mpx_search_run", c_int, _P, POINTER(SearchResult), E)
search_get_result = _fn("mpx_search_get_result", None, _P, c_int, POINTER(SearchResult))
search_rules = _fn("mpx_search_rules", c_int, _P, POINTER(c_bool), c_bool, c_int, POINTER(c_void_p), E)
search_json = _fn("mpx_search_json", c_void_p, _P, POINTER(SearchResult), c_char_p, c_bool, c_void_p)
search_free = _fn("mpx_search_free", None, _P)
compare_cache_undo = _fn("mpx_compare_cache_undo", c_bool, _P)

for _k, _m in enumerate(SEARCH_METHODS):
    if search_method_name(_k).decode() != _m:
        raise ImportError("libmpx's search methods are not the package's (%s)" % LIBRARY)


class FigureCtx(Structure):  # mpx_figure_ctx
    _fields_ = [("plan", c_void_p), ("cmp", c_void_p), ("local", c_bool), ("eval", c_void_p), ("eval_ctx", c_void_p),
                ("has_stat", c_bool), ("stat", c_int), ("stat_k", c_int)]


figure_read = _fn("mpx_figure_read", c_int, POINTER(FigureCtx), c_char_p, POINTER(c_double), E)
figure_needs_run = _fn("mpx_figure_needs_run", c_bool, c_char_p)
SEARCH_ENDS = ("done", "no_plan", "max_evals", "time", "interrupted", "failed")  # mpx_search_end's order
for _k, _m in enumerate(SEARCH_ENDS):
    if search_end_name(_k).decode() != _m:
        raise ImportError("libmpx's search endings are not the package's (%s)" % LIBRARY)

# ---- explore/'s sweep -------------------------------------------------------------

SWEEP_MAX_POINTS = 256  # MPX_SWEEP_MAX_POINTS


class SweepPoint(Structure):  # mpx_sweep_point
    _fields_ = [("done", c_bool), ("colours", c_int * COLOUR_COUNT), ("casts", c_int), ("low_pct", c_double),
                ("low_cost_pct", c_double), ("weight_bytes", c_int64), ("out_rel_l2", c_double),
                ("worst", c_char * 256), ("worst_rel_l2", c_double), ("overflow", c_int64), ("underflow", c_int64),
                ("weights_overflow", c_int64)]


class Sweep(Structure):  # mpx_sweep (a plain value: the package allocates it)
    _fields_ = [("name", c_char * 64), ("command", c_char * 2048), ("n", c_int),
                ("values", (c_char * 64) * SWEEP_MAX_POINTS), ("model", c_char * 1024), ("target", c_char * 32),
                ("pts", SweepPoint * SWEEP_MAX_POINTS), ("model_id", c_char * 48), ("session_id", c_char * 16)]


sweep_define = _fn("mpx_sweep_define", c_int, POINTER(Sweep), c_char_p, c_char_p, c_char_p, c_char_p, _P, E)
sweep_run = _fn("mpx_sweep_run", c_int, POINTER(Sweep), POINTER(Graph), _P, POINTER(PlanOpts), POINTER(ExploreHost),
                c_int, c_int, E)
sweep_json = _fn("mpx_sweep_json", c_void_p, POINTER(Sweep), c_char_p)

# Every structure above and the C one it mirrors: tests/python/abi_check.py
# holds each, field by field, to the layout the compiler gives the public
# headers (tests/abi_layout.c).
MIRRORS = {"mpx_error": Error_, "mpx_tensor": Tensor, "mpx_node": Node, "mpx_graph": Graph, "mpx_value": Value,
           "mpx_metrics": Metrics, "mpx_layer": Layer, "mpx_compare": Compare, "mpx_compare_opts": CompareOpts,
           "mpx_plan_opts": PlanOpts, "mpx_plan_measured": PlanMeasured, "mpx_plan_node": PlanNode,
           "mpx_plan_tensor": PlanTensor, "mpx_plan_cast": PlanCast, "mpx_plan_counts": PlanCounts, "mpx_plan": Plan,
           "mpx_image_opts": ImageOpts, "mpx_audio_opts": AudioOpts, "mpx_viz_opts": VizOpts,
           "mpx_viz_series": VizSeries, "mpx_viz_plot_opts": PlotOpts, "mpx_viz_page": VizPage,
           "mpx_export_summary": ExportSummary, "mpx_clause": Clause, "mpx_cond": Cond,
           "mpx_search_progress": SearchProgress, "mpx_search_opts": SearchOpts, "mpx_search_result": SearchResult,
           "mpx_explore_host": ExploreHost, "mpx_figure_ctx": FigureCtx, "mpx_sweep_point": SweepPoint,
           "mpx_sweep": Sweep}
