/* fuzz_audio.c - sound files (libsndfile: WAV, FLAC, OGG, AIFF...), mono
 * mixing, resampling (libsamplerate) and length. */
#include "fuzz.h"
#include "mpx_numerics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size, ".snd");
    if (!path) return 0;
    mpx_audio_opts o;
    mpx_audio_opts_default(&o);
    mpx_error err;
    mpx_value v;
    int rate = 0;
    mpx_error_clear(&err);
    if (mpx_audio_read(path, &o, 2, &v, &rate, &err) == MPX_OK) {
        int64_t n = v.n;
        mpx_value_free(&v);
        /* Resampling is costly: only short sounds, to a fixed rate. */
        if (n < 1 << 16) {
            o.rate = rate == 16000 ? 8000 : 16000;
            o.length = 1000;
            if (mpx_audio_read(path, &o, 3, &v, NULL, &err) == MPX_OK) mpx_value_free(&v);
        }
    }
    return 0;
}
