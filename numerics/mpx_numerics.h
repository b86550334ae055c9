/* mpx_numerics.h - the umbrella of numerics/, kept for the installed API:
 * a program using libmpx may include it for all of numerics. numerics/ is
 * four folders, each with its own public header; files inside the library
 * include only the headers they need:
 *
 *   formats/  mpx_formats.h   number formats, rounding, encodings, values
 *   readers/  mpx_readers.h   tensor files and data files (images, audio, .npz)
 *   kernels/  mpx_kernels.h   the op kernels, accumulation, start-up
 *   run/      mpx_run.h       executor, metrics, task figures, paired runs
 *
 * Nothing in numerics/ prints, exits or reads stdin. */
#ifndef MPX_NUMERICS_H
#define MPX_NUMERICS_H

#include "mpx_formats.h"
#include "mpx_readers.h"
#include "mpx_kernels.h"
#include "mpx_run.h"

#endif
