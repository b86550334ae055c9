/* fuzz_cmd.c - the command language: up to 16 lines per input run on a
 * fresh session holding a small model, in a private temporary folder.
 * Lines with '/' are skipped, so every file a command reads or writes is
 * inside that folder; the model is small so the fuzzer measures parsing and
 * checking, not convolutions. */
#include "fuzz.h"
#include "mpx_repl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char model_json[] =
    "{\"format\": \"mpx-model\", \"version\": 1, \"name\": \"fz\", \"opset\": 17,\n"
    " \"inputs\": [{\"name\": \"x\", \"type\": \"float32\", \"shape\": [1, 2, \"h\", \"w\"]}],\n"
    " \"outputs\": [{\"name\": \"y\", \"type\": \"float32\", \"shape\": [1, 3]}],\n"
    " \"initializers\": [\n"
    "  {\"name\": \"w\", \"type\": \"float32\", \"shape\": [4, 2, 3, 3], \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 0.5, \"seed\": 1}},\n"
    "  {\"name\": \"g\", \"type\": \"float32\", \"shape\": [3, 4], \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 0.5, \"seed\": 2}}],\n"
    " \"nodes\": [\n"
    "  {\"name\": \"conv\", \"op\": \"Conv\", \"inputs\": [\"x\", \"w\"], \"outputs\": [\"c\"], \"attrs\": {\"pads\": [1, 1, 1, 1]}},\n"
    "  {\"name\": \"relu\", \"op\": \"Relu\", \"inputs\": [\"c\"], \"outputs\": [\"r\"]},\n"
    "  {\"name\": \"gap\", \"op\": \"GlobalAveragePool\", \"inputs\": [\"r\"], \"outputs\": [\"p\"]},\n"
    "  {\"name\": \"flat\", \"op\": \"Flatten\", \"inputs\": [\"p\"], \"outputs\": [\"f\"]},\n"
    "  {\"name\": \"fc\", \"op\": \"Gemm\", \"inputs\": [\"f\", \"g\"], \"outputs\": [\"y\"], \"attrs\": {\"transB\": 1}}]}\n";

static int ready;

static void setup(void) {
    char dir[256];
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/mpx-fuzz-cmd-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir) || chdir(dir) != 0) abort();
    FILE *f = fopen("m.json", "w");
    if (!f || fputs(model_json, f) < 0 || fclose(f) != 0) abort();
    ready = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ready) setup();
    FILE *out = fopen("/dev/null", "w");
    if (!out) return 0;
    mpx_session s;
    mpx_session_init(&s, out);
    mpx_error err;
    mpx_error_clear(&err);
    mpx_session_exec(&s, "load m.json", &err);
    mpx_session_exec(&s, "input x shape 1x2x5x6", &err);
    char line[4096];
    size_t at = 0;
    for (int k = 0; k < 16 && at < size && !s.quit; k++) {
        size_t n = 0;
        while (at < size && data[at] != '\n' && n + 1 < sizeof line) line[n++] = (char)data[at++];
        while (at < size && data[at] != '\n') at++; /* the rest of a long line */
        at++;
        line[n] = '\0';
        if (memchr(line, '/', n) || strlen(line) != n) continue;
        mpx_error_clear(&err);
        mpx_session_exec(&s, line, &err);
    }
    mpx_session_free(&s);
    fclose(out);
    return 0;
}
