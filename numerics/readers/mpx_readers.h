/* mpx_readers.h - file readers: tensor files (.npy, ONNX TensorProto .pb,
 * .npz) and data files (images, audio) turned into input values.
 * Includes mpx_formats.h (the values they fill). Errors name the file and
 * what is wrong with it. */
#ifndef MPX_READERS_H
#define MPX_READERS_H

#include "mpx_formats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== tensor files (tensor_io.c) =================================== */

/* NumPy .npy (versions 1.0-3.0, little-endian, C order; float16/32/64, int8-64,
 * uint8-64, bool in; float32 or int64 out) and ONNX TensorProto .pb (as in
 * ONNX's test data). Errors name the file and what is wrong with it. */
mpx_status mpx_npy_read(const char *path, mpx_value *out, mpx_error *err);
/* Written whole or not at all, never over a file guard protects (may be
 * NULL; see mpx_file_open_write). */
mpx_status mpx_npy_write(const char *path, const mpx_file_guard *guard, const mpx_value *v, mpx_error *err);
mpx_status mpx_pb_read(const char *path, mpx_value *out, char *name, size_t name_len,
                       mpx_error *err);
/* A SequenceProto or OptionalProto file of tensors (ONNX's test data for
 * sequence and optional values) as a sequence value (is_opt for an
 * optional, which holds at most one tensor). */
mpx_status mpx_pb_read_container(const char *path, bool optional, mpx_value *out, char *name, size_t name_len,
                                 mpx_error *err);
/* The same .npy reader on bytes in memory (an .npz member); name is what
 * messages call it ("x.npz:image.npy"). */
mpx_status mpx_npy_read_mem(const char *name, const void *data, size_t len, mpx_value *out,
                            mpx_error *err);

/* ==== data files: images, audio, .npz (data_image.c, data_audio.c,
 * data_npz.c) ==================================================================
 * Each is decoded by the Debian library made for it (libpng, libjpeg-turbo,
 * libsndfile + libsamplerate, libzip); mpx writes only the arithmetic that
 * turns decoded samples into an input tensor, documented here so a test (or a
 * user's own pipeline) can reproduce it bit for bit. Values are computed in
 * double and rounded once to fp32. Errors name the file and what is wrong. */

typedef enum mpx_image_layout { MPX_LAYOUT_AUTO, MPX_LAYOUT_NCHW, MPX_LAYOUT_NHWC } mpx_image_layout;
typedef enum mpx_image_channels {
    MPX_CHANNELS_AUTO, /* from the input's channel dim: 1 gray, else rgb */
    MPX_CHANNELS_RGB,
    MPX_CHANNELS_BGR,
    MPX_CHANNELS_GRAY,
} mpx_image_channels;

typedef struct mpx_image_opts {
    int64_t height, width;       /* 0: the file's (resized only when they differ) */
    mpx_image_layout layout;     /* AUTO: nhwc when the input's last dim is 1 or 3 and its
                                    second is not, else nchw */
    mpx_image_channels channels;
    double scale;                /* default 1 */
    double mean[3], std[3];      /* per channel in the output order; default 0 and 1 */
} mpx_image_opts;

void mpx_image_opts_default(mpx_image_opts *o);

/* Decodes a PNG or JPEG (by its first bytes, not its name) into an fp32
 * tensor for an input of rank `rank` (4: batch 1 added; 3: no batch; 2: gray
 * only, HxW) whose bound dims are `dims` (may be NULL or hold -1 where
 * unknown: AUTO options look at them, and a bound channel dim that differs
 * from the image's channels is refused).
 * Pixels: 8 bits per sample (16-bit PNG samples keep their high byte, as
 * libpng's png_set_strip_16 and PIL do; palettes expanded; alpha dropped, not
 * composited). gray from a colour image is 0.299 R + 0.587 G + 0.114 B (ITU-R
 * 601) in double, not rounded to 8 bits; rgb from a gray image repeats it.
 * Resize (only when height/width differ from the file): bilinear with
 * half-pixel centres, no antialiasing (ONNX Resize linear/half_pixel, OpenCV
 * INTER_LINEAR): x_src = (x + 0.5) * in / out - 0.5 clamped to [0, in - 1].
 * Value of channel c: ((p / 255) * scale - mean[c]) / std[c]. */
mpx_status mpx_image_read(const char *path, const mpx_image_opts *o, int rank, const int64_t *dims,
                          mpx_value *out, mpx_error *err);

typedef struct mpx_audio_opts {
    int rate;        /* 0: the file's; otherwise resampled to it (libsamplerate, best sinc) */
    int64_t length;  /* 0: all samples; otherwise zero-padded or truncated to it */
    double scale;    /* default 1 (32768 gives int16-range values) */
} mpx_audio_opts;

void mpx_audio_opts_default(mpx_audio_opts *o);

/* Decodes a WAV, FLAC, OGG or any other file libsndfile reads into a mono
 * fp32 tensor for an input of rank `rank` (1: [n], 2: [1, n], 3: [1, 1, n]).
 * Samples are libsndfile's normalised doubles (an int16 sample s is s/32768,
 * so values lie in [-1, 1)); channels are averaged in double; value =
 * mean * scale, rounded once. With resampling, the mono signal is rounded to
 * fp32 first (libsamplerate works in float). A file shorter than its header
 * says is refused (truncated). rate_out (may be NULL) gets the rate used. */
mpx_status mpx_audio_read(const char *path, const mpx_audio_opts *o, int rank, mpx_value *out,
                          int *rate_out, mpx_error *err);

/* An .npz (NumPy's zip of .npy files, stored or deflated): every member,
 * key = member name without ".npy", in the archive's order. */
typedef struct mpx_npz {
    int n;
    char **keys;
    mpx_value *values;
} mpx_npz;
mpx_status mpx_npz_read(const char *path, mpx_npz *out, mpx_error *err);
void mpx_npz_free(mpx_npz *z);

/* What kind of data file path is, from its first bytes (png, jpeg, npy,
 * npz) or, failing those, whether libsndfile opens it (audio); NULL when none
 * (or it cannot be opened). */
const char *mpx_data_kind(const char *path);

#ifdef __cplusplus
}
#endif

#endif
