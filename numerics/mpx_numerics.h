/* mpx_numerics.h - float formats, rounding, the fp32 reference kernels.
 *
 * Ownership: format descriptors are static constants (never freed). Rounding
 * routines work in place on caller-owned arrays. Kernels write into output
 * buffers the caller allocated; they allocate only scratch they free before
 * returning.
 *
 * Nothing in numerics/ prints, exits or reads stdin.
 */
#ifndef MPX_NUMERICS_H
#define MPX_NUMERICS_H

#include "mpx_graph.h"

/* ==== float formats (numerics/format.c) ==================================== */

/* ==== end float formats ===================================================== */

/* ==== reference kernels (numerics/kernels.c) ================================ */

/* ==== end reference kernels ================================================= */

#endif
