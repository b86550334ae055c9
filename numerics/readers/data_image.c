/* data_image.c - a PNG or JPEG file as a model input.
 *
 * Decoding is libpng's and libjpeg-turbo's (not stb_image): they are the
 * decoders Debian's other tools and PIL link, so the pixels are the same bits
 * an independent Python pipeline gets, and they are the most hardened image
 * parsers there are. Both report errors by longjmp; each decode below runs in
 * one function that owns its setjmp and frees everything on the way out.
 * What is mpx's own is the arithmetic after decoding (channel order, gray,
 * resize, normalisation), documented in mpx_numerics.h. */
#include "mpx_readers.h"

#include <errno.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <jpeglib.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Decoded 8-bit pixels, h x w x c (c = 1 gray or 3 rgb). */
typedef struct pixels {
    int64_t h, w;
    int c;
    unsigned char *p;
} pixels;

/* Larger images than this are refused before decoding (a hostile header can
 * claim 2^31 x 2^31); 2^28 samples is 16k x 16k RGB. */
#define MAX_SAMPLES ((int64_t)1 << 28)

static mpx_status img_error(mpx_error *err, mpx_status st, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static mpx_status img_error(mpx_error *err, mpx_status st, const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = mpx_error_vnode(err, st, path, NULL, fmt, ap);
    va_end(ap);
    return st;
}

static mpx_status check_size(const char *path, int64_t w, int64_t h, int c, mpx_error *err) {
    if (w <= 0 || h <= 0) return img_error(err, MPX_E_PARSE, path, "the image is empty (%lldx%lld)", (long long)h, (long long)w);
    if (w * h * c > MAX_SAMPLES)
        return img_error(err, MPX_E_LIMIT, path, "the image is %lldx%lld, larger than mpx reads (%lld samples)",
                         (long long)h, (long long)w, (long long)MAX_SAMPLES);
    /* The decoded bytes and the float tensor made of them (5 bytes a
     * sample), checked before either is allocated. */
    char what[80];
    snprintf(what, sizeof what, "the %lldx%lld image", (long long)h, (long long)w);
    return mpx_check_budget(path, what, (uint64_t)(w * h * c) * 5u, err);
}

/* ---- PNG ---------------------------------------------------------------------- */

typedef struct png_err {
    jmp_buf jmp;
    char msg[200];
} png_err;

static void png_on_error(png_structp png, png_const_charp msg) {
    png_err *e = png_get_error_ptr(png);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    longjmp(e->jmp, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg; /* warnings (e.g. a bad gamma chunk) do not stop the decode */
}

static mpx_status read_png(const char *path, FILE *fp, pixels *out, mpx_error *err) {
    png_err e = {.msg = ""};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &e, png_on_error, png_on_warning);
    if (!png) return img_error(err, MPX_E_NOMEM, path, "out of memory");
    png_infop info = png_create_info_struct(png);
    unsigned char *volatile buf = NULL;
    png_bytep *volatile rows = NULL;
    if (!info || setjmp(e.jmp)) {
        free(buf);
        free(rows);
        png_destroy_read_struct(&png, info ? &info : NULL, NULL);
        /* libpng says "Read Error" when fread comes up short. */
        return img_error(err, MPX_E_PARSE, path, "not a readable PNG: %s",
                         strcmp(e.msg, "Read Error") == 0 ? "truncated (the file ends inside the image)"
                         : e.msg[0]                       ? e.msg
                                                          : "out of memory");
    }
    png_init_io(png, fp);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int type = png_get_color_type(png, info);
    /* Everything to 8-bit gray or RGB: palette expanded, low bit depths
     * widened, 16 bits cut to their high byte, alpha (and tRNS) dropped. */
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
    if (type & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int c = png_get_channels(png, info);
    if (c != 1 && c != 3) png_error(png, "unexpected channel count after conversion");
    mpx_status st = check_size(path, (int64_t)w, (int64_t)h, c, err);
    if (st) {
        png_destroy_read_struct(&png, &info, NULL);
        return st;
    }
    size_t stride = (size_t)w * (size_t)c;
    if (png_get_rowbytes(png, info) != stride) png_error(png, "unexpected row size");
    buf = malloc(stride * h);
    rows = malloc(sizeof *rows * h);
    if (!buf || !rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < h; y++) rows[y] = buf + stride * y;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    *out = (pixels){(int64_t)h, (int64_t)w, c, buf};
    return MPX_OK;
}

/* ---- JPEG --------------------------------------------------------------------- */

typedef struct jpeg_err {
    struct jpeg_error_mgr pub;
    jmp_buf jmp;
    char msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void jpeg_on_error(j_common_ptr cinfo) {
    jpeg_err *e = (jpeg_err *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, e->msg);
    longjmp(e->jmp, 1);
}

/* libjpeg's warnings include "Premature end of JPEG file", after which it
 * pads the image with gray: a truncated file must not pass as an image. */
static void jpeg_on_message(j_common_ptr cinfo, int level) {
    if (level < 0) {
        jpeg_err *e = (jpeg_err *)cinfo->err;
        if (!e->msg[0]) (*cinfo->err->format_message)(cinfo, e->msg);
        e->pub.num_warnings++;
    }
}

static mpx_status read_jpeg(const char *path, FILE *fp, pixels *out, mpx_error *err) {
    struct jpeg_decompress_struct cinfo;
    jpeg_err e;
    memset(&e, 0, sizeof e);
    cinfo.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jpeg_on_error;
    e.pub.emit_message = jpeg_on_message;
    unsigned char *volatile buf = NULL;
    if (setjmp(e.jmp)) {
        free(buf);
        jpeg_destroy_decompress(&cinfo);
        return img_error(err, MPX_E_PARSE, path, "not a readable JPEG: %s", e.msg);
    }
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, fp);
    jpeg_read_header(&cinfo, TRUE);
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&cinfo);
        return img_error(err, MPX_E_UNSUPPORTED, path,
                         "a CMYK JPEG; mpx reads gray and colour (YCbCr/RGB) JPEGs (convert it to RGB first)");
    }
    /* libjpeg's defaults (islow DCT, fancy upsampling), as PIL decodes. */
    cinfo.out_color_space = cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    int c = cinfo.output_components;
    mpx_status st = check_size(path, (int64_t)cinfo.output_width, (int64_t)cinfo.output_height, c, err);
    if (st) {
        jpeg_destroy_decompress(&cinfo);
        return st;
    }
    size_t stride = (size_t)cinfo.output_width * (size_t)c;
    buf = malloc(stride * cinfo.output_height);
    if (!buf) {
        snprintf(e.msg, sizeof e.msg, "out of memory");
        longjmp(e.jmp, 1);
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = buf + stride * cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    if (e.pub.num_warnings) longjmp(e.jmp, 1);
    jpeg_finish_decompress(&cinfo);
    if (e.pub.num_warnings) longjmp(e.jmp, 1);
    *out = (pixels){(int64_t)cinfo.output_height, (int64_t)cinfo.output_width, c, buf};
    jpeg_destroy_decompress(&cinfo);
    return MPX_OK;
}

/* ---- decode by content --------------------------------------------------------- */

static mpx_status decode(const char *path, pixels *px, mpx_error *err) {
    int fd = mpx_file_open_read(path, false, err);
    if (fd < 0) return err ? err->status : MPX_E_IO;
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        close(fd);
        return img_error(err, MPX_E_IO, path, "cannot read: %s", strerror(errno));
    }
    unsigned char sig[8] = {0};
    size_t got = fread(sig, 1, sizeof sig, fp);
    rewind(fp);
    mpx_status st;
    if (got == 8 && png_sig_cmp(sig, 0, 8) == 0) st = read_png(path, fp, px, err);
    else if (got >= 3 && sig[0] == 0xff && sig[1] == 0xd8 && sig[2] == 0xff) st = read_jpeg(path, fp, px, err);
    else st = img_error(err, MPX_E_UNSUPPORTED, path, "not a PNG or JPEG image (mpx reads those two)");
    fclose(fp);
    return st;
}

