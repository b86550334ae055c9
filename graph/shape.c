#include "mpx_graph.h"
