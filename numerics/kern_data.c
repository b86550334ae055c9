/* kern_data.c - see kernels.def for the ops it implements. */
#include "kern_internal.h"
