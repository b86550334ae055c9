/* mpx_repl.h - the session and its command table (the only module that talks
 * to a person).
 *
 * Ownership: an mpx_session owns its current graph (freed on a successful
 * load of another model, or by mpx_session_free). Commands never leave it
 * half-changed: each builds its result aside and swaps it in only on success.
 */
#ifndef MPX_REPL_H
#define MPX_REPL_H

#include <stdbool.h>
#include <stdio.h>

#include "mpx_graph.h"

/* Exit statuses of the mpx program (documented in the README). */
enum {
    MPX_EXIT_OK = 0,
    MPX_EXIT_ERROR = 1,  /* a command failed */
    MPX_EXIT_ASSERT = 2, /* an assert failed (reserved for the assert command) */
    MPX_EXIT_USAGE = 64, /* bad command line */
};

typedef struct mpx_session {
    mpx_graph *graph;
    char model_path[1024];
    bool quit;
    FILE *out; /* where results go (stdout) */
} mpx_session;

void mpx_session_init(mpx_session *s, FILE *out);
void mpx_session_free(mpx_session *s);

/* Run one command line (already without comment and continuation handling).
 * Returns MPX_OK or the failing status with err filled; s is unchanged on
 * failure. */
mpx_status mpx_session_exec(mpx_session *s, const char *line, mpx_error *err);

/* The command table, for help and completion. */
typedef struct mpx_command {
    const char *name;
    const char *usage;
    const char *summary;
    const char *help; /* longer text for `help <command>` */
    mpx_status (*handler)(mpx_session *s, int argc, char **argv, mpx_error *err);
} mpx_command;

const mpx_command *mpx_commands(int *count);

#endif
