/* json_internal.h - what the JSON loader's files share (graph/ only):
 * json_read.c reads fields, numbers and shapes with messages naming the JSON
 * path; json_values.c decodes tensor values (data, side files, seeded init);
 * json_load.c reads attributes, sections and the file. The context is owned
 * by mpx_graph_load_json_text for one load. */
#ifndef MPX_JSON_INTERNAL_H
#define MPX_JSON_INTERNAL_H

#include "graph_internal.h"

#include <cjson/cJSON.h>

typedef struct numinfo {
    int64_t i;     /* exact value when !is_float && i_ok */
    bool is_float; /* spelled with '.', 'e' or 'E' */
    bool i_ok;     /* integer spelling that fits int64 */
} numinfo;

typedef struct mpx_json_ctx {
    const char *file; /* names the model in messages */
    const char *dir;  /* folder side files are relative to; NULL refuses them */
    mpx_graph *g;
    mpx_error *err;
    numinfo *nums;
    int n_nums;
    char where[512]; /* JSON path of what is being read, for messages */
    int64_t init_bytes; /* bytes of "init"-generated values so far (MPX_JSON_INIT_MAX) */
} mpx_json_ctx;

/* The most bytes (as held: fp32 or int64 per element) that "init" may
 * generate in one model. "data" is bounded by the file's own size and "file"
 * by the side file's, but "init" by nothing but the shape, so a few-byte
 * shape could ask for gigabytes (libFuzzer found one: three tensors, 2.7 GB);
 * 1 GiB of generated weights is more than any hand-written model needs. */
#define MPX_JSON_INIT_MAX ((int64_t)1 << 30)

/* json_read.c */
mpx_status mpx_json_bad(mpx_json_ctx *c, mpx_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void mpx_json_set_where(mpx_json_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends to the path; the caller restores the saved copy afterwards. */
void mpx_json_push_where(mpx_json_ctx *c, const char *suffix);
/* Number tokens of the text in document order (out NULL: count only), and
 * cJSON numbers' valueint set to their index in that table. */
int mpx_json_scan_numbers(const char *s, size_t len, numinfo *out);
void mpx_json_number_index(cJSON *it, int *k);
const numinfo *mpx_json_num_of(const mpx_json_ctx *c, const cJSON *it);
bool mpx_json_spelled_float(const mpx_json_ctx *c, const cJSON *it);
/* An integer where one is expected: 3 and 3.0 both count; 2.5 and 1e300 do not. */
bool mpx_json_as_int64(const mpx_json_ctx *c, const cJSON *it, int64_t *out);
const char *mpx_json_kind_name(const cJSON *v);
const cJSON *mpx_json_field(const cJSON *obj, const char *key);
mpx_status mpx_json_check_keys(mpx_json_ctx *c, const cJSON *obj, const char *const *allowed,
                               const char *const *also);
mpx_status mpx_json_get_str(mpx_json_ctx *c, const cJSON *obj, const char *key, bool required,
                            const char *dflt, const char **out);
mpx_status mpx_json_get_num(mpx_json_ctx *c, const cJSON *obj, const char *key, double dflt,
                            double *out);
char *mpx_json_dup(mpx_json_ctx *c, const char *s);
mpx_status mpx_json_read_shape(mpx_json_ctx *c, const cJSON *arr, bool allow_sym, int *rank,
                               int64_t *dims, const char **sym);

/* json_values.c: a tensor's value ("data", "file" or "init") into t; named:
 * an initializer (its name and dtype come from obj). */
mpx_status mpx_json_read_value(mpx_json_ctx *c, const cJSON *obj, mpx_tensor *t, bool named);

#endif
