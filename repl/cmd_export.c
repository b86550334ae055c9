/* cmd_export.c - `export <file.onnx> [--force] [--external] [--json [<file>]]`: the
 * current plan written as a mixed-precision ONNX model (export/, mpx_export.h,
 * does the work; this file parses, calls and says what was written). */
#include "repl_internal.h"
#include "mpx_export.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *mb(int64_t bytes, char *buf, size_t n) {
    if (bytes < 1000000) snprintf(buf, n, "%.1f KB", (double)bytes / 1e3);
    else snprintf(buf, n, "%.1f MB", (double)bytes / 1e6);
    return buf;
}

/* The summary line: figures, then what ONNX cannot say and what the
 * conversion damaged, so nothing is silently dropped. */
static void print_line(FILE *out, const char *path, const mpx_export_summary *x, double ms) {
    char a[32], b[32], h[32];
    fprintf(out, "exported %s: %d nodes, %d Cast%s", path, x->nodes, x->casts, x->casts == 1 ? "" : "s");
    if (x->casts_retyped) fprintf(out, " (+%d of the model's retyped)", x->casts_retyped);
    fprintf(out, ", %d weight%s converted (%s values", x->weights, x->weights == 1 ? "" : "s",
            mpx_count_str(x->weight_elems, h, sizeof h));
    if (x->bytes_before >= 0)
        fprintf(out, "; file %s -> %s", mb(x->bytes_before, a, sizeof a), mb(x->bytes_after, b, sizeof b));
    else
        fprintf(out, "; file %s", mb(x->bytes_after, b, sizeof b));
    fprintf(out, "), opset %d", x->opset);
    if (x->opset != x->opset_before && x->upgraded)
        fprintf(out, " (raised from %d; %d node%s rewritten to its form)", x->opset_before, x->upgraded,
                x->upgraded == 1 ? "" : "s");
    else if (x->opset != x->opset_before)
        fprintf(out, " (raised from %d)", x->opset_before);
    fprintf(out, ", keep-io %s", x->keep_io ? "on" : "off");
    fprintf(out, "; accumulation not expressible in ONNX (plan's default: %s", mpx_format_name(x->accum));
    if (x->accum_block > 0) fprintf(out, " block %d", x->accum_block);
    fprintf(out, ", in metadata mpx.accumulate and each low node's doc string; the runtime decides)");
    if (x->n_accum_options)
        fprintf(out, "; accum options not expressible in ONNX, not in the file: %d node%s: %s", x->n_accum_options,
                x->n_accum_options == 1 ? "" : "s", x->accum_options);
    if (x->n_overflow) fprintf(out, "; %d weight%s overflow %s: %s", x->n_overflow, x->n_overflow == 1 ? "" : "s",
                               x->target->name, x->overflow);
    if (x->n_flushed) fprintf(out, "; %d weight%s with values flushed to zero: %s", x->n_flushed,
                              x->n_flushed == 1 ? "" : "s", x->flushed);
    if (x->n_kept) fprintf(out, "; kept as declared (parameters, never converted): %s", x->kept);
    if (x->external_bytes)
        fprintf(out, "; weights as external data in %s (%s)", x->external,
                mb(x->external_bytes, a, sizeof a));
    fprintf(out, " (%.1f ms)\n", ms);
}

static char *json_text(const char *path, const mpx_export_summary *x) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", path);
    cJSON_AddStringToObject(o, "target", x->target->name);
    cJSON_AddBoolToObject(o, "keep_io", x->keep_io);
    cJSON_AddNumberToObject(o, "nodes", x->nodes);
    cJSON_AddNumberToObject(o, "casts", x->casts);
    cJSON_AddNumberToObject(o, "casts_retyped", x->casts_retyped);
    cJSON_AddNumberToObject(o, "weights_converted", x->weights);
    cJSON_AddNumberToObject(o, "weight_values", (double)x->weight_elems);
    if (x->bytes_before >= 0) cJSON_AddNumberToObject(o, "bytes_before", (double)x->bytes_before);
    else cJSON_AddNullToObject(o, "bytes_before");
    cJSON_AddNumberToObject(o, "bytes_after", (double)x->bytes_after);
    cJSON_AddNumberToObject(o, "opset_before", x->opset_before);
    cJSON_AddNumberToObject(o, "nodes_upgraded", x->upgraded);
    cJSON_AddNumberToObject(o, "opset", x->opset);
    cJSON_AddStringToObject(o, "accumulate", mpx_format_name(x->accum));
    cJSON_AddNumberToObject(o, "accumulate_block", x->accum_block);
    cJSON_AddNumberToObject(o, "weights_overflow", x->n_overflow);
    cJSON_AddStringToObject(o, "weights_overflow_names", x->overflow);
    cJSON_AddNumberToObject(o, "weights_flushed", x->n_flushed);
    cJSON_AddStringToObject(o, "weights_flushed_names", x->flushed);
    if (x->external_bytes) {
        cJSON_AddStringToObject(o, "external_data", x->external);
        cJSON_AddNumberToObject(o, "external_bytes", (double)x->external_bytes);
    } else cJSON_AddNullToObject(o, "external_data");
    cJSON_AddNumberToObject(o, "kept_parameters", x->n_kept);
    cJSON_AddStringToObject(o, "kept_parameters_names", x->kept);
    cJSON_AddNumberToObject(o, "accum_options_nodes", x->n_accum_options);
    cJSON_AddStringToObject(o, "accum_options_names", x->accum_options);
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    return text;
}

mpx_status repl_cmd_export(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    const char *file = args->word[0], *json_file = args->opt[EXPORT_JSON].text;
    bool force = args->opt[EXPORT_FORCE].given, json = args->opt[EXPORT_JSON].given;
    bool external = args->opt[EXPORT_EXTERNAL].given;
    mpx_status st = repl_need_model(s, err);
    if (st) return st;
    /* Every target checked before anything is written: a --json file that
     * cannot be written must not leave the model written. */
    if (json_file && (st = repl_make_parent(s, json_file, err))) return st;
    /* Folders as every command that writes makes them (below the current
     * folder only); an export refused after that takes them back out. */
    char made[1024] = "";
    if (file && (st = repl_make_parent_noted(s, file, made, sizeof made, err))) return st;
    /* --json onto the model or its external data would leave one of them
     * lost and the command said to have written both */
    char data_path[4096 + 8];
    snprintf(data_path, sizeof data_path, "%s.data", file ? file : "");
    const char *targets[3] = {file, json_file, external && file ? data_path : NULL};
    if ((st = repl_distinct_targets(targets, 3, err))) {
        repl_unmake_parent(file, made);
        return st;
    }
    mpx_export_summary x;
    double t0 = repl_now_ms();
    st = mpx_export_onnx(s->plan, file, force, external, s->guard, &x, err);
    double ms = repl_now_ms() - t0;
    if (st) {
        repl_unmake_parent(file, made);
        return st;
    }
    /* the summary and its warnings (weights that overflow, options the
     * file cannot hold) on stderr whether or not --json is asked too */
    print_line(s->info, file, &x, ms);
    if (json) {
        char *text = json_text(file, &x);
        if (!text) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        return repl_emit(s, text, json_file, err);
    }
    return MPX_OK;
}
