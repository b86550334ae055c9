/* check.h - the tiny assertion kit the C unit tests share.
 * A failed CHECK prints file:line and the expression and counts a failure;
 * the test keeps going so one run shows every broken behaviour. */
#ifndef MPX_TEST_CHECK_H
#define MPX_TEST_CHECK_H
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond) do { check_count++; if (!(cond)) { check_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_MSG(cond, ...) do { check_count++; if (!(cond)) { check_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
/* The error message must mention needle (case-sensitive). */
#define CHECK_CONTAINS(hay, needle) CHECK_MSG(strstr((hay), (needle)) != NULL, \
    "\"%s\" does not contain \"%s\"", (hay), (needle))

static inline int check_report(const char *name) {
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}
#endif
