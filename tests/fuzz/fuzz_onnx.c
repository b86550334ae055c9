/* fuzz_onnx.c - the ONNX loader, then binding and shape inference. */
#include "fuzz.h"
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mpx_error err;
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_onnx_buffer(data, size, "fuzz.onnx", NULL, &err);
    if (g) fuzz_bind_infer(g);
    mpx_graph_free(g);
    return 0;
}
