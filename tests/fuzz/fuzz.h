/* fuzz.h - what the harnesses of tests/fuzz/ share.
 *
 * Each harness defines LLVMFuzzerTestOneInput (libFuzzer's entry point):
 * built with clang's -fsanitize=fuzzer it is a fuzzer (make fuzz); linked
 * with replay.c it runs the checked-in corpus once per file, so every input
 * that ever crashed stays a regression test in `make test` (gcc, and ASan in
 * `make sanitize`). Readers that take a path get the bytes through a file in
 * a private temporary folder. */
#ifndef MPX_FUZZ_H
#define MPX_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A file holding data, with the given suffix (".png"), in a temporary folder
 * made once per process; the same path each call. NULL if it cannot be
 * written. */
const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix);

#endif
