/* man.c - mpx_man prints the man page mpx(1) in roff: the usage text of
 * `mpx --help` and every command's usage (made from its options), summary,
 * help and options' lines from the command table, so the page says what
 * `help` says. Its output is checked in as repl/mpx.1 (installing needs no tool at build time); the test man_page
 * fails when the two differ: `build/mpx_man > repl/mpx.1` brings it up to
 * date. */
#include "mpx_repl.h"
#include "repl_internal.h"

#include <stdio.h>
#include <string.h>

/* Text as roff reads it literally: backslashes escaped, a line that starts
 * with a control character guarded. */
static void roff_text(const char *t) {
    bool line_start = true;
    for (; *t; t++) {
        if (line_start && (*t == '.' || *t == '\'')) fputs("\\&", stdout);
        if (*t == '\\') fputs("\\e", stdout);
        else if (*t == '-') fputs("\\-", stdout);
        else fputc(*t, stdout);
        line_start = *t == '\n';
    }
    if (!line_start) fputc('\n', stdout);
}

int main(int argc, char **argv) {
    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: mpx_man > mpx.1\n");
        return 64;
    }
    printf(".\\\" mpx(1), made by mpx_man (repl/man.c) from the program's own texts: do not edit.\n");
    printf(".TH MPX 1 \"\" \"mpx %s\" \"User Commands\"\n", mpx_version());
    printf(".SH NAME\nmpx \\- precision explorer for neural-network models (FP16, BF16, TF32, FP8)\n");
    printf(".SH SYNOPSIS\n.B mpx\n[\\fIoptions\\fR] [\\fIscript.mpx\\fR ...]\n.br\n.B mpx merge\n"
           "\\fIshard.json\\fR ...\n");
    printf(".SH DESCRIPTION\n");
    roff_text("mpx loads a model (ONNX, or mpx's JSON format), colours its operators green, gray, clear or "
              "red by rules, shows the cast graph that plan gives, runs it on the user's data through an exact "
              "emulation of the low format against the fp32 reference and reports each layer's error, "
              "overflow and underflow; it searches for the nodes that must stay fp32 under an error budget, "
              "sweeps thresholds, and exports the plan as a mixed-precision ONNX model. It runs as an "
              "interactive session, on .mpx scripts (one command per line, as typed at the prompt; a CI "
              "gate is a script of asserts), or on commands given with -c.");
    printf(".SH OPTIONS\n.nf\n");
    roff_text(repl_usage_text);
    printf(".fi\n");
    printf(".SH COMMANDS\n");
    roff_text("Words are split at blanks; 'single' and \"double\" quotes keep blanks (\\\" and \\\\ escape "
              "inside double quotes); # starts a comment; a line ending in \\ continues on the next.");
    int n = 0;
    const mpx_command *c = mpx_commands(&n);
    for (int i = 0; i < n; i++) {
        printf(".TP\n.B ");
        roff_text(mpx_command_usage(&c[i]));
        roff_text(c[i].summary);
        if (c[i].help) {
            printf(".IP\n.nf\n");
            roff_text(c[i].help);
            printf(".fi\n");
        }
        char text[8192];
        if (repl_options_help(&c[i], text, sizeof text)) {
            printf(".IP\n.nf\n");
            roff_text(text);
            printf(".fi\n");
        }
    }
    printf(".SH EXAMPLES\n.nf\n");
    roff_text("mpx                                   # an interactive session\n"
              "mpx -c 'load model.onnx; input x shape 1x3x224x224; run; report'\n"
              "mpx gate.mpx                          # a precision gate: exit 2 when an assert fails\n"
              "mpx -q -c 'load m.onnx; run; report --json' | python3 -m json.tool\n"
              "parallel mpx -c '...; run --samples {}/4; report --json s{}.json' ::: 1 2 3 4\n"
              "mpx merge s1.json s2.json s3.json s4.json --json all.json");
    printf(".fi\n.SH FILES\n");
    roff_text("$XDG_DATA_HOME/mpx/history (or ~/.local/share/mpx/history): the prompt's history. "
              "Examples are installed in share/mpx/examples.");
    printf(".SH SEE ALSO\n");
    roff_text("help and help <command> inside mpx; the README of the project.");
    return 0;
}
