/* test_options.c - the option parser (repl/options.c) on a row of its own
 * with every type: values typed, defaults filled, repeats kept, optional
 * values, options that go alone, exclude each other or need another, bad
 * values and unknown options refused by name with what was expected (and a
 * suggestion), and the usage line and help lines made from the same row. */
#include "check.h"
#include "repl_internal.h"

#include <string.h>

enum { D_ALL, D_TOP, D_TIME, D_EVAL, D_OUT, D_AROUND, D_KEEP, D_ENGINE, D_SHARD, D_JSON, D_CSV, D_LOAD, D_LIMIT };

static const char *colour_at(int k) {
    static const char *const names[] = {"green", "gray", "red", NULL};
    return k < 3 ? names[k] : NULL;
}

static const mpx_opt demo_opts[] = {
    [D_ALL] = {.name = "--all", .help = "every row"},
    [D_TOP] = {.name = "--top", .type = MPX_OPT_INT, .meta = "<n>", .min = 1, .max = 100, .def = "20",
               .help = "rows"},
    [D_TIME] = {.name = "--time", .type = MPX_OPT_NUMBER, .meta = "<s>", .min = 0, .flags = MPX_OPT_ABOVE,
                .help = "seconds"},
    [D_EVAL] = {.name = "--eval", .type = MPX_OPT_TEXT, .meta = "\"<command>\"", .help = "a command"},
    [D_OUT] = {.name = "--out", .type = MPX_OPT_PATH, .meta = "<file>", .help = "a file"},
    [D_AROUND] = {.name = "--around", .type = MPX_OPT_NODE, .meta = "<node>", .type2 = MPX_OPT_INT,
                  .meta2 = "<depth>", .max = 1000, .help = "a node and a depth"},
    [D_KEEP] = {.name = "--keep", .type = MPX_OPT_NODES, .meta = "<t,...>", .flags = MPX_OPT_REPEAT,
                .help = "tensors"},
    [D_ENGINE] = {.name = "--engine", .type = MPX_OPT_CHOICE, .choices = "dot|sfdp/spring|neato", .def = "dot",
                  .help = "layout"},
    [D_SHARD] = {.name = "--shard", .type = MPX_OPT_SHARD, .meta = "<k>/<n>", .help = "a shard"},
    [D_JSON] = {.name = "--json", .type = MPX_OPT_PATH, .meta = "<file>", .flags = MPX_OPT_OPTIONAL, .group = 1,
                .help = "JSON"},
    [D_CSV] = {.name = "--csv", .type = MPX_OPT_CHOICE, .name_at = colour_at, .meta = "<colour>",
               .flags = MPX_OPT_OPTIONAL, .group = 1, .help = "CSV"},
    [D_LOAD] = {.name = "--load", .type = MPX_OPT_PATH, .meta = "<file>", .flags = MPX_OPT_ALONE, .help = "alone"},
    [D_LIMIT] = {.name = "--limit", .type = MPX_OPT_INT, .meta = "<n>", .needs = "--eval", .help = "needs --eval"},
    {0}};

static mpx_status demo_handler(mpx_session *s, const mpx_cmd_args *args, mpx_error *err) {
    (void)s, (void)args, (void)err;
    return MPX_OK;
}

static const mpx_command demo = {"demo", "[<file>]", "a row to test the parser", NULL, demo_handler, 0, 1,
                                 {MPX_WORD_FILE}, NULL, demo_opts, NULL};

static mpx_cmd_args parsed;

/* Parse line (split as dispatch splits it) against demo. */
static mpx_status parse(const char *line, mpx_error *err) {
    static char buf[1024];
    static char *w[MPX_ARGS_MAX];
    snprintf(buf, sizeof buf, "demo %s", line);
    int n = 0;
    mpx_status st = repl_split_words(buf, &n, w, MPX_ARGS_MAX, false, err);
    return st ? st : mpx_command_parse(&demo, n, w, &parsed, err);
}

static void expect_ok(const char *line) {
    mpx_error err;
    mpx_status st = parse(line, &err);
    CHECK_MSG(st == MPX_OK, "\"%s\" refused: %s", line, err.msg);
}

static void expect_refused(const char *line, const char *msg) {
    mpx_error err;
    mpx_status st = parse(line, &err);
    CHECK_MSG(st != MPX_OK, "\"%s\" was accepted", line);
    if (st != MPX_OK) CHECK_CONTAINS(err.msg, msg);
}

