/* version.c - the library's version, from the project version (CMake's
 * project(... VERSION ...), the one place versions come from). */
#include "mpx_graph.h"

const char *mpx_version(void) { return MPX_LIB_VERSION; }
