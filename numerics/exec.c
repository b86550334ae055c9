/* exec.c - the executor (to be written). */
#include "kern_internal.h"
