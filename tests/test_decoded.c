/* test_decoded.c - audio and image input files are decoded (and resampled) once per
 * binding, not once per run: the session counts its decodes
 * (repl_decoded_count), and a kept value must be the value a fresh decode
 * gives. A rebinding, another file content or another data set decodes again. */
#include "check.h"
#include "repl_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static mpx_session s;

/* A mono 16-bit PCM WAV of n samples at rate Hz: a sine of frequency hz. */
static void write_wav(const char *path, int rate, int n, double hz) {
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return;
    uint32_t data = (uint32_t)n * 2, u32;
    uint16_t u16;
    fwrite("RIFF", 1, 4, f);
    u32 = 36 + data, fwrite(&u32, 4, 1, f);
    fwrite("WAVEfmt ", 1, 8, f);
    u32 = 16, fwrite(&u32, 4, 1, f);
    u16 = 1, fwrite(&u16, 2, 1, f);  /* PCM */
    u16 = 1, fwrite(&u16, 2, 1, f);  /* mono */
    u32 = (uint32_t)rate, fwrite(&u32, 4, 1, f);
    u32 = (uint32_t)rate * 2, fwrite(&u32, 4, 1, f);
    u16 = 2, fwrite(&u16, 2, 1, f);  /* block align */
    u16 = 16, fwrite(&u16, 2, 1, f); /* bits */
    fwrite("data", 1, 4, f);
    fwrite(&data, 4, 1, f);
    for (int i = 0; i < n; i++) {
        int16_t v = (int16_t)lrint(12000.0 * sin(2 * 3.14159265358979 * hz * i / rate));
        fwrite(&v, 2, 1, f);
    }
    fclose(f);
}

static void exec_ok(const char *fmt, const char *arg) {
    char line[2048];
    snprintf(line, sizeof line, fmt, arg);
    mpx_error err;
    CHECK_MSG(mpx_session_exec(&s, line, &err) == MPX_OK, "%s: %s", line, err.msg);
}

/* The session's value of input x equals a fresh decode of its spec. */
static void expect_fresh(const char *when) {
    const mpx_tensor *t = s.graph->inputs[0];
    mpx_value *kept = NULL, fresh;
    mpx_error err;
    CHECK_MSG(repl_make_inputs(&s, &kept, &err) == MPX_OK, "%s: %s", when, err.msg);
    CHECK_MSG(repl_input_value(repl_find_spec(&s, t->name), t, &fresh, &err) == MPX_OK, "%s: %s", when, err.msg);
    if (!kept) return;
    CHECK_MSG(kept[0].n == fresh.n && memcmp(kept[0].f, fresh.f, (size_t)fresh.n * sizeof(float)) == 0,
              "%s: the kept value differs from a fresh decode", when);
    repl_free_inputs(&s, kept);
    mpx_value_free(&fresh);
}

int main(void) {
    mpx_numerics_init();
    FILE *sink = fopen("/dev/null", "w");
    mpx_session_init(&s, sink);
    const char *src = getenv("MPX_SRC"), *tmp = getenv("MPX_TMP");
    if (!src) src = ".";
    if (!tmp) tmp = "tmp_test_decoded";
    mkdir(tmp, 0777);
    char dir[1024], wav[1100], sets[1100];
    snprintf(dir, sizeof dir, "%s/set", tmp);
    mkdir(dir, 0777);
    snprintf(wav, sizeof wav, "%s/one.wav", tmp);
    write_wav(wav, 22050, 9000, 440);
    char model[1100];
    snprintf(model, sizeof model, "%s/tests/models/logmel.json", src);
    exec_ok("load %s", model);

    /* Bound once, run three times: decoded (and resampled) once. */
    exec_ok("input x audio %s rate 16000 length 4000", wav);
    long long d0 = repl_decoded_count(&s);
    exec_ok("run%s", "");
    exec_ok("run%s", "");
    exec_ok("run%s", "");
    CHECK_MSG(repl_decoded_count(&s) - d0 == 1, "3 runs decoded the file %lld times", repl_decoded_count(&s) - d0);
    expect_fresh("after 3 runs");

    /* A rebinding (other options) decodes again, then once more only. */
    exec_ok("input x audio %s rate 8000 length 4000", wav);
    exec_ok("run%s", "");
    exec_ok("run%s", "");
    CHECK_MSG(repl_decoded_count(&s) - d0 == 2, "rebound: %lld decodes, want 2", repl_decoded_count(&s) - d0);
    expect_fresh("rebound");

    /* The file written again (other content and size): decoded again. */
    write_wav(wav, 22050, 9100, 880);
    exec_ok("run%s", "");
    CHECK_MSG(repl_decoded_count(&s) - d0 == 3, "rewritten: %lld decodes, want 3", repl_decoded_count(&s) - d0);
    expect_fresh("rewritten");

    /* A data set of three files: each decoded once over three runs. */
    for (int k = 0; k < 3; k++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/s%d.wav", dir, k);
        write_wav(p, 22050, 8000 + 100 * k, 300.0 + 100 * k);
    }
    snprintf(sets, sizeof sets, "%s/*.wav", dir);
    exec_ok("input x files '%s' audio rate 16000 length 4000", sets);
    long long d1 = repl_decoded_count(&s);
    exec_ok("run%s", "");
    exec_ok("run%s", "");
    exec_ok("run%s", "");
    CHECK_MSG(repl_decoded_count(&s) - d1 == 3, "3 runs over 3 files: %lld decodes, want 3",
              repl_decoded_count(&s) - d1);

    /* No budget (set cache 0): every run decodes. */
    exec_ok("set cache %s", "0");
    long long d2 = repl_decoded_count(&s);
    exec_ok("run%s", "");
    CHECK_MSG(repl_decoded_count(&s) - d2 == 3, "set cache 0: %lld decodes, want 3", repl_decoded_count(&s) - d2);

    /* Images likewise: one decode for two runs. */
    exec_ok("set cache %s", "512");
    snprintf(model, sizeof model, "%s/examples/tiny_cnn.json", src);
    exec_ok("load %s", model);
    char png[1100];
    snprintf(png, sizeof png, "%s/examples/data/lines/01.png", src);
    exec_ok("input x image %s mean 0.5 std 0.5", png);
    long long d3 = repl_decoded_count(&s);
    exec_ok("run%s", "");
    exec_ok("run%s", "");
    CHECK_MSG(repl_decoded_count(&s) - d3 == 1, "2 runs on an image: %lld decodes, want 1",
              repl_decoded_count(&s) - d3);
    expect_fresh("image");

    mpx_session_free(&s);
    fclose(sink);
    return check_report("test_decoded");
}
