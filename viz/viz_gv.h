/* viz_gv.h - the Graphviz plumbing gv.c gives graph.c (internal to viz/). */
#ifndef MPX_VIZ_GV_H
#define MPX_VIZ_GV_H

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

/* Object ids from a counter (odd, as cgraph's anonymous ids), not addresses. */
extern Agiddisc_t vz_gv_ids;
/* agwrite into / agread from a vz_buf held in memory. */
extern Agiodisc_t vz_gv_io;

/* While caught, Graphviz's errors are kept (vz_gv_last) instead of printed. */
typedef struct vz_gv_errs {
    agusererrf f;
    agerrlevel_t lvl;
} vz_gv_errs;
vz_gv_errs vz_gv_catch(void);
void vz_gv_release(vz_gv_errs e);
const char *vz_gv_last(void); /* the messages since vz_gv_catch, or "no message" */

/* agsafeset for string literals (cgraph's setters take char *). */
void vz_set(void *obj, const char *name, const char *value);

#endif
