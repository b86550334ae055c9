/* json_read.c - reading the JSON model's fields, numbers and shapes, with
 * messages that name the file and the JSON path (json_internal.h). */
#include "json_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mpx_status mpx_json_bad(mpx_json_ctx *c, mpx_status st, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->where[0]) mpx_error_at(c->err, st, c->file, 0, 0, "%s: %s", c->where, msg);
    else mpx_error_at(c->err, st, c->file, 0, 0, "%s", msg);
    return st;
}

void mpx_json_set_where(mpx_json_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->where, sizeof c->where, fmt, ap);
    va_end(ap);
}

/* Appends to the path; the caller restores the saved copy afterwards. */
void mpx_json_push_where(mpx_json_ctx *c, const char *suffix) {
    size_t n = strlen(c->where);
    snprintf(c->where + n, sizeof c->where - n, "%s", suffix);
}

/* ---- number spellings ------------------------------------------------------ */

/* Same token rule as cJSON's parse_number: in valid JSON, every number starts
 * with '-' or a digit outside a string and runs over [0-9+-.eE]. */
int mpx_json_scan_numbers(const char *s, size_t len, numinfo *out) {
    int n = 0;
    for (size_t i = 0; i < len;) {
        char ch = s[i];
        if (ch == '"') {
            for (i++; i < len && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
            i++;
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            size_t b = i;
            bool fl = false;
            while (i < len && s[i] != '\0' && strchr("0123456789+-.eE", s[i])) {
                fl |= s[i] == '.' || s[i] == 'e' || s[i] == 'E';
                i++;
            }
            if (out) {
                char tok[72];
                size_t tl = i - b < sizeof tok - 1 ? i - b : sizeof tok - 1;
                memcpy(tok, s + b, tl);
                tok[tl] = '\0';
                out[n].is_float = fl;
                out[n].i_ok = false;
                if (!fl) {
                    errno = 0;
                    char *end;
                    long long v = strtoll(tok, &end, 10);
                    out[n].i_ok = errno == 0 && *end == '\0';
                    out[n].i = v;
                }
            }
            n++;
        } else {
            i++;
        }
    }
    return n;
}

void mpx_json_number_index(cJSON *it, int *k) {
    for (; it; it = it->next) {
        if (cJSON_IsNumber(it)) it->valueint = (*k)++;
        if (it->child) mpx_json_number_index(it->child, k);
    }
}

const numinfo *mpx_json_num_of(const mpx_json_ctx *c, const cJSON *it) {
    return it->valueint >= 0 && it->valueint < c->n_nums ? &c->nums[it->valueint] : NULL;
}

bool mpx_json_spelled_float(const mpx_json_ctx *c, const cJSON *it) {
    const numinfo *ni = mpx_json_num_of(c, it);
    return ni ? ni->is_float : it->valuedouble != floor(it->valuedouble);
}

/* An integer where one is expected: 3 and 3.0 both count; 2.5 and 1e300 do not. */
bool mpx_json_as_int64(const mpx_json_ctx *c, const cJSON *it, int64_t *out) {
    if (!cJSON_IsNumber(it)) return false;
    const numinfo *ni = mpx_json_num_of(c, it);
    if (ni && !ni->is_float) {
        *out = ni->i;
        return ni->i_ok;
    }
    double v = it->valuedouble;
    if (v != floor(v) || !(fabs(v) < 9.2e18)) return false;
    *out = (int64_t)v;
    return true;
}

/* ---- small field helpers -------------------------------------------------- */

const char *mpx_json_kind_name(const cJSON *v) {
    if (!v) return "nothing";
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    return "an invalid value";
}

const cJSON *mpx_json_field(const cJSON *obj, const char *key) {
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static bool in_list(const char *s, const char *const *list) {
    for (; list && *list; list++)
        if (strcmp(s, *list) == 0) return true;
    return false;
}

/* A typo in a key ("initialisers") must not silently drop data, so unknown
 * keys are errors; keys starting with '_' are comments. */
mpx_status mpx_json_check_keys(mpx_json_ctx *c, const cJSON *obj, const char *const *allowed,
                             const char *const *also) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        const char *k = it->string ? it->string : "";
        if (k[0] == '_') continue;
        if (!in_list(k, allowed) && !in_list(k, also))
            return mpx_json_bad(c, MPX_E_INVALID, "unknown key \"%.80s\"", k);
        for (const cJSON *p = obj->child; p != it; p = p->next)
            if (p->string && strcmp(p->string, k) == 0)
                return mpx_json_bad(c, MPX_E_INVALID, "key \"%.80s\" appears twice", k);
    }
    return MPX_OK;
}

