/* text_image.h - seeded synthetic text images for the OCR models (shared by
 * tests/mpx_run_model.c and bench/mpx_bench.c; header-only, static). */
#ifndef MPX_TEST_TEXT_IMAGE_H
#define MPX_TEST_TEXT_IMAGE_H

#include "mpx_graph.h"
#include "mpx_numerics.h"

#include <stdlib.h>

/* A seeded stand-in for a scanned document, for OCR models: dark strokes
 * grouped into glyphs, words and lines on a light, slightly noisy
 * background. Uniform noise is a poor input for them: the detector then
 * answers "no text" everywhere, an output of values near 1e-7 whose relative
 * error measures only the far tail of the sigmoid, not the network. */
/* IMAGE_AUTO: a program's "pick by input shape" setting, never drawn. */
typedef enum image_kind { IMAGE_NONE, IMAGE_PAGE, IMAGE_LINE, IMAGE_AUTO } image_kind;

static int rand_int(mpx_rng *r, int lo, int hi) { /* [lo, hi] */
    return hi <= lo ? lo : lo + (int)(mpx_rng_unit(r) * (double)(hi - lo + 1));
}

static void fill_rect(double *img, int64_t h, int64_t w, int64_t y0, int64_t x0, int64_t rh,
                      int64_t rw, double v) {
    for (int64_t y = y0 < 0 ? 0 : y0; y < y0 + rh && y < h; y++)
        for (int64_t x = x0 < 0 ? 0 : x0; x < x0 + rw && x < w; x++) img[y * w + x] = v;
}

/* One line of glyphs of height lh starting at row y. */
static void draw_line(mpx_rng *r, double *img, int64_t h, int64_t w, int64_t y, int lh) {
    double ink = 10.0 + 50.0 * mpx_rng_unit(r);
    int stroke = lh / 8 > 1 ? lh / 8 : 1;
    int64_t x = rand_int(r, 2, 12);
    while (x + lh < w) {
        int cw = rand_int(r, lh / 3 > 1 ? lh / 3 : 1, lh);
        int strokes = rand_int(r, 2, 4);
        for (int k = 0; k < strokes; k++) {
            if (mpx_rng_unit(r) < 0.5)
                fill_rect(img, h, w, y + rand_int(r, 0, lh - stroke), x, stroke, cw, ink);
            else
                fill_rect(img, h, w, y, x + rand_int(r, 0, cw - stroke), lh, stroke, ink);
        }
        x += cw + rand_int(r, 1, lh / 3 > 2 ? lh / 3 : 2);
        if (mpx_rng_unit(r) < 0.15) x += lh; /* a word gap */
    }
}

/* Fill an N x 3 x H x W value with a page (several lines, normalised like
 * PP-OCR's detector input: ImageNet mean and std) or a single text line
 * (normalised like its recogniser and classifier: (v - 0.5) / 0.5). */
static mpx_status make_image(mpx_rng *r, image_kind kind, mpx_value *v, mpx_error *err) {
    if (v->rank != 4 || v->dims[1] != 3 || v->dims[2] < 8 || v->dims[3] < 8)
        return mpx_error_set(err, MPX_E_ARG, "a text image needs an Nx3xHxW input (H, W >= 8)");
    int64_t h = v->dims[2], w = v->dims[3];
    double *img = malloc((size_t)(h * w) * sizeof *img);
    if (!img) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    static const double det_mean[3] = {0.485, 0.456, 0.406}, det_std[3] = {0.229, 0.224, 0.225};
    for (int64_t n = 0; n < v->dims[0]; n++) {
        for (int64_t i = 0; i < h * w; i++) img[i] = 227.0 + 16.0 * mpx_rng_unit(r);
        if (kind == IMAGE_LINE) {
            int lh = (int)(h * 5 / 8);
            draw_line(r, img, h, w, (h - lh) / 2 + rand_int(r, -2, 2), lh);
        } else {
            int64_t y = rand_int(r, 4, 12);
            while (y + 8 < h) {
                int lh = rand_int(r, 10, 28);
                draw_line(r, img, h, w, y, lh);
                y += lh + rand_int(r, lh / 3, lh);
            }
        }
        for (int64_t c = 0; c < 3; c++) {
            float *dst = v->f + (n * 3 + c) * h * w;
            double mean = kind == IMAGE_PAGE ? det_mean[c] : 0.5;
            double sd = kind == IMAGE_PAGE ? det_std[c] : 0.5;
            for (int64_t i = 0; i < h * w; i++) dst[i] = (float)((img[i] / 255.0 - mean) / sd);
        }
    }
    free(img);
    return MPX_OK;
}

#endif
