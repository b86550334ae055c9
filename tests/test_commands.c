/* test_commands.c - the command table's argument specs: what dispatch refuses
 * before a handler runs, and what completion offers, both read from the rows.
 * The interactive test (tmux) sees the same completion through libedit; this
 * one checks every kind of word without a terminal. */
#include "check.h"
#include "repl_internal.h"

#include <stdlib.h>
#include <string.h>

static mpx_session s;

/* The candidates for the last word of line (split as the prompt splits it),
 * space-separated, sorted. */
static const char *complete_line(const char *line) {
    static char out[8192];
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", line);
    const char *sp = strrchr(buf, ' ');
    const char *text = sp ? sp + 1 : buf;
    char before[1024];
    size_t n = (size_t)(text - buf);
    memcpy(before, buf, n);
    before[n] = '\0';
    char *w[64];
    int pos = 0;
    mpx_error err;
    out[0] = '\0';
    if (repl_split_words(before, &pos, w, 64, true, &err)) return "(split failed)";
    int k = repl_complete(&s, text, pos, w);
    size_t o = 0;
    for (int i = 0; i < k; i++) {
        char *c = repl_complete_take();
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%s", i ? " " : "", c);
        free(c);
    }
    return out;
}

static void expect_completion(const char *line, const char *want) {
    const char *got = complete_line(line);
    CHECK_MSG(strcmp(got, want) == 0, "completing \"%s\": got \"%s\", want \"%s\"", line, got, want);
}

static void expect_refused(const char *line, const char *msg) {
    mpx_error err;
    mpx_status st = mpx_session_exec(&s, line, &err);
    CHECK_MSG(st != MPX_OK, "\"%s\" was accepted", line);
    if (st != MPX_OK) CHECK_CONTAINS(err.msg, msg);
}

