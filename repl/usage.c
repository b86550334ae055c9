/* usage.c - the program's usage text, in one place: `mpx --help` prints it
 * and the man page (repl/mpx.1, made by repl/man.c) carries it verbatim. */
#include "repl_internal.h"

const char repl_usage_text[] =
    "usage: mpx [options] [script.mpx ...]\n"
    "       mpx merge <shard.json> ... [--json [file] | --csv [file]] [--plot file.svg]\n"
    "  (no arguments)        interactive session on a terminal; commands from stdin otherwise\n"
    "  script.mpx            run the script(s), then exit\n"
    "  -c, --command 'a; b'  run the commands (after the scripts), then exit\n"
    "  -i, --interactive     stay interactive after the scripts / commands\n"
    "  -q, --quiet           leave out what commands did (loaded, wrote, plan summaries)\n"
    "  -h, --help            this help; `mpx -c help` lists the commands\n"
    "  -V, --version         the version and the git revision it was built from\n"
    "Options may come before or after the scripts.\n"
    "Output: what a command was asked for (tables, --json, --csv, dot without a file)\n"
    "goes to stdout; what it did (loaded ..., input ..., plan: ..., wrote ...),\n"
    "warnings, progress and errors go to stderr.\n"
    "A failing command prints file:line: error: ... and stops the scripts\n"
    "(unless `set bail off`: then they go on, and the exit status still says so).\n"
    "exit status: 0 ok; 1 a command failed; 2 only asserts failed; 64 usage (also a\n"
    "script that is a folder or a device)\n"
    "environment: NO_COLOR (no colour), MPX_HISTORY (history file; default\n"
    "  $XDG_DATA_HOME/mpx/history or ~/.local/share/mpx/history), PAGER (long output\n"
    "  on a terminal; default less -FRX; `set pager off`), MPX_KERN_THREADS (threads of\n"
    "  the kernels; default: the CPUs)\n";
