/* fuzz_tensor.c - the .npy reader (from memory and from a file) and the
 * TensorProto .pb reader: ONNX's test data and users' value files. */
#include "fuzz.h"
#include "mpx_numerics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mpx_error err;
    mpx_value v;
    mpx_error_clear(&err);
    if (mpx_npy_read_mem("fuzz.npy", data, size, &v, &err) == MPX_OK) mpx_value_free(&v);
    const char *path = fuzz_file(data, size, ".pb");
    char name[256];
    mpx_error_clear(&err);
    if (path && mpx_pb_read(path, &v, name, sizeof name, &err) == MPX_OK) mpx_value_free(&v);
    return 0;
}
