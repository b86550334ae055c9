/* mpx_export.h - a precision plan as a deployable ONNX model: the source
 * model's file edited (or, for a JSON source, a model built from the IR) so
 * that each node runs in the format the plan gives it.
 *
 * The exporter reads graph/ (the IR and the ONNX protos its loader reads,
 * walked in the loader's order: graph/onnx_walk.h), numerics/ (formats and
 * their rounding) and colour/ (the plan); nothing of viz/.
 *
 * Nothing here prints, exits or reads stdin: the function returns an
 * mpx_status and fills an mpx_error. The plan and the guard are borrowed for
 * the call only; nothing is allocated across calls. */
#ifndef MPX_EXPORT_H
#define MPX_EXPORT_H

#include "mpx_colour.h"
#include "mpx_graph.h"
#include "mpx_numerics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What export wrote, for the one-line summary and --json. Names are lists
 * "a, b, c" cut short with ", ..." when long; the counts are complete. */
typedef struct mpx_export_summary {
    int nodes;                 /* nodes in the written graphs (If branches too), Casts included */
    int casts;                 /* Cast nodes added (the plan's casts) */
    int casts_retyped;         /* the model's own float Casts whose `to` changed */
    int weights;               /* (constant, format) conversions written */
    int64_t weight_elems;      /* their elements */
    int64_t bytes_before;      /* size of the source model */
    int64_t bytes_after;       /* size of the written file */
    int opset_before, opset;   /* default-domain opset read and written */
    int upgraded;              /* nodes rewritten to the raised opset's form (Clip, Slice, Squeeze...) */
    int n_overflow;            /* converted weights with values beyond the format's range */
    char overflow[256];
    int n_flushed;             /* converted weights with non-zero values flushed to zero */
    char flushed[256];
    int n_kept;                /* float parameters of low nodes kept as declared (Resize scales ...) */
    char kept[256];
    int n_accum_options;       /* nodes whose accum rule has options (bias-first, round-sum), which
                                * ONNX cannot express: the file does not carry them */
    char accum_options[256];   /* "node (option+option)", ... */
    int64_t external_bytes;    /* bytes written to the external data file (0: none) */
    char external[1100];       /* its path ("" when the weights are inline) */
    const mpx_format *target;
    const mpx_format *accum;   /* the accumulation the plan emulates (metadata mpx.accumulate) */
    int accum_block;
    bool keep_io;
} mpx_export_summary;

/* Write plan p (of a model loaded from .onnx or .json) to path as an ONNX
 * model. An .onnx source is re-read and edited, so everything mpx's IR does
 * not carry (metadata, doc strings, value_info, attributes) is kept; a JSON
 * source is written from the IR. Weights read by low nodes are stored in the
 * format the plan gives them (rounded by mpx_format_encode, the emulation's
 * rounding); a Cast node per plan cast; the model's float Casts retyped; the
 * default-domain opset raised where a format needs it; the accumulation
 * written to metadata and the low nodes' doc strings.
 * Refused (nothing written): no plan, tf32 (no ONNX type), the source's own
 * path, an existing file without force, a folder that does not exist, an
 * opset raise across a change of one of the model's ops. The file is written
 * to a temporary name in the same folder and renamed, so a failure leaves
 * no file; guard (may be NULL) names files no write may replace, besides
 * the loaded model and its external data, which are always refused.
 * Weights go to external data, the file "<path>.data" beside the
 * model (ONNX's external data: relative location, offset, length), when the
 * model would pass protobuf's 2 GB limit or when external is set; that file
 * is written the same way, before the model, and removed if the model's
 * write fails. sum may be NULL. */
mpx_status mpx_export_onnx(const mpx_plan *p, const char *path, bool force, bool external,
                           const mpx_file_guard *guard, mpx_export_summary *sum, mpx_error *err);

#ifdef __cplusplus
}
#endif

#endif