/* *out = the string, or dflt when absent (an error when required). */
mpx_status mpx_json_get_str(mpx_json_ctx *c, const cJSON *obj, const char *key, bool required,
                          const char *dflt, const char **out) {
    const cJSON *v = mpx_json_field(obj, key);
    *out = dflt;
    if (!v) return required ? mpx_json_bad(c, MPX_E_INVALID, "missing \"%s\"", key) : MPX_OK;
    if (!cJSON_IsString(v))
        return mpx_json_bad(c, MPX_E_INVALID, "\"%s\" must be a string, not %s", key, mpx_json_kind_name(v));
    *out = v->valuestring ? v->valuestring : "";
    return MPX_OK;
}

mpx_status mpx_json_get_num(mpx_json_ctx *c, const cJSON *obj, const char *key, double dflt,
                          double *out) {
    const cJSON *v = mpx_json_field(obj, key);
    *out = dflt;
    if (!v) return MPX_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return mpx_json_bad(c, MPX_E_INVALID, "\"%s\" must be a finite number", key);
    *out = v->valuedouble;
    return MPX_OK;
}

char *mpx_json_dup(mpx_json_ctx *c, const char *s) {
    return mpx_arena_strdup(c->g->arena, s);
}

/* ---- shapes ------------------------------------------------------------------ */

/* Dims are non-negative integers; with allow_sym also a string (a symbolic dim
 * such as "batch") or null (an anonymous unknown dim), both stored as -1. */
mpx_status mpx_json_read_shape(mpx_json_ctx *c, const cJSON *arr, bool allow_sym, int *rank,
                             int64_t *dims, const char **sym) {
    if (!cJSON_IsArray(arr))
        return mpx_json_bad(c, MPX_E_INVALID, "\"shape\" must be an array, not %s", mpx_json_kind_name(arr));
    int r = cJSON_GetArraySize(arr);
    if (r > MPX_MAX_RANK)
        return mpx_json_bad(c, MPX_E_UNSUPPORTED, "\"shape\" has rank %d; mpx supports up to %d", r,
                   MPX_MAX_RANK);
    int i = 0;
    for (const cJSON *d = arr->child; d; d = d->next, i++) {
        sym[i] = NULL;
        if (allow_sym && cJSON_IsString(d)) {
            dims[i] = -1;
            if (!(sym[i] = mpx_json_dup(c, d->valuestring))) return mpx_json_bad(c, MPX_E_NOMEM, "out of memory");
        } else if (allow_sym && cJSON_IsNull(d)) {
            dims[i] = -1;
        } else if (!mpx_json_as_int64(c, d, &dims[i])) {
            return mpx_json_bad(c, MPX_E_INVALID, "shape[%d] must be %s", i,
                       allow_sym ? "an integer, a name or null" : "an integer");
        } else if (dims[i] < 0) {
            return mpx_json_bad(c, MPX_E_INVALID, "shape[%d] is negative (%lld)%s", i,
                       (long long)dims[i], allow_sym ? "; write null or a name for an unknown dim" : "");
        }
    }
    *rank = r;
    int64_t n;
    mpx_error sub;
    if (mpx_dims_check(r, dims, &n, &sub) != MPX_OK)
        return mpx_json_bad(c, MPX_E_LIMIT, "\"shape\": %s", sub.msg);
    return MPX_OK;
}
