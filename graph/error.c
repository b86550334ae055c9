/* error.c - the error struct every library call fills. */
#include "mpx_graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void mpx_error_clear(mpx_error *err) {
    if (err) memset(err, 0, sizeof *err);
}

static void vset(mpx_error *err, mpx_status st, const char *file, int line, int col,
                 const char *fmt, va_list ap) {
    err->status = st;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    err->line = line;
    err->column = col;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

mpx_status mpx_error_set(mpx_error *err, mpx_status st, const char *fmt, ...) {
    if (!err) return st;
    va_list ap;
    va_start(ap, fmt);
    vset(err, st, NULL, 0, 0, fmt, ap);
    va_end(ap);
    return st;
}

mpx_status mpx_error_at(mpx_error *err, mpx_status st, const char *file, int line,
                        int column, const char *fmt, ...) {
    if (!err) return st;
    va_list ap;
    va_start(ap, fmt);
    vset(err, st, file, line, column, fmt, ap);
    va_end(ap);
    return st;
}

mpx_status mpx_error_vnode(mpx_error *err, mpx_status st, const char *file,
                           const struct mpx_node *node, const char *fmt, va_list ap) {
    if (!err) return st;
    char msg[sizeof err->msg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (node)
        return mpx_error_at(err, st, file, 0, 0, "node \"%s\" (%s): %s", node->name, node->op_type, msg);
    return mpx_error_at(err, st, file, 0, 0, "%s", msg);
}

const char *mpx_error_format(const mpx_error *err, char *buf, size_t n) {
    if (!buf || n == 0) return buf;
    if (!err) {
        buf[0] = '\0';
        return buf;
    }
    if (err->file[0] && err->line > 0 && err->column > 0)
        snprintf(buf, n, "%s:%d:%d: %s", err->file, err->line, err->column, err->msg);
    else if (err->file[0] && err->line > 0)
        snprintf(buf, n, "%s:%d: %s", err->file, err->line, err->msg);
    else if (err->file[0])
        snprintf(buf, n, "%s: %s", err->file, err->msg);
    else
        snprintf(buf, n, "%s", err->msg);
    return buf;
}

const char *mpx_status_name(mpx_status st) {
    switch (st) {
    case MPX_OK: return "ok";
    case MPX_E_IO: return "i/o error";
    case MPX_E_PARSE: return "parse error";
    case MPX_E_INVALID: return "invalid model";
    case MPX_E_UNSUPPORTED: return "unsupported";
    case MPX_E_LIMIT: return "limit exceeded";
    case MPX_E_NOMEM: return "out of memory";
    case MPX_E_SHAPE: return "shape error";
    case MPX_E_ARG: return "bad argument";
    case MPX_E_CANCELLED: return "cancelled";
    case MPX_E_ASSERT: return "assertion failed";
    }
    return "unknown status";
}
