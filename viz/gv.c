/* gv.c - Graphviz plumbing for the cast graph (graph.c): sequential object
 * ids so the DOT text depends only on graph order, in-memory I/O for agwrite
 * and agread, and catching agerr's messages into mpx_error (viz prints
 * nothing). */
#include "viz_gv.h"
#include "viz_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sequential ids (see the file comment). Named objects: "cannot map", so
 * cgraph asks for an anonymous id and records the name itself. */
typedef struct { IDTYPE next; } seq_ids;

static void *ids_open(Agraph_t *g, Agdisc_t *d) {
    (void)g;
    (void)d;
    seq_ids *s = calloc(1, sizeof *s);
    if (s) s->next = 1;
    return s;
}
static long ids_map(void *state, int objtype, char *str, IDTYPE *id, int createflag) {
    (void)objtype;
    if (str || !createflag) return 0;
    seq_ids *s = state;
    *id = s->next;
    s->next += 2; /* odd, as cgraph's own anonymous ids */
    return 1;
}
static long ids_alloc(void *state, int objtype, IDTYPE id) {
    (void)state;
    (void)objtype;
    (void)id;
    return 0;
}
static void ids_free(void *state, int objtype, IDTYPE id) {
    (void)state;
    (void)objtype;
    (void)id;
}
static char *ids_print(void *state, int objtype, IDTYPE id) {
    (void)state;
    (void)objtype;
    (void)id;
    return NULL;
}
static void ids_close(void *state) { free(state); }
static void ids_register(void *state, int objtype, void *obj) {
    (void)state;
    (void)objtype;
    (void)obj;
}
Agiddisc_t vz_gv_ids = {ids_open, ids_map, ids_alloc, ids_free, ids_print, ids_close, ids_register};

/* agwrite into a vz_buf. */
static int io_put(void *chan, const char *s) {
    vz_put(chan, s);
    return ((vz_buf *)chan)->oom ? EOF : 0;
}
static int io_flush(void *chan) {
    (void)chan;
    return 0;
}
static int io_read(void *chan, char *buf, int n) {
    (void)chan;
    (void)buf;
    (void)n;
    return 0;
}
Agiodisc_t vz_gv_io = {io_read, io_put, io_flush};

/* Graphviz reports through agerr; while viz runs, messages land here instead
 * of on stderr (viz prints nothing) and the last error goes into mpx_error. */
static char gv_msg[512];
static int gv_errf(char *msg) {
    size_t n = strlen(gv_msg);
    if (n + 1 < sizeof gv_msg) snprintf(gv_msg + n, sizeof gv_msg - n, "%s", msg);
    return 0;
}
vz_gv_errs vz_gv_catch(void) {
    gv_msg[0] = '\0';
    vz_gv_errs e;
    e.f = agseterrf(gv_errf);
    e.lvl = agseterr(AGERR); /* warnings (font substitutions...) are not errors */
    agreseterrors();
    return e;
}
void vz_gv_release(vz_gv_errs e) {
    agseterrf(e.f);
    agseterr(e.lvl);
}
const char *vz_gv_last(void) {
    size_t n = strlen(gv_msg);
    while (n && (gv_msg[n - 1] == '\n' || gv_msg[n - 1] == ' ')) gv_msg[--n] = '\0';
    return gv_msg[0] ? gv_msg : "no message";
}

/* cgraph's setters take char *; every string literal passed stays unmodified. */
void vz_set(void *obj, const char *name, const char *value) {
    agsafeset(obj, (char *)name, (char *)value, (char *)"");
}
