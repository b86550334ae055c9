/* fuzz_npz.c - .npz archives (libzip, then the .npy reader per member) and
 * the sniffing of data files by content. */
#include "fuzz.h"
#include "mpx_numerics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size, ".npz");
    if (!path) return 0;
    (void)mpx_data_kind(path);
    mpx_npz z;
    mpx_error err;
    mpx_error_clear(&err);
    if (mpx_npz_read(path, &z, &err) == MPX_OK) mpx_npz_free(&z);
    return 0;
}