int main(void) {
    mpx_numerics_init();
    FILE *sink = fopen("/dev/null", "w");
    mpx_session_init(&s, sink);
    char path[1024];
    const char *src = getenv("MPX_SRC");
    snprintf(path, sizeof path, "load %s/examples/tiny_cnn.json", src ? src : ".");
    mpx_error err;
    CHECK_MSG(mpx_session_exec(&s, path, &err) == MPX_OK, "%s", err.msg);

    /* Every row is well formed: its usage starts with its name, every
     * option of the spec appears in the usage (the "usage:" messages and
     * help print it), choices exist where a word is a choice. */
    int n = 0;
    const mpx_command *c = mpx_commands(&n);
    for (int i = 0; i < n; i++) {
        const char *usage = mpx_command_usage(&c[i]);
        CHECK_MSG(strncmp(usage, c[i].name, strlen(c[i].name)) == 0, "%s: usage \"%s\"", c[i].name, usage);
        for (const mpx_opt *o = c[i].options; o && o->name; o++) {
            CHECK_MSG(strstr(usage, o->name) != NULL, "%s: option %s missing from its usage", c[i].name, o->name);
            CHECK_MSG(o->type != MPX_OPT_CHOICE || o->choices || o->name_at, "%s %s: no choices", c[i].name, o->name);
            CHECK_MSG(o->help && *o->help, "%s %s: no help line", c[i].name, o->name);
            CHECK_MSG(!o->needs || mpx_command_option(&c[i], o->needs), "%s %s: needs %s, not an option", c[i].name,
                      o->name, o->needs);
            CHECK_MSG(o - c[i].options < MPX_OPTS_MAX, "%s: more than %d options", c[i].name, MPX_OPTS_MAX);
            CHECK_MSG(mpx_command_option(&c[i], o->name) == o, "%s: %s twice", c[i].name, o->name);
        }
        /* every default parses as a typed value would (dispatch fills them) */
        if (c[i].options) {
            char *w[4] = {(char *)c[i].name, "x", "x", "x"};
            int nw = 1 + (c[i].min_args > 0 ? c[i].min_args : 0);
            mpx_cmd_args a;
            mpx_error e;
            CHECK_MSG(nw <= 4 && mpx_command_parse(&c[i], nw, w, &a, &e) == MPX_OK, "%s: %s", c[i].name, e.msg);
        }
        for (size_t k = 0; k < sizeof c[i].args / sizeof c[i].args[0]; k++)
            CHECK_MSG(c[i].args[k] != MPX_WORD_CHOICE || c[i].choices, "%s: no choices", c[i].name);
        CHECK(mpx_command_find(c[i].name) == &c[i]);
    }
    CHECK(mpx_command_find("exit") == mpx_command_find("quit"));

    /* Dispatch checks the words against the row before the handler runs. */
    expect_refused("report --jsn", "unknown option \"--jsn\"; did you mean --json?; usage: report [--top");
    expect_refused("run --keep", "--keep needs a value; usage: run ");
    expect_refused("dot --around Conv_0", "--around needs two values");
    expect_refused("show", "usage: show <node>");
    expect_refused("show a b", "usage: show <node>");
    expect_refused("keep-io maybe", "\"maybe\" is not on|off; usage: keep-io [on|off]");
    expect_refused("target fp16 blk 4", "\"blk\" is not block");
    expect_refused("export", "usage: export <file.onnx>");
    expect_refused("plot a.svg rel_l2 extra", "usage: plot <file.svg> [<metric>] [--local]");
    expect_refused("stats --load r.json --top 3", "--load goes alone; usage: stats");
    expect_refused("input x image a.png layot nchw", "unknown image option \"layot\" (size, layout, channels, scale, "
                   "mean, std); did you mean layout?");
    expect_refused("input x image a.png layout nwhc", "layout: \"nwhc\" is not nchw or nhwc; did you mean nhwc?");
    expect_refused("data a.npz limit", "limit needs a value (limit <n>)");
    expect_refused("report --sort rel_l3", "--sort: \"rel_l3\" is not rel_l2, ");
    expect_refused("report --top 3 --all", "--top or --all, not both");
    expect_refused("svg x.svg --local", "--local needs --overlay");
    expect_refused("set tpo 3", "unknown setting \"tpo\" (settings: bail, top, cache, pager, memory, loops); did you mean top?");
    expect_refused("set loops -1", "set loops: expected seconds from 0 (no limit) to 1073741824, not \"-1\"");
    expect_refused("search --max-evals 3 output.rel_l2 < 1", "the condition comes first");
    /* A refused command leaves the session as it was. */
    CHECK(s.graph && s.plan);

    /* Completion reads the same rows. */
    expect_completion("export --", "--external --force --json");
    expect_completion("keep-io ", "off on");
    expect_completion("target fp16 ", "block");
    expect_completion("target b", "bf16");
    expect_completion("set ", "bail cache loops memory pager top");
    expect_completion("set pager ", "off on");
    expect_completion("svg x.svg --engine ", "dot neato sfdp");
    expect_completion("search output.rel_l2 < 1 --method ", "auto bisect greedy sensitivity");
    expect_completion("report --sort s", "sqnr_db subnormal");
    expect_completion("report --sort l", "local");
    /* report --sort completes exactly the metric table's names (and local, order) */
    {
        char want[1024], names[512];
        mpx_metric_names(" ", names, sizeof names);
        const char *w[64];
        int nw = 0;
        char *save = NULL;
        for (char *t = strtok_r(names, " ", &save); t && nw < 62; t = strtok_r(NULL, " ", &save)) w[nw++] = t;
        w[nw++] = "local";
        w[nw++] = "order";
        for (int i = 1; i < nw; i++) /* sorted, as completion lists them */
            for (int j = i; j > 0 && strcmp(w[j - 1], w[j]) > 0; j--) {
                const char *t = w[j];
                w[j] = w[j - 1];
                w[j - 1] = t;
            }
        size_t o = 0;
        for (int i = 0; i < nw; i++) o += (size_t)snprintf(want + o, sizeof want - o, "%s%s", i ? " " : "", w[i]);
        expect_completion("report --sort ", want);
    }
    expect_completion("help sw", "sweep");
    expect_completion("ex", "exit export");
    expect_completion("input ", "x");
    expect_completion("input x ", "audio const file files image random shape");
    /* keyword options from their tables: names, then a choice's values */
    expect_completion("input x image a.png ", "channels layout mean scale size std");
    expect_completion("input x image a.png layout ", "nchw nhwc");
    expect_completion("input x audio a.wav r", "rate");
    expect_completion("input x files '*.png' image l", "layout limit");
    expect_completion("data a.npz ", "limit shuffle stacked");
    expect_completion("colour Conv", "Conv ConvInteger ConvTranspose");
    expect_completion("colour Conv ", "clear gray green red");
    expect_completion("accum Conv fp3", "fp32");
    expect_completion("assert l", "layers low_cost_pct low_macs_pct low_nodes");
    /* figures name the model's outputs (tiny_cnn's is y), then a metric */
    expect_completion("assert ou", "out[y]. output.");
    expect_completion("search out[y].rel", "out[y].rel_l2");
    expect_completion("assert worst.c", "worst.cos");
    /* sweep: after the colon, the swept command's own words. */
    expect_completion("sweep t in 1,2 : keep-io ", "off on");
    expect_completion("sweep t ", "in");
    /* nodes from the model: tiny_cnn's three nodes under /backbone/stem/ */
    char stem[512];
    snprintf(stem, sizeof stem, "%s", complete_line("why /backbone/stem/"));
    CHECK_MSG(strcmp(stem, "/backbone/stem/act/Relu /backbone/stem/bn/BatchNormalization /backbone/stem/conv/Conv") == 0,
              "why /backbone/stem/: \"%s\"", stem);
    expect_completion("dot --around /backbone/stem/", stem);
    /* the depth after --around <node> is a number: nothing to offer */
    expect_completion("dot --around /backbone/stem/act/Relu ", "");
    /* options do not count as plain words: after --local and the file the
     * next plain word is plot's second, a metric */
    char metrics[512];
    snprintf(metrics, sizeof metrics, "%s", complete_line("plot x.svg "));
    CHECK_MSG(strstr(metrics, "rel_l2") != NULL, "plot x.svg: \"%s\"", metrics);
    expect_completion("plot --local x.svg ", metrics);

    /* The session owns its state: `input ... shape` re-binds the model in
     * memory (the file may be gone), a shape that does not fit leaves the
     * graph and plan as they were, and the last run keeps the plan it ran
     * when the plan changes after it. */
    const char *tmp = getenv("MPX_TMP");
    char dir[1024], copy[1100], cmd[2300];
    snprintf(dir, sizeof dir, "%s", tmp ? tmp : "/tmp/test_commands");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/examples/tiny_cnn.json' '%s/m.json'", dir, src ? src : ".", dir);
    CHECK(system(cmd) == 0);
    snprintf(copy, sizeof copy, "load %s/m.json", dir);
    CHECK_MSG(mpx_session_exec(&s, copy, &err) == MPX_OK, "%s", err.msg);
    snprintf(copy, sizeof copy, "%s/m.json", dir);
    CHECK(remove(copy) == 0);
    CHECK_MSG(mpx_session_exec(&s, "input x shape 1x3x32x32", &err) == MPX_OK, "re-bind without the file: %s", err.msg);
    const mpx_graph *g0 = s.graph;
    const mpx_plan *p0 = s.plan;
    CHECK(g0->inputs[0]->rank == 4 && g0->inputs[0]->dims[2] == 32);
    expect_refused("input x shape 1x3x32", "rank");
    CHECK(s.graph == g0 && s.plan == p0);
    CHECK(g0->inputs[0]->rank == 4 && g0->inputs[0]->dims[3] == 32 && mpx_graph_macs(g0) > 0);
    CHECK_MSG(mpx_session_exec(&s, "input x shape 1x3x16x16", &err) == MPX_OK, "%s", err.msg);
    CHECK(g0->inputs[0]->dims[2] == 16 && s.graph == g0);
    CHECK_MSG(mpx_session_exec(&s, "run", &err) == MPX_OK, "%s", err.msg);
    CHECK(s.last && s.run_plan == s.plan);
    CHECK_MSG(mpx_session_exec(&s, "colour Conv red", &err) == MPX_OK, "%s", err.msg);
    CHECK(s.run_plan && s.run_plan != s.plan && s.last);
    CHECK(s.run_plan->opts.target == s.last_target);
    CHECK_MSG(mpx_session_exec(&s, "report --top 1", &err) == MPX_OK, "%s", err.msg);
    CHECK_MSG(mpx_session_exec(&s, "undo", &err) == MPX_OK, "%s", err.msg);
    CHECK_MSG(mpx_session_exec(&s, "run", &err) == MPX_OK, "%s", err.msg);
    CHECK(s.run_plan == s.plan);

    /* Completions written back quoted (the prompt's Tab): each reads back,
     * through the lexer, as the candidate. */
    static const struct {
        const char *line, *cand;
        bool open;
        const char *want;
    } quoting[] = {
        {"load ex", "examples/tiny_cnn.json", false, "examples/tiny_cnn.json"},
        {"load my", "my data/", true, "'my data/"},
        {"load my", "my data/a b.onnx", false, "'my data/a b.onnx'"},
        {"load 'my data/s", "my data/sub dir/", true, "'my data/sub dir/"},
        {"load \"my d", "my data/x\"y.onnx", false, "\"my data/x\\\"y.onnx\""},
        {"load 'my data/it", "my data/it's.json", false, "'my data/it'\"'\"'s.json'"},
        {"load a\"b\"c", "abc d.onnx", false, "a\"b\"c' d.onnx'"},
    };
    for (size_t i = 0; i < sizeof quoting / sizeof quoting[0]; i++) {
        size_t ws;
        char word[256], out[512], back[600];
        char q = repl_last_word(quoting[i].line, &ws, word, sizeof word);
        CHECK_MSG(strncmp(word, quoting[i].cand, strlen(word)) == 0, "\"%s\" reads as \"%s\"", quoting[i].line, word);
        CHECK(repl_complete_quoted(quoting[i].line + ws, q, quoting[i].cand, strlen(word), quoting[i].open, out,
                                   sizeof out));
        CHECK_MSG(strcmp(out, quoting[i].want) == 0, "\"%s\" + %s: got %s, want %s", quoting[i].line,
                  quoting[i].cand, out, quoting[i].want);
        /* A closed word reads back as the candidate. */
        snprintf(back, sizeof back, "%s", out);
        char *w[4];
        int nw = 0;
        if (!quoting[i].open && repl_split_words(back, &nw, w, 4, false, &err) == MPX_OK)
            CHECK_MSG(nw == 1 && strcmp(w[0], quoting[i].cand) == 0, "%s reads back as %s", out, nw ? w[0] : "");
    }

    repl_complete_free();
    mpx_session_free(&s);
    fclose(sink);
    return check_report("test_commands");
}
