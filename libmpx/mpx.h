/* mpx.h - libmpx, the library under the mpx program: one include for a
 * client (a CI system, a model server's test suite, a language binding).
 * Build with `pkg-config --cflags --libs mpx`.
 *
 * The library is five modules, each with its own header, included here in
 * the order they build on each other:
 *
 *   mpx_graph.h     the model: load ONNX or mpx JSON (mpx_graph_load), bind
 *                   input shapes (mpx_graph_bind_input), infer shapes and
 *                   costs (mpx_graph_infer); errors as mpx_error with the
 *                   file, line or node named; did-you-mean for names.
 *   mpx_numerics.h  the formats (mpx_format_by_name: fp16 bf16 tf32 fp8e4m3
 *                   fp8e4m3nan fp8e5m2), exact rounding, values and .npy /
 *                   image / audio / .npz readers, the kernels, the executor
 *                   and mpx_compare_run: the fp32 reference and a candidate
 *                   side by side, per-layer metrics (numerics/metrics.def).
 *   mpx_colour.h    rules (mpx_rules_add: the `colour ...` language of the
 *                   program), the precision plan (mpx_plan_build) with its
 *                   casts and counts, and the assignment a run uses
 *                   (mpx_plan_to_assign).
 *   mpx_explore.h   figures and conditions (mpx_cond_parse, mpx_cond_eval:
 *                   what `assert` checks), search (mpx_search_run: the nodes
 *                   to keep fp32 so that a condition holds), sweep and
 *                   ranges, driven through callbacks the client implements
 *                   (mpx_explore_host: plan, run, undo, progress, cancel).
 *   mpx_data.h      data sets (mpx_dataset_open: the samples of an .npz, a
 *                   folder or a glob; mpx_dataset_inputs: one sample's
 *                   input values) and the merge of a sharded run's report
 *                   JSONs into one comparison (mpx_shards_compare).
 *   mpx_viz.h       DOT, SVG, the error plot and the review page.
 *   mpx_export.h    the plan exported as an ONNX model (mpx_export_onnx).
 *
 * A minimal program (examples/client.c is this, complete and tested):
 *
 *   mpx_error err;
 *   mpx_graph *g = mpx_graph_load("model.onnx", &err);
 *   mpx_graph_bind_input(g, "x", 4, (int64_t[]){1, 3, 224, 224}, &err);
 *   mpx_graph_infer(g, &err);
 *   mpx_rules *r = mpx_rules_new();
 *   mpx_rules_add(r, "colour Conv green when macs >= 1M else gray", g, &err);
 *   mpx_plan_opts o; mpx_plan_opts_default(&o);       // target fp16, keep-io
 *   mpx_plan *p; mpx_plan_build(g, r, &o, NULL, &p, &err);
 *   mpx_assign *a = mpx_plan_to_assign(p, &err);
 *   mpx_value in[1];  ... mpx_value_alloc(&in[0], MPX_DT_FLOAT, ...) and fill
 *   mpx_compare *c; mpx_compare_run(g, a, in, NULL, &c, &err);
 *   ... c->layers[i].m.rel_l2, c->layers[i].m.overflow for each layer
 *   mpx_export_onnx(p, "model_fp16.onnx", false, false, NULL, NULL, &err);
 *
 * Every call that can fail returns mpx_status (MPX_OK is 0) and fills err
 * (mpx_error_format makes it one line); nothing in the library prints,
 * reads input or exits. Ownership is stated at the top of each header:
 * graphs own their tensors and nodes (one arena, mpx_graph_free), plans and
 * comparisons are freed with their _free function, values with
 * mpx_value_free. libmpx.so exports exactly the functions and variables
 * these headers declare (nothing else is API); the version is
 * mpx_version() (the program's `mpx --version` shows the same). */
#ifndef MPX_H
#define MPX_H

#include "mpx_graph.h"
#include "mpx_numerics.h"
#include "mpx_colour.h"
#include "mpx_explore.h"
#include "mpx_data.h"
#include "mpx_viz.h"
#include "mpx_export.h"

#endif
