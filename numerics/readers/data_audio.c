/* data_audio.c - a sound file as a model input.
 *
 * libsndfile decodes (WAV in all its sample formats, FLAC, OGG, AIFF...) and
 * libsamplerate resamples: both are the Debian libraries made for exactly
 * this, and a hand-written WAV parser would read fewer files, less safely.
 * mpx's own part is mono mixing, scaling and length, in mpx_numerics.h. */
#include "mpx_readers.h"

#include <math.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Frames read per call. */
#define BLOCK 4096

static mpx_status snd_error(mpx_error *err, mpx_status st, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static mpx_status snd_error(mpx_error *err, mpx_status st, const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = mpx_error_vnode(err, st, path, NULL, fmt, ap);
    va_end(ap);
    return st;
}

void mpx_audio_opts_default(mpx_audio_opts *o) {
    memset(o, 0, sizeof *o);
    o->scale = 1.0;
}

/* The file's samples mixed to mono, in double; *n frames, *rate. Only the
 * first `length` frames when that is all the input takes (no resampling):
 * a long file cut to a second is not decoded whole. */
static mpx_status read_mono(const char *path, const mpx_audio_opts *o, double **out, int64_t *n, int *rate,
                            mpx_error *err) {
    int fd = mpx_file_open_read(path, false, err);
    if (fd < 0) return err ? err->status : MPX_E_IO;
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *f = sf_open_fd(fd, SFM_READ, &info, SF_FALSE); /* fd is closed here, after sf_close */
    if (!f) {
        close(fd);
        return snd_error(err, MPX_E_PARSE, path, "not a readable sound file: %s", sf_strerror(NULL));
    }
    mpx_status st = MPX_OK;
    double *mono = NULL, *block = NULL;
    if (info.channels < 1 || info.samplerate < 1) {
        st = snd_error(err, MPX_E_PARSE, path, "the header gives %d channels at %d Hz", info.channels, info.samplerate);
        goto done;
    }
    if (info.frames <= 0) {
        st = snd_error(err, MPX_E_PARSE, path, "no samples");
        goto done;
    }
    if ((int64_t)info.frames > MPX_MAX_ELEMS || (int64_t)info.frames * info.channels > MPX_MAX_ELEMS) {
        st = snd_error(err, MPX_E_LIMIT, path, "%lld frames of %d channels: more than mpx reads",
                       (long long)info.frames, info.channels);
        goto done;
    }
    int64_t want = (int64_t)info.frames;
    if (o->length && (!o->rate || o->rate == info.samplerate) && o->length < want) want = o->length;
    /* The decoded doubles, and floats twice over when resampled. */
    if ((st = mpx_check_budget(path, "its samples", (uint64_t)want * (o->rate ? 16u : 8u), err))) goto done;
    /* libsndfile quietly reads what is there when a WAV's data chunk claims
     * more bytes than the file holds; its log says so ("data : 6000 (should
     * be 2978)"). A cut file must not pass as a shorter sound. */
    char log[4096] = "";
    sf_command(f, SFC_GET_LOG_INFO, log, (int)sizeof log);
    const char *dl = strstr(log, "\ndata : ");
    const char *nl = dl ? strchr(dl + 1, '\n') : NULL;
    const char *sb2 = dl ? strstr(dl, "(should be ") : NULL;
    if (sb2 && (!nl || sb2 < nl)) {
        long long claimed = strtoll(dl + 8, NULL, 10), held = strtoll(sb2 + 11, NULL, 10);
        st = snd_error(err, MPX_E_PARSE, path, "truncated: the header gives %lld bytes of samples, the file holds %lld",
                       claimed, held);
        goto done;
    }
    /* The header's frame count is only a claim (a 169-byte FLAC can claim
     * half a billion frames): memory grows with the samples actually decoded,
     * up to the claim, never allocated for the claim up front. */
    int64_t cap = want < (int64_t)BLOCK * 16 ? want : (int64_t)BLOCK * 16;
    mono = malloc((size_t)cap * sizeof *mono);
    block = malloc((size_t)BLOCK * (size_t)info.channels * sizeof *block);
    if (!mono || !block) {
        st = snd_error(err, MPX_E_NOMEM, path, "out of memory");
        goto done;
    }
    /* Normalised doubles: an integer sample is divided by 2^(bits-1). */
    sf_command(f, SFC_SET_NORM_DOUBLE, NULL, SF_TRUE);
    int64_t got = 0;
    while (got < want) {
        sf_count_t step = want - got < BLOCK ? (sf_count_t)(want - got) : BLOCK;
        sf_count_t k = sf_readf_double(f, block, step);
        if (k <= 0) break;
        if (got + k > cap) {
            int64_t grown = cap * 2 < want ? cap * 2 : want;
            if (grown < got + k) grown = got + k;
            double *m = realloc(mono, (size_t)grown * sizeof *mono);
            if (!m) {
                st = snd_error(err, MPX_E_NOMEM, path, "out of memory");
                goto done;
            }
            mono = m;
            cap = grown;
        }
        for (sf_count_t i = 0; i < k; i++) {
            double s = 0;
            for (int c = 0; c < info.channels; c++) s += block[i * info.channels + c];
            mono[got + i] = info.channels == 1 ? s : s / info.channels;
        }
        got += k;
    }
    if (sf_error(f) != SF_ERR_NO_ERROR) {
        st = snd_error(err, MPX_E_PARSE, path, "decoding failed at frame %lld: %s", (long long)got, sf_strerror(f));
        goto done;
    }
    if (got < want) {
        st = snd_error(err, MPX_E_PARSE, path, "truncated: the header gives %lld frames, the file holds %lld",
                       (long long)info.frames, (long long)got);
        goto done;
    }
    *out = mono;
    mono = NULL;
    *n = got;
    *rate = info.samplerate;
done:
    free(mono);
    free(block);
    sf_close(f);
    close(fd);
    return st;
}

mpx_status mpx_audio_read(const char *path, const mpx_audio_opts *o, int rank, mpx_value *out,
                          int *rate_out, mpx_error *err) {
    if (rank < 1 || rank > 3)
        return snd_error(err, MPX_E_SHAPE, path, "audio fills an input of rank 1 to 3; this one has rank %d", rank);
    if (o->rate < 0 || o->length < 0)
        return snd_error(err, MPX_E_ARG, path, "rate and length must not be negative");
    double *mono = NULL;
    int64_t n = 0;
    int rate = 0;
    mpx_status st = read_mono(path, o, &mono, &n, &rate, err);
    if (st) return st;
    float *res = NULL; /* the resampled signal, when resampled */
    int64_t m = n;
    if (o->rate && o->rate != rate) {
        double ratio = (double)o->rate / rate;
        if (!src_is_valid_ratio(ratio)) {
            free(mono);
            return snd_error(err, MPX_E_ARG, path, "resampling from %d to %d Hz is beyond libsamplerate's ratio range",
                             rate, o->rate);
        }
        int64_t cap = (int64_t)ceil((double)n * ratio) + 16;
        float *in = malloc((size_t)n * sizeof *in);
        res = cap <= MPX_MAX_ELEMS ? malloc((size_t)cap * sizeof *res) : NULL;
        if (!in || !res) {
            free(in);
            free(res);
            free(mono);
            return snd_error(err, MPX_E_NOMEM, path, "out of memory resampling %lld samples", (long long)n);
        }
        for (int64_t i = 0; i < n; i++) in[i] = (float)mono[i];
        SRC_DATA d = {.data_in = in, .data_out = res, .input_frames = (long)n, .output_frames = (long)cap,
                      .src_ratio = ratio};
        int e = src_simple(&d, SRC_SINC_BEST_QUALITY, 1);
        free(in);
        if (e) {
            free(res);
            free(mono);
            return snd_error(err, MPX_E_ARG, path, "resampling failed: %s", src_strerror(e));
        }
        m = d.output_frames_gen;
        rate = o->rate;
    }
    int64_t len = o->length ? o->length : m;
    if (len > MPX_MAX_ELEMS) len = MPX_MAX_ELEMS;
    int64_t shape[3] = {1, 1, 1};
    shape[rank - 1] = len;
    mpx_value v;
    mpx_error sub;
    if ((st = mpx_value_alloc(&v, MPX_DT_FLOAT, rank, shape, &sub))) {
        free(res);
        free(mono);
        return snd_error(err, st, path, "%s", sub.msg);
    }
    int64_t k = len < m ? len : m; /* the rest stays zero (padding) */
    for (int64_t i = 0; i < k; i++) v.f[i] = (float)((res ? (double)res[i] : mono[i]) * o->scale);
    free(res);
    free(mono);
    if (rate_out) *rate_out = rate;
    *out = v;
    return MPX_OK;
}
