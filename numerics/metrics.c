/* metrics.c - error metrics (to be written). */
#include "mpx_numerics.h"
