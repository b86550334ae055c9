/* fuzz_tensor.c - the .npy reader (from memory and from a file) and the
 * .pb readers (TensorProto; SequenceProto and OptionalProto, an optional
 * holding a sequence included): ONNX's test data and users' value files. */
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
    for (int opt = 0; path && opt < 2; opt++) {
        mpx_error_clear(&err);
        if (mpx_pb_read_container(path, opt == 1, &v, name, sizeof name, &err) == MPX_OK) mpx_value_free(&v);
    }
    return 0;
}