void mpx_image_opts_default(mpx_image_opts *o) {
    memset(o, 0, sizeof *o);
    o->scale = 1.0;
    for (int c = 0; c < 3; c++) o->std[c] = 1.0;
}

/* Sample (y, x) of the decoded image in the wanted channel order (0..nc-1),
 * as a double: gray from colour by 601 weights, colour from gray repeated. */
static double sample(const pixels *px, int64_t y, int64_t x, int ch, mpx_image_channels want) {
    const unsigned char *p = px->p + (y * px->w + x) * px->c;
    if (want == MPX_CHANNELS_GRAY)
        return px->c == 1 ? p[0] : 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
    if (px->c == 1) return p[0];
    return p[want == MPX_CHANNELS_BGR ? 2 - ch : ch];
}

/* One axis of the half-pixel bilinear map: source index and weight. */
static void axis_map(int64_t out_i, int64_t in_n, int64_t out_n, int64_t *i0, int64_t *i1, double *wt) {
    double s = ((double)out_i + 0.5) * (double)in_n / (double)out_n - 0.5;
    if (s < 0) s = 0;
    if (s > (double)(in_n - 1)) s = (double)(in_n - 1);
    *i0 = (int64_t)floor(s);
    *i1 = *i0 + 1 < in_n ? *i0 + 1 : in_n - 1;
    *wt = s - (double)*i0;
}

