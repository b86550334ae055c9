/* fuzz_image.c - PNG and JPEG decoding (libpng, libjpeg-turbo) and mpx's
 * arithmetic after it: as is, resized, and gray. */
#include "fuzz.h"
#include "mpx_numerics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size, ".img");
    if (!path) return 0;
    static const int64_t rgb[4] = {1, 3, -1, -1}, gray[4] = {1, 1, -1, -1};
    mpx_image_opts o;
    mpx_image_opts_default(&o);
    mpx_error err;
    mpx_value v;
    mpx_error_clear(&err);
    if (mpx_image_read(path, &o, 4, rgb, &v, &err) == MPX_OK) {
        mpx_value_free(&v);
        /* Decoded once: resize (up and down) and gray only for images that
         * decode, so the fuzzer spends its time in the decoders. */
        o.height = 7, o.width = 5, o.layout = MPX_LAYOUT_NHWC;
        if (mpx_image_read(path, &o, 4, NULL, &v, &err) == MPX_OK) mpx_value_free(&v);
        o.height = 0, o.width = 0, o.layout = MPX_LAYOUT_AUTO;
        if (mpx_image_read(path, &o, 4, gray, &v, &err) == MPX_OK) mpx_value_free(&v);
    }
    return 0;
}
