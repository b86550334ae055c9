/* tensor_io.c - .npy and .pb tensor files (to be written). */
#include "mpx_numerics.h"