mpx_status mpx_image_read(const char *path, const mpx_image_opts *o, int rank, const int64_t *dims,
                          mpx_value *out, mpx_error *err) {
    if (rank < 2 || rank > 4)
        return img_error(err, MPX_E_SHAPE, path, "an image fills an input of rank 2 to 4; this one has rank %d", rank);
    mpx_image_layout layout = o->layout;
    if (layout == MPX_LAYOUT_AUTO) {
        layout = MPX_LAYOUT_NCHW;
        if (rank >= 3 && dims) {
            int64_t first = dims[rank - 3], last = dims[rank - 1];
            if ((last == 1 || last == 3) && first != 1 && first != 3) layout = MPX_LAYOUT_NHWC;
        }
    }
    int cdim = rank < 3 ? -1 : layout == MPX_LAYOUT_NCHW ? rank - 3 : rank - 1;
    int64_t want_c = cdim >= 0 && dims ? dims[cdim] : -1;
    mpx_image_channels chans = o->channels;
    if (chans == MPX_CHANNELS_AUTO) chans = want_c == 1 || rank == 2 ? MPX_CHANNELS_GRAY : MPX_CHANNELS_RGB;
    int nc = chans == MPX_CHANNELS_GRAY ? 1 : 3;
    if (rank == 2 && nc != 1)
        return img_error(err, MPX_E_SHAPE, path, "the input has rank 2 (HxW), which holds a gray image only (channels gray)");
    if (want_c > 0 && want_c != nc)
        return img_error(err, MPX_E_SHAPE, path, "channels %s gives %d channel%s but the input has %lld (dim %d)",
                         chans == MPX_CHANNELS_GRAY ? "gray" : chans == MPX_CHANNELS_BGR ? "bgr" : "rgb", nc,
                         nc == 1 ? "" : "s", (long long)want_c, cdim);
    for (int c = 0; c < nc; c++)
        if (!(o->std[c] != 0) || !isfinite(o->std[c]))
            return img_error(err, MPX_E_ARG, path, "std of channel %d is %g; it must be finite and non-zero", c, o->std[c]);
    pixels px;
    mpx_status st = decode(path, &px, err);
    if (st) return st;
    int64_t h = o->height > 0 ? o->height : px.h, w = o->width > 0 ? o->width : px.w;
    if ((st = check_size(path, w, h, nc, err))) {
        free(px.p);
        return st;
    }
    int64_t shape[4];
    int r = 0;
    if (rank == 4) shape[r++] = 1;
    if (rank >= 3 && layout == MPX_LAYOUT_NCHW) shape[r++] = nc;
    shape[r++] = h;
    shape[r++] = w;
    if (rank >= 3 && layout == MPX_LAYOUT_NHWC) shape[r++] = nc;
    mpx_value v;
    mpx_error sub;
    if ((st = mpx_value_alloc_raw(&v, MPX_DT_FLOAT, rank, shape, &sub))) {
        free(px.p);
        return img_error(err, st, path, "%s", sub.msg);
    }
    bool resize = h != px.h || w != px.w;
    for (int64_t y = 0; y < h; y++) {
        int64_t y0 = y, y1 = y;
        double wy = 0;
        if (resize) axis_map(y, px.h, h, &y0, &y1, &wy);
        for (int64_t x = 0; x < w; x++) {
            int64_t x0 = x, x1 = x;
            double wx = 0;
            if (resize) axis_map(x, px.w, w, &x0, &x1, &wx);
            for (int c = 0; c < nc; c++) {
                double p = sample(&px, y0, x0, c, chans);
                if (resize)
                    p = (1 - wy) * ((1 - wx) * p + wx * sample(&px, y0, x1, c, chans)) +
                        wy * ((1 - wx) * sample(&px, y1, x0, c, chans) + wx * sample(&px, y1, x1, c, chans));
                double val = ((p / 255.0) * o->scale - o->mean[c]) / o->std[c];
                int64_t at = layout == MPX_LAYOUT_NCHW || rank == 2 ? ((int64_t)c * h + y) * w + x : (y * w + x) * nc + c;
                v.f[at] = (float)val;
            }
        }
    }
    free(px.p);
    *out = v;
    return MPX_OK;
}
