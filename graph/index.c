/* index.c - index arithmetic that shape inference (graph/) and the kernels
 * (numerics/) both need, written once so a tensor's inferred shape and its
 * computed value cannot disagree. Declared in mpx_graph.h. */
#include "mpx_graph.h"

#include <stdlib.h>

int64_t mpx_slice_axis(int64_t d, int64_t s, int64_t e, int64_t step, int64_t *start) {
    if (s < 0) s = s <= -d ? 0 : s + d;
    if (e < 0) e = e < -d ? -1 : e + d;
    int64_t len;
    if (step > 0) {
        s = s > d ? d : s;
        e = e < 0 ? 0 : e > d ? d : e;
        len = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
        if (d == 0) {
            *start = 0;
            return 0;
        }
        s = s > d - 1 ? d - 1 : s;
        e = e > d - 1 ? d - 1 : e;
        int64_t ns = step < -INT64_MAX ? INT64_MAX : -step;
        len = s > e ? (s - e - 1) / ns + 1 : 0;
    }
    *start = s;
    return len;
}

int64_t mpx_shape_op_range(const mpx_node *n, int rank, int64_t *start) {
    int64_t r = rank;
    int64_t s = mpx_node_attr_int(n, "start", 0), e = mpx_node_attr_int(n, "end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    *start = s;
    return e > s ? e - s : 0;
}

int mpx_dims_parse(const char *s, int64_t *dims) {
    int rank = 0;
    while (*s) {
        if (rank == MPX_MAX_RANK) return -1;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0) return -1;
        dims[rank++] = v;
        s = end;
        if (*s == 'x') s++;
        else if (*s) return -1;
    }
    return rank;
}

int64_t mpx_bcast_dim(int64_t a, int64_t b) {
    if (a == 1) return b;
    if (b == 1 || a == b) return a;
    if (a < 0) return b < 0 ? -1 : b;
    if (b < 0) return a;
    return MPX_BCAST_NO;
}
