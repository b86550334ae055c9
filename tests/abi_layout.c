/* abi_layout.c - the layout of every C structure python/mpx mirrors with
 * ctypes (python/mpx/_lib.py), as the compiler lays it out from the public
 * headers: the python_abi test (python/abi_check.py) holds each mirror to
 * it. A row per structure: S(WHOLE) where the package allocates it or
 * indexes arrays of it (the sizes must match too), S(PREFIX) where it reads
 * one through a pointer, up to the last field it needs; then F(field) for
 * every field the mirror declares, in order. So a field a header gains,
 * loses or moves before a mirrored one changes an offset here, and a field
 * a mirror loses or adds is missing on one side: both fail the test.
 * Output: "struct <name> <size> whole|prefix", "field <struct> <name>
 * <offset> <size>", a line each. */
#include "mpx.h"

#include <stddef.h>
#include <stdio.h>

enum { PREFIX, WHOLE };

static void s_row(const char *name, size_t size, int whole) {
    printf("struct %s %zu %s\n", name, size, whole ? "whole" : "prefix");
}

static void f_row(const char *s, const char *name, size_t offset, size_t size) {
    printf("field %s %s %zu %zu\n", s, name, offset, size);
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define S(whole) s_row(STR(T), sizeof(T), whole);
#define F(f) f_row(STR(T), #f, offsetof(T, f), sizeof(((T *)0)->f));

int main(void) {
#define T mpx_error
    S(WHOLE) F(status) F(file) F(line) F(column) F(msg)
#undef T
#define T mpx_tensor
    S(PREFIX) F(name) F(index) F(dtype) F(flags) F(decl_rank) F(decl_dims) F(decl_sym) F(rank) F(dims) F(sym)
    F(nelem) F(f32) F(i64) F(f64)
#undef T
#define T mpx_node
    S(PREFIX) F(name) F(index) F(op) F(op_type) F(domain) F(opset) F(n_inputs) F(inputs) F(n_outputs) F(outputs)
#undef T
#define T mpx_graph
    S(PREFIX) F(arena) F(path) F(name) F(producer) F(ir_version) F(opset) F(opset_file) F(split_node)
    F(split_op) F(n_tensors) F(tensors) F(n_nodes) F(nodes) F(n_inputs) F(inputs) F(n_outputs) F(outputs)
#undef T
#define T mpx_value
    S(WHOLE) F(dtype) F(rank) F(dims) F(n) F(f) F(i) F(d) F(borrowed) F(mapped) F(is_seq) F(is_opt) F(seq)
#undef T
#define T mpx_metrics
    S(WHOLE) F(n) F(max_abs) F(mean_abs) F(rel_l2) F(cos) F(sqnr_db) F(overflow) F(underflow) F(subnormal)
    F(absmax_ref)
#undef T
#define T mpx_layer
    S(WHOLE) F(tensor) F(node) F(fmt) F(m) F(has_local) F(local) F(unmeasured)
#undef T
#define T mpx_compare
    S(WHOLE) F(g) F(n_layers) F(layers) F(ref) F(cand) F(ms_ref) F(ms_cand) F(ms_local) F(ms_metrics)
    F(peak_bytes) F(n_run) F(incremental) F(samples) F(n_body) F(body) F(n_shared) F(n_values)
#undef T
#define T mpx_compare_opts
    S(WHOLE) F(local) F(keep) F(cancel) F(progress) F(progress_ctx) F(threads) F(cache) F(measure) F(undoable)
#undef T
#define T mpx_plan_opts
    S(WHOLE) F(target) F(keep_io) F(accum) F(accum_block)
#undef T
#define T mpx_plan_measured
    S(WHOLE) F(n_nodes) F(absmax)
#undef T
#define T mpx_plan_node
    S(WHOLE) F(dflt) F(dflt_source) F(colour) F(colour_rule) F(accum_rule) F(is_float) F(folded) F(low)
    F(compute) F(accum) F(accum_flags) F(output) F(cause) F(fused) F(fuse_rule)
#undef T
#define T mpx_plan_tensor
    S(WHOLE) F(format) F(constant)
#undef T
#define T mpx_plan_cast
    S(WHOLE) F(tensor) F(from) F(to) F(n_consumers) F(consumers)
#undef T
#define T mpx_plan_counts
    S(WHOLE) F(nodes) F(float_nodes) F(low_nodes) F(casts) F(weights_converted) F(weight_bytes_before)
    F(weight_bytes_after) F(macs_total) F(macs_low) F(macs_unknown) F(low_macs_pct) F(cost_total) F(cost_low)
    F(low_cost_pct)
#undef T
#define T mpx_plan
    S(PREFIX) F(g) F(opts) F(n_nodes) F(n_tensors) F(nodes) F(tensors) F(n_casts) F(casts) F(n_weights)
    F(weights) F(n_rules) F(rule_selected) F(rule_applied) F(counts)
#undef T
#define T mpx_image_opts
    S(WHOLE) F(height) F(width) F(layout) F(channels) F(scale) F(mean) F(std)
#undef T
#define T mpx_audio_opts
    S(WHOLE) F(rate) F(length) F(scale)
#undef T
#define T mpx_viz_opts
    S(WHOLE) F(around) F(depth) F(to_cause) F(shapes) F(collapse) F(fold) F(fold_by) F(open_scope) F(cluster)
    F(weights) F(all) F(legend) F(overlay) F(overlay_local) F(rules) F(title) F(engine)
#undef T
#define T mpx_viz_series
    S(WHOLE) F(label) F(cmp)
#undef T
#define T mpx_viz_plot_opts
    S(WHOLE) F(metric) F(local) F(marks) F(title) F(width) F(height)
#undef T
#define T mpx_viz_page
    S(WHOLE) F(plan) F(rules) F(model_path) F(series) F(n_series) F(graph) F(plot) F(sample_labels)
    F(n_sample_labels)
#undef T
#define T mpx_export_summary
    S(WHOLE) F(nodes) F(casts) F(casts_retyped) F(weights) F(weight_elems) F(bytes_before) F(bytes_after)
    F(opset_before) F(opset) F(upgraded) F(n_overflow) F(overflow) F(n_flushed) F(flushed) F(n_kept) F(kept)
    F(n_accum_options) F(accum_options) F(external_bytes) F(external) F(target) F(accum) F(accum_block)
    F(keep_io)
#undef T
#define T mpx_clause
    S(WHOLE) F(fig) F(num) F(op) F(want)
#undef T
#define T mpx_cond
    S(WHOLE) F(n) F(c) F(text)
#undef T
#define T mpx_search_progress
    S(WHOLE) F(fig) F(n_evals) F(have_best) F(best_k) F(best_got0) F(best_low_cost_pct) F(left_ms)
#undef T
#define T mpx_search_opts
    S(WHOLE) F(method) F(max_evals) F(max_ms) F(log)
#undef T
#define T mpx_search_result
    S(WHOLE) F(end) F(set) F(k) F(got) F(low_macs_pct) F(low_cost_pct) F(n_cand) F(cand) F(n_evals)
    F(n_unchanged) F(ms)
#undef T
#define T mpx_explore_host
    S(WHOLE) F(ctx) F(plan) F(run) F(undo) F(progress) F(point) F(cancelled) F(eval) F(eval_ctx)
#undef T
#define T mpx_figure_ctx
    S(WHOLE) F(plan) F(cmp) F(local) F(eval) F(eval_ctx) F(has_stat) F(stat) F(stat_k)
#undef T
#define T mpx_sweep_point
    S(WHOLE) F(done) F(colours) F(casts) F(low_pct) F(low_cost_pct) F(weight_bytes) F(out_rel_l2) F(worst)
    F(worst_rel_l2) F(overflow) F(underflow) F(weights_overflow)
#undef T
#define T mpx_sweep
    S(WHOLE) F(name) F(command) F(n) F(values) F(model) F(target) F(pts) F(model_id) F(session_id)
#undef T
    return 0;
}