int main(void) {
    /* Defaults, when nothing is given: filled and parsed, not given. */
    expect_ok("");
    CHECK(!parsed.opt[D_TOP].given && parsed.opt[D_TOP].has_value && parsed.opt[D_TOP].i == 20);
    CHECK(!parsed.opt[D_ENGINE].given && parsed.opt[D_ENGINE].i == 0 && strcmp(parsed.opt[D_ENGINE].text, "dot") == 0);
    CHECK(!parsed.opt[D_TIME].has_value && !parsed.opt[D_ALL].given && parsed.n == 0);

    /* Every type read into its field; plain words apart from the options. */
    expect_ok("f.txt --all --top 64 --time 1.5 --eval \"python3 m.py\" --out o.json --around conv 3 --engine neato "
              "--shard 2/4");
    CHECK(parsed.n == 1 && strcmp(parsed.word[0], "f.txt") == 0);
    CHECK(parsed.opt[D_ALL].given);
    CHECK_MSG(parsed.opt[D_TOP].given && parsed.opt[D_TOP].i == 64, "--top 64: %lld", parsed.opt[D_TOP].i);
    CHECK(parsed.opt[D_TIME].d == 1.5);
    CHECK(strcmp(parsed.opt[D_EVAL].text, "python3 m.py") == 0);
    CHECK(strcmp(parsed.opt[D_OUT].text, "o.json") == 0);
    CHECK(strcmp(parsed.opt[D_AROUND].text, "conv") == 0 && parsed.opt[D_AROUND].n == 3);
    CHECK(parsed.opt[D_ENGINE].given && parsed.opt[D_ENGINE].i == 2);
    CHECK(parsed.opt[D_SHARD].i == 2 && parsed.opt[D_SHARD].n == 4);
    /* A choice's other spelling (after '/') picks it; usage and refusals
     * list the names alone (below). */
    expect_ok("--engine spring");
    CHECK(parsed.opt[D_ENGINE].i == 1);
    expect_ok("--engine sfdp");
    CHECK(parsed.opt[D_ENGINE].i == 1);
    expect_refused("--engine sfdp/spring", "--engine: \"sfdp/spring\" is not dot, sfdp or neato");
    /* image's channels take grey for gray, as they always did */
    {
        char w0[] = "channels", w1[] = "grey", *argv[] = {w0, w1};
        mpx_opt_value v[IMAGE_KEYWORD_COUNT];
        mpx_error e = {0};
        CHECK_MSG(repl_keywords_only(repl_image_keywords, "image", 2, argv, v, &e) == MPX_OK, "%s", e.msg);
        char name[16];
        CHECK(v[IMAGE_CHANNELS].given &&
              strcmp(repl_choice_at(repl_image_keywords[IMAGE_CHANNELS].choices, (int)v[IMAGE_CHANNELS].i,
                                    name, sizeof name), "gray") == 0);
    }
    /* a SI suffix is a number too; 64K is 64000, over --top's 100 */
    expect_refused("--top 64K", "--top 64K: expected a whole number from 1 to 100");

    /* Repeated: every value kept in order; others refused twice. */
    expect_ok("--keep a,b --keep c");
    CHECK(parsed.opt[D_KEEP].count == 2 && strcmp(parsed.opt[D_KEEP].all[0], "a,b") == 0 &&
          strcmp(parsed.opt[D_KEEP].all[1], "c") == 0);
    expect_refused("--top 3 --top 4", "--top given twice; usage: demo");

    /* Optional values: taken only when the next word can be one. */
    expect_ok("--json --all");
    CHECK(parsed.opt[D_JSON].given && !parsed.opt[D_JSON].has_value && parsed.opt[D_JSON].text == NULL);
    expect_ok("--json out.json");
    CHECK(strcmp(parsed.opt[D_JSON].text, "out.json") == 0 && parsed.n == 0);
    expect_ok("--csv gray");
    CHECK(parsed.opt[D_CSV].has_value && parsed.opt[D_CSV].i == 1);
    expect_ok("--csv file.csv"); /* not a choice: a plain word */
    CHECK(!parsed.opt[D_CSV].has_value && parsed.n == 1);

    /* Bad values: the option, the value and what was expected. */
    expect_refused("--top 0", "--top 0: expected a whole number from 1 to 100");
    expect_refused("--top 2.5", "--top 2.5: expected a whole number");
    expect_refused("--top many", "--top: \"many\" is not a number");
    expect_refused("--time 0", "--time 0: expected a number more than 0");
    expect_refused("--engine dott", "--engine: \"dott\" is not dot, sfdp or neato; did you mean dot?");
    expect_refused("--around conv x", "--around depth: \"x\" is not a number");
    expect_refused("--around conv", "--around needs two values");
    expect_refused("--shard 3/2", "--shard 3/2");
    expect_refused("--out", "--out needs a value; usage: demo");

    /* Unknown options, with the nearest name. */
    expect_refused("--engin dot", "unknown option \"--engin\"; did you mean --engine?; usage: demo [<file>]");
    expect_refused("--zzzzzz", "unknown option \"--zzzzzz\"; usage: demo");

    /* Between options: groups, alone, needs; and the plain words' count. */
    expect_refused("--json --csv", "--json or --csv, not both");
    expect_refused("--load x.json --all", "--load goes alone");
    expect_ok("--load x.json");
    CHECK(strcmp(parsed.opt[D_LOAD].text, "x.json") == 0);
    expect_refused("--limit 3", "--limit needs --eval \"<command>\"");
    expect_ok("--eval true --limit 3");
    expect_refused("a b", "usage: demo [<file>]");

    /* The usage line and the help lines come from the same rows. */
    const char *u = mpx_command_usage(&demo);
    CHECK_MSG(strcmp(u, "demo [<file>] [--all] [--top <n>] [--time <s>] [--eval \"<command>\" [--limit <n>]] "
                        "[--out <file>] [--around <node> <depth>] [--keep <t,...>] [--engine dot|sfdp|neato] "
                        "[--shard <k>/<n>] [--json [<file>] | --csv [<colour>]] | demo --load <file>") == 0,
              "usage: %s", u);
    char help[4096];
    repl_options_help(&demo, help, sizeof help);
    CHECK_CONTAINS(help, "--top <n>");
    CHECK_CONTAINS(help, "rows (default 20)");
    CHECK_CONTAINS(help, "--engine dot|sfdp|neato");
    return check_report("test_options");
}
