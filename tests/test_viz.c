/* test_viz.c - the cast graph (DOT against expected text, SVG content), the
 * error overlay, the per-layer plot and the HTML review page.
 *
 * Expected DOT lives in tests/viz/ (*.dot files). The text is built from the plan in
 * graph order with ids from graph indices, so it does not depend on layout;
 * it does depend on how this Graphviz version's agwrite formats attributes.
 * MPX_UPDATE_GOLDEN=1 rewrites the files (then review the diff); on a
 * mismatch the actual text is left in $MPX_TMP for `diff`.
 *
 * tiny_cnn is examples/tiny_cnn.json bound to 1x3x32x32 under the rule
 * "colour Conv green when macs >= 1M else gray" (the same session
 * tests/viz_check.sh drives through the REPL, which must give the same DOT). */
#include "check.h"
#include "mpx_colour.h"
#include "mpx_viz.h"
#include "viz_internal.h" /* vz_text_box: the plots' label boxes, estimated as the library does */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static mpx_error err;

#define RULE "colour Conv green when macs >= 1M else gray"

/* ---- helpers -------------------------------------------------------------------- */

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        return;
    }
    fputs(text, f);
    fclose(f);
}

static const char *tmp_dir(void) {
    const char *t = getenv("MPX_TMP");
    if (!t) t = ".";
    mkdir(t, 0777);
    return t;
}

/* text must equal tests/viz/<name>. */
static void golden(const char *name, const char *text) {
    const char *src = getenv("MPX_SRC");
    char path[1024], out[1024];
    snprintf(path, sizeof path, "%s/tests/viz/%s", src ? src : "..", name);
    if (getenv("MPX_UPDATE_GOLDEN")) {
        write_text(path, text);
        printf("test_viz: wrote %s\n", path);
        return;
    }
    char *want = read_text(path);
    CHECK_MSG(want != NULL, "missing expected file %s (MPX_UPDATE_GOLDEN=1 writes it)", path);
    if (!want) return;
    if (strcmp(want, text) != 0) {
        snprintf(out, sizeof out, "%s/%s", tmp_dir(), name);
        write_text(out, text);
        size_t i = 0, line = 1;
        while (want[i] && want[i] == text[i]) line += want[i++] == '\n';
        CHECK_MSG(0, "%s differs from the expected text at line %zu (actual: %s; diff them)", name, line, out);
    }
    free(want);
}

static mpx_graph *load_tiny_cnn(int64_t h, int64_t w) {
    const char *src = getenv("MPX_SRC");
    char p[900];
    snprintf(p, sizeof p, "%s/examples/tiny_cnn.json", src ? src : "..");
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_json(p, &err);
    CHECK_MSG(g != NULL, "%s", err.msg);
    if (!g) return NULL;
    int64_t d[4] = {1, 3, h, w};
    CHECK(mpx_graph_bind_input(g, "x", 4, d, &err) == MPX_OK);
    CHECK_MSG(mpx_graph_infer(g, &err) == MPX_OK, "%s", err.msg);
    return g;
}

static mpx_rules *rules_of(const mpx_graph *g, const char *text) {
    mpx_rules *r = mpx_rules_new();
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", text);
    char *save;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        CHECK_MSG(mpx_rules_add(r, line, g, &err) == MPX_OK, "rule \"%s\": %s", line, err.msg);
    return r;
}

static mpx_plan *plan_of(const mpx_graph *g, const mpx_rules *r, const mpx_format *target) {
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    if (target) o.target = target;
    mpx_plan *p = NULL;
    CHECK_MSG(mpx_plan_build(g, r, &o, NULL, &p, &err) == MPX_OK, "plan: %s", err.msg);
    return p;
}

static mpx_compare *run_of(const mpx_graph *g, const mpx_plan *p, uint64_t seed) {
    mpx_value *in = calloc((size_t)g->n_inputs, sizeof *in);
    for (int i = 0; i < g->n_inputs; i++) {
        const mpx_tensor *t = g->inputs[i];
        CHECK(mpx_value_alloc(&in[i], t->dtype, t->rank, t->dims, &err) == MPX_OK);
        mpx_rng r;
        mpx_rng_init(&r, seed + (uint64_t)i);
        for (int64_t k = 0; k < in[i].n; k++) in[i].f[k] = (float)mpx_rng_normal(&r, 0.0, 1.0);
    }
    mpx_assign *a = mpx_plan_to_assign(p, &err);
    CHECK_MSG(a != NULL, "%s", err.msg);
    mpx_compare *c = NULL;
    CHECK_MSG(mpx_compare_run(g, a, in, NULL, &c, &err) == MPX_OK, "run: %s", err.msg);
    mpx_assign_free(a);
    for (int i = 0; i < g->n_inputs; i++) mpx_value_free(&in[i]);
    free(in);
    return c;
}

static char *dot_of(const mpx_plan *p, const mpx_viz_opts *o) {
    char *text = NULL;
    mpx_error_clear(&err);
    CHECK_MSG(mpx_viz_dot(p, o, &text, NULL, &err) == MPX_OK, "dot: %s", err.msg);
    return text ? text : calloc(1, 1);
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* ---- plot layout, read back from the SVG ------------------------------------------ */

/* The number in attribute name of the element starting at el ("" -> NAN). */
static double attr_num(const char *el, const char *name) {
    const char *end = strchr(el, '>');
    char key[48];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *a = strstr(el, key);
    if (!a || (end && a > end)) return NAN;
    return strtod(a + strlen(key), NULL);
}

static bool attr_is(const char *el, const char *name, const char *value) {
    const char *end = strchr(el, '>');
    char key[96];
    snprintf(key, sizeof key, " %s=\"%s\"", name, value);
    const char *a = strstr(el, key);
    return a && (!end || a < end);
}

/* The box of the first <rect class="cls">; false if none. */
static bool rect_box(const char *svg, const char *cls, vz_box *b) {
    char key[64];
    snprintf(key, sizeof key, "<rect class=\"%s\"", cls);
    const char *r = strstr(svg, key);
    if (!r) return false;
    double x = attr_num(r, "x"), y = attr_num(r, "y");
    *b = (vz_box){x, y, x + attr_num(r, "width"), y + attr_num(r, "height")};
    return true;
}

/* Every <text class="label">'s box from its own x, y, font-size, anchor and
 * (unescaped) text; at most max. */
static int label_boxes(const char *svg, vz_box *out, int max) {
    int n = 0;
    for (const char *t = strstr(svg, "<text class=\"label\""); t && n < max; t = strstr(t + 1, "<text class=\"label\"")) {
        const char *open = strchr(t, '>'), *close = open ? strstr(open, "</text>") : NULL;
        if (!close) break;
        char text[512];
        size_t k = 0;
        for (const char *c = open + 1; c < close && k + 1 < sizeof text;) {
            static const char *const ent[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}};
            size_t e = 0;
            while (e < 5 && strncmp(c, ent[e][0], strlen(ent[e][0])) != 0) e++;
            if (e < 5) text[k++] = ent[e][1][0], c += strlen(ent[e][0]);
            else text[k++] = *c++;
        }
        text[k] = '\0';
        vz_anchor an = attr_is(t, "text-anchor", "end") ? VZ_END : attr_is(t, "text-anchor", "middle") ? VZ_MIDDLE : VZ_START;
        out[n++] = vz_text_box(text, attr_num(t, "font-size"), attr_num(t, "x"), attr_num(t, "y"), an);
    }
    return n;
}

/* Labels inside the frame, clear of each other and of the legend; returns
 * how many there are. */
static int check_labels(const char *svg, const char *what) {
    vz_box frame, legend, lab[64];
    CHECK_MSG(rect_box(svg, "frame", &frame), "%s: no frame", what);
    CHECK_MSG(rect_box(svg, "legend-box", &legend), "%s: no legend box", what);
    int n = label_boxes(svg, lab, 64);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(vz_box_inside(lab[i], frame), "%s: label %d (%.1f,%.1f-%.1f,%.1f) leaves the frame", what, i, lab[i].x0,
                  lab[i].y0, lab[i].x1, lab[i].y1);
        CHECK_MSG(!vz_boxes_meet(lab[i], legend), "%s: label %d overlaps the legend", what, i);
        for (int j = i + 1; j < n; j++) CHECK_MSG(!vz_boxes_meet(lab[i], lab[j]), "%s: labels %d and %d overlap", what, i, j);
    }
    return n;
}

/* Every red node's band lies between the frame's left and right edges. */
static int check_bands(const char *svg, const char *what) {
    vz_box frame;
    if (!rect_box(svg, "frame", &frame)) return 0;
    const char *g = strstr(svg, "<g id=\"plot-red-nodes\""), *end = g ? strstr(g, "</g>") : NULL;
    int n = 0;
    for (const char *r = g ? strstr(g, "<rect ") : NULL; r && r < end; r = strstr(r + 1, "<rect ")) {
        double x = attr_num(r, "x"), w = attr_num(r, "width");
        CHECK_MSG(x >= frame.x0 - 1e-9 && x + w <= frame.x1 + 0.11 && w > 0, "%s: band %.1f+%.1f outside %.1f..%.1f", what,
                  x, w, frame.x0, frame.x1);
        n++;
    }
    return n;
}

/* ---- DOT ----------------------------------------------------------------------- */

static void test_dot_tiny_cnn(void) {
    mpx_graph *g = load_tiny_cnn(32, 32);
    if (!g) return;
    mpx_rules *r = rules_of(g, RULE);
    mpx_plan *p = plan_of(g, r, NULL);
    mpx_viz_opts o;
    mpx_viz_opts_default(&o);
    o.rules = r;
    char *a = dot_of(p, &o), *b = dot_of(p, &o);
    CHECK_MSG(strcmp(a, b) == 0, "the same plan gives different DOT");
    golden("tiny_cnn.dot", a);
    /* what a reviewer must see */
    CHECK_CONTAINS(a, "n0\t[fillcolor=\"#bdbdbd\"");          /* the stem conv: gray by the rule's else */
    CHECK_CONTAINS(a, "label=\"Conv\\n/backbone/stem/conv/Conv\\nrule #1\"");
    CHECK_CONTAINS(a, "label=\"Conv\\n/backbone/stage1/conv1/Conv\\nrule #1 \xc2\xb7 W\xe2\x86\x92" "fp16\"");
    CHECK_CONTAINS(a, "label=\"Cast\\nfp32\xe2\x86\x92" "fp16\"");
    CHECK_CONTAINS(a, "label=\"Cast\\nfp16\xe2\x86\x92" "fp32\"");
    CHECK_CONTAINS(a, "shape=hexagon");
    CHECK_CONTAINS(a, "shape=invhouse");                      /* the input */
    CHECK_CONTAINS(a, "shape=house");                         /* the output */
    CHECK_CONTAINS(a, "label=\"input x\\nfloat32 1x3x32x32\"");
    CHECK_CONTAINS(a, "label=fp16");                          /* edges carry formats */
    CHECK_CONTAINS(a, "label=fp32");
    CHECK_CONTAINS(a, "fillcolor=\"#a5d6a7\"");               /* green */
    CHECK_CONTAINS(a, "fillcolor=\"#ef9a9a\"");               /* red */
    CHECK_CONTAINS(a, "<B>legend</B>");
    CHECK_CONTAINS(a, "rule #1: colour Conv green when macs >= 1M else gray");
    /* rule-set nodes (the 7 Convs) have a double border, defaults do not */
    int ruled = 0;
    for (int i = 0; i < g->n_nodes; i++) ruled += p->nodes[i].colour_rule >= 0;
    CHECK(ruled == 7 && count_of(a, "peripheries=2") == ruled);
    /* one cast node per plan cast */
    CHECK(count_of(a, "shape=hexagon") == p->n_casts);
    /* every op node is drawn once (tiny_cnn has no Constant nodes) */
    char id[16];
    for (int i = 0; i < g->n_nodes; i++) {
        snprintf(id, sizeof id, "\tn%d\t[", i);
        CHECK_MSG(count_of(a, id) == 1, "node n%d drawn %d times", i, count_of(a, id));
    }
    free(a);
    free(b);

    /* collapsed chains in clusters */
    o.collapse = true;
    o.cluster = 2;
    a = dot_of(p, &o);
    golden("tiny_cnn_collapse.dot", a);
    CHECK_CONTAINS(a, "subgraph \"cluster_/backbone\"");
    CHECK_CONTAINS(a, "subgraph \"cluster_/backbone/stage1\"");
    CHECK_CONTAINS(a, "\tc0\t[");                              /* stem conv, bn, relu: one chain */
    CHECK_CONTAINS(a, "3 nodes \xc2\xb7 fp32");
    CHECK(strstr(a, "\tn1\t[") == NULL);                       /* inside c0 */
    mpx_viz_stats st;
    free(a);
    a = NULL;
    CHECK(mpx_viz_dot(p, &o, &a, &st, &err) == MPX_OK);
    CHECK(st.chains > 0 && st.clusters == 7 && st.op_nodes == g->n_nodes);
    CHECK(st.nodes < g->n_nodes);
    free(a);

    /* a neighbourhood with weights and shapes */
    mpx_viz_opts_default(&o);
    o.rules = r;
    o.around = "/backbone/stage1/se/Mul";
    o.depth = 1;
    o.weights = true;
    o.shapes = true;
    a = dot_of(p, &o);
    golden("tiny_cnn_around.dot", a);
    CHECK_CONTAINS(a, "1x32x8x8");                           /* a shape on an edge */
    CHECK_CONTAINS(a, "style=\"rounded,dashed\"");             /* stubs at depth 2 */
    CHECK_CONTAINS(a, "\tw");                                  /* weight nodes */
    CHECK(strstr(a, "\tin0\t[") == NULL);                      /* the input is far away */
    free(a);

    /* a tensor stands for its producer */
    o.around = "s1.se.out";
    a = dot_of(p, &o);
    CHECK_CONTAINS(a, "label=\"Mul\\n/backbone/stage1/se/Mul\",\n\t\tpenwidth=3");
    free(a);
    o.around = "x"; /* a model input has no producer */
    CHECK(mpx_viz_dot(p, &o, &a, NULL, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "model input or weight");

    /* errors: a node that does not exist, a negative depth, a bad cluster depth */
    o.around = "/no/such/node";
    a = (char *)"untouched";
    CHECK(mpx_viz_dot(p, &o, &a, NULL, &err) == MPX_E_ARG);
    CHECK(a == NULL);
    CHECK_CONTAINS(err.msg, "no node or tensor named \"/no/such/node\"");
    o.around = "/head/Softmax";
    o.depth = -1;
    CHECK(mpx_viz_dot(p, &o, &a, NULL, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "depth");
    mpx_viz_opts_default(&o);
    o.cluster = -2;
    CHECK(mpx_viz_dot(p, &o, &a, NULL, &err) == MPX_E_ARG);
    CHECK(mpx_viz_dot(NULL, &o, &a, NULL, &err) == MPX_E_ARG);

    mpx_plan_free(p);
    mpx_rules_free(r);
    mpx_graph_free(g);
}

/* keep-io casts into and out of a low chain, a red node, and names that need
 * escaping in DOT, SVG and HTML. */
static const char weird_json[] =
    "{\"format\": \"mpx-model\", \"name\": \"esc<&>\\\"q\", \"opset\": 17,"
    " \"inputs\": [{\"name\": \"x<in>\", \"type\": \"float32\", \"shape\": [1, 4, 6, 6]}],"
    " \"outputs\": [{\"name\": \"y&out\", \"type\": \"float32\"}, {\"name\": \"e\", \"type\": \"float32\"}],"
    " \"initializers\": [{\"name\": \"w\", \"type\": \"float32\", \"shape\": [4, 4, 1, 1],"
    "   \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 0.5, \"seed\": 1}}],"
    " \"nodes\": ["
    "  {\"name\": \"conv \\\"a\\\" \\\\N <b>&c\", \"op\": \"Conv\", \"inputs\": [\"x<in>\", \"w\"], \"outputs\": [\"c\"],"
    "   \"attrs\": {\"kernel_shape\": [1, 1]}},"
    "  {\"name\": \"relu\", \"op\": \"Relu\", \"inputs\": [\"c\"], \"outputs\": [\"y&out\"]},"
    "  {\"name\": \"exp\", \"op\": \"Exp\", \"inputs\": [\"c\"], \"outputs\": [\"e\"]}"
    " ]}";

static mpx_graph *load_weird(void) {
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_json_text(weird_json, sizeof weird_json - 1, "weird.json", NULL, &err);
    CHECK_MSG(g != NULL, "weird model: %s", err.msg);
    if (g) CHECK_MSG(mpx_graph_infer(g, &err) == MPX_OK, "%s", err.msg);
    return g;
}

static void test_dot_casts_and_escaping(void) {
    mpx_graph *g = load_weird();
    if (!g) return;
    mpx_rules *r = rules_of(g, "colour Conv green");
    mpx_plan *p = plan_of(g, r, NULL);
    mpx_viz_opts o;
    mpx_viz_opts_default(&o);
    o.rules = r;
    o.legend = false;
    char *a = dot_of(p, &o);
    golden("keepio.dot", a);
    /* keep-io: fp32 -> fp16 after the input, fp16 -> fp32 before each low output */
    CHECK_CONTAINS(a, "in0 -> k0");
    CHECK_CONTAINS(a, "label=\"Cast\\nfp32\xe2\x86\x92" "fp16\"");
    CHECK_CONTAINS(a, "-> out0");
    CHECK(strstr(a, "legend") == NULL);
    /* the name's backslash is doubled (no \N expansion), quotes escaped */
    CHECK_CONTAINS(a, "conv \\\"a\\\" \\\\N <b>&c");
    free(a);

    /* SVG: well-formed XML is viz_check.sh's job (xmllint); here: escaped */
    char *svg = NULL;
    CHECK_MSG(mpx_viz_svg(p, &o, &svg, NULL, &err) == MPX_OK, "svg: %s", err.msg);
    if (svg) {
        CHECK(strstr(svg, "<b>&c") == NULL);
        CHECK_CONTAINS(svg, "&lt;b&gt;&amp;c");
        char path[1024];
        snprintf(path, sizeof path, "%s/weird.svg", tmp_dir());
        write_text(path, svg);
    }
    free(svg);

    mpx_compare *c = run_of(g, p, 3);
    mpx_viz_series s = {"fp16 <run>", c};
    mpx_viz_page pg = {p, r, "dir/we<ird>.json", &s, 1, NULL, NULL, NULL, 0};
    char *html = NULL;
    CHECK_MSG(mpx_viz_html(&pg, &html, NULL, &err) == MPX_OK, "html: %s", err.msg);
    if (html) {
        CHECK(strstr(html, "<b>&c") == NULL);
        CHECK(strstr(html, "we<ird>") == NULL);
        CHECK_CONTAINS(html, "we&lt;ird&gt;.json");
        CHECK_CONTAINS(html, "fp16 &lt;run&gt;");
    }
    free(html);
    mpx_compare_free(c);
    mpx_plan_free(p);
    mpx_rules_free(r);
    mpx_graph_free(g);
}

/* ---- SVG, overlay, plot, page -------------------------------------------------- */

static void test_svg_and_overlay(void) {
    mpx_graph *g = load_tiny_cnn(32, 32);
    if (!g) return;
    mpx_rules *r = rules_of(g, RULE);
    mpx_plan *p = plan_of(g, r, NULL);
    mpx_viz_opts o;
    mpx_viz_opts_default(&o);
    o.rules = r;
    char *svg = NULL;
    mpx_viz_stats st;
    CHECK_MSG(mpx_viz_svg(p, &o, &svg, &st, &err) == MPX_OK, "svg: %s", err.msg);
    if (!svg) return;
    CHECK(strncmp(svg, "<?xml", 5) == 0);
    CHECK(st.bytes == strlen(svg) && st.ms_layout >= 0);
    CHECK_CONTAINS(svg, "<g id=\"n3\" class=\"node\">");
    CHECK_CONTAINS(svg, "<g id=\"k0\" class=\"node\">");
    CHECK_CONTAINS(svg, "fill=\"#a5d6a7\"");
    CHECK_CONTAINS(svg, "fp32\xe2\x86\x92" "fp16");
    CHECK_CONTAINS(svg, "/backbone/stage1/conv1/Conv");
    free(svg);

    /* the overlay: border by error, figures in the label, the scale in the legend */
    mpx_compare *c = run_of(g, p, 1);
    if (!c) return;
    o.overlay = c;
    char *a = dot_of(p, &o);
    CHECK_CONTAINS(a, "border: rel_l2 of the last run");
    CHECK_CONTAINS(a, "\\nrel_l2 ");
    CHECK_CONTAINS(a, "penwidth=");
    free(a);

    /* a compare of another graph is refused */
    mpx_graph *g2 = load_tiny_cnn(16, 16);
    mpx_plan *p2 = plan_of(g2, r, NULL);
    mpx_compare *c2 = run_of(g2, p2, 1);
    a = NULL;
    CHECK(mpx_viz_dot(p, &o, &a, NULL, &err) == MPX_OK);
    free(a);
    o.overlay = c2;
    CHECK(mpx_viz_dot(p, &o, &a, NULL, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "another model");

    /* plot: one line per run, casts and red nodes of the plan marked */
    mpx_plan *pb = plan_of(g, r, &mpx_format_bf16);
    mpx_compare *cb = run_of(g, pb, 1);
    mpx_viz_series s[2] = {{"fp16", c}, {"bf16", cb}};
    mpx_viz_plot_opts po;
    mpx_viz_plot_opts_default(&po);
    po.marks = p;
    char *plot = NULL;
    CHECK_MSG(mpx_viz_plot(s, 2, &po, &plot, &err) == MPX_OK, "plot: %s", err.msg);
    if (plot) {
        CHECK(count_of(plot, "<polyline") == 2);
        CHECK_CONTAINS(plot, ">fp16</text>");
        CHECK_CONTAINS(plot, ">bf16</text>");
        CHECK_CONTAINS(plot, "rel_l2 (log scale)");
        CHECK_CONTAINS(plot, "layers in topological order");
        CHECK(count_of(plot, "<title>Cast ") == p->n_casts);
        CHECK(count_of(plot, "<title>red: ") == p->counts.nodes[MPX_COLOUR_RED]);
        CHECK_CONTAINS(plot, "id=\"plot-worst\"");
        CHECK(strstr(plot, "nan") == NULL);
        /* the worst named clear of each other and the legend; Softmax, the
         * last node, is red: its band ends at the frame */
        int named = check_labels(plot, "plot");
        CHECK(named >= 1 && named <= 3);
        CHECK(check_bands(plot, "plot") == p->counts.nodes[MPX_COLOUR_RED]);
        CHECK(count_of(plot, "<polyline class=\"local\"") == 0);
        char path[1024];
        snprintf(path, sizeof path, "%s/plot.svg", tmp_dir());
        write_text(path, plot);
    }
    free(plot);
    /* sqnr_db is linear */
    CHECK(mpx_metric_by_name("SQNR_DB", &po.metric) && po.metric == MPX_METRIC_sqnr_db);
    CHECK(!mpx_metric_by_name("rel", &po.metric));
    po.metric = MPX_METRIC_sqnr_db;
    CHECK(mpx_viz_plot(s, 1, &po, &plot, &err) == MPX_OK);
    if (plot) CHECK_CONTAINS(plot, "sqnr_db (dB)");
    free(plot);
    /* errors: nothing to plot, runs of different models, marks of another model */
    CHECK(mpx_viz_plot(s, 0, &po, &plot, &err) == MPX_E_ARG);
    mpx_viz_series mixed[2] = {{"a", c}, {"b", c2}};
    CHECK(mpx_viz_plot(mixed, 2, &po, &plot, &err) == MPX_E_ARG);
    po.marks = p2;
    CHECK(mpx_viz_plot(s, 1, &po, &plot, &err) == MPX_E_ARG);

    /* the page: self-contained, every section, the run's figures */
    mpx_viz_page pg = {p, r, "examples/tiny_cnn.json", s, 2, NULL, NULL, NULL, 0};
    char *html = NULL;
    mpx_viz_stats hs;
    CHECK_MSG(mpx_viz_html(&pg, &html, &hs, &err) == MPX_OK, "html: %s", err.msg);
    if (html) {
        CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
        CHECK_CONTAINS(html, "Precision review: tiny_cnn.json");
        CHECK_CONTAINS(html, "id=\"model\"");
        CHECK_CONTAINS(html, "<code>colour Conv green when macs &gt;= 1M else gray</code>");
        CHECK_CONTAINS(html, "id=\"graph\"");
        CHECK_CONTAINS(html, "id=\"plot\"");
        CHECK_CONTAINS(html, "id=\"layers\"");
        CHECK_CONTAINS(html, "Worst layers");
        CHECK_CONTAINS(html, "border: rel_l2 of the last run"); /* the overlay is on by default with a run */
        CHECK(count_of(html, "<svg") == 2);
        CHECK(strstr(html, "<?xml") == NULL);
        CHECK(strstr(html, "<!DOCTYPE svg") == NULL);
        /* nothing fetched: no external scripts, styles, images or links */
        CHECK(strstr(html, "src=") == NULL);
        CHECK(strstr(html, "<link") == NULL);
        CHECK(strstr(html, "href=\"http") == NULL);
        CHECK(strstr(html, "@import") == NULL);
        CHECK(hs.nodes > 0);
        char path[1024];
        snprintf(path, sizeof path, "%s/tiny_cnn.html", tmp_dir());
        write_text(path, html);
    }
    free(html);
    /* without a run: the plan table and no plot */
    pg.n_series = 0;
    CHECK(mpx_viz_html(&pg, &html, NULL, &err) == MPX_OK);
    if (html) {
        CHECK_CONTAINS(html, "No run yet");
        CHECK(count_of(html, "<svg") == 1);
    }
    free(html);
    pg.n_series = 2;
    pg.series = mixed;
    CHECK(mpx_viz_html(&pg, &html, NULL, &err) == MPX_E_ARG);

    mpx_compare_free(c);
    mpx_compare_free(cb);
    mpx_compare_free(c2);
    mpx_plan_free(p);
    mpx_plan_free(pb);
    mpx_plan_free(p2);
    mpx_rules_free(r);
    mpx_graph_free(g);
    mpx_graph_free(g2);
}

/* Whether a geometry attribute (x y cx cy x1 y1 x2 y2 width height points d
 * transform) of the SVG holds "nan" or "inf". */
static bool non_finite_coordinate(const char *svg) {
    static const char *const attrs[] = {" x=\"", " y=\"", " cx=\"", " cy=\"", " x1=\"", " y1=\"", " x2=\"",
                                        " y2=\"", " width=\"", " height=\"", " points=\"", " d=\"", " transform=\""};
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++)
        for (const char *p = strstr(svg, attrs[a]); p; p = strstr(p + 1, attrs[a])) {
            const char *v = p + strlen(attrs[a]), *e = strchr(v, '"');
            if (!e) return true;
            for (const char *q = v; q < e; q++)
                if (strncmp(q, "nan", 3) == 0 || strncmp(q, "inf", 3) == 0) return true;
        }
    return false;
}

/* Infinite, NaN and zero errors: on the plot's edges, never "nan" coordinates. */
static void test_plot_special_values(void) {
    mpx_graph *g = load_tiny_cnn(32, 32);
    if (!g) return;
    mpx_layer layers[5];
    memset(layers, 0, sizeof layers);
    double v[5] = {0.0, INFINITY, NAN, 1e-3, 1e-30};
    for (int i = 0; i < 5; i++) {
        layers[i].node = i;
        layers[i].tensor = g->nodes[i]->outputs[0]->index;
        layers[i].m.rel_l2 = v[i];
        layers[i].m.cos = 1;
        layers[i].m.sqnr_db = i == 0 ? INFINITY : 10.0 * i;
    }
    layers[1].m.overflow = 7;
    layers[4].m.underflow = 3;
    mpx_compare c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.n_layers = 5;
    c.layers = layers;
    mpx_viz_series s = {"fp16", &c};
    for (int m = 0; m < MPX_METRIC_COUNT; m++) {
        mpx_viz_plot_opts po;
        mpx_viz_plot_opts_default(&po);
        po.metric = (mpx_viz_metric)m;
        char *plot = NULL;
        CHECK_MSG(mpx_viz_plot(&s, 1, &po, &plot, &err) == MPX_OK, "%s: %s", mpx_metric_info_of(po.metric)->name, err.msg);
        if (!plot) continue;
        CHECK_MSG(!non_finite_coordinate(plot),
                  "%s: a non-finite coordinate", mpx_metric_info_of(po.metric)->name);
        if (m == MPX_METRIC_rel_l2) {
            char path[1024];
            snprintf(path, sizeof path, "%s/plot_special.svg", tmp_dir());
            write_text(path, plot);
            CHECK_CONTAINS(plot, "overflow 7");
            CHECK_CONTAINS(plot, "underflow 3");
        }
        free(plot);
    }
    c.n_layers = 0;
    char *plot = NULL;
    CHECK(mpx_viz_plot(&s, 1, NULL, &plot, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "nothing to plot");
    mpx_graph_free(g);
}

/* A copy of c's layers whose figures the tests set. */
static mpx_layer *layers_of(const mpx_compare *c) {
    mpx_layer *l = malloc((size_t)c->n_layers * sizeof *l);
    if (l) memcpy(l, c->layers, (size_t)c->n_layers * sizeof *l);
    return l;
}

static int positions_of(const mpx_compare *c) {
    int n = 0, last = -1;
    for (int k = 0; k < c->n_layers; k++)
        if (c->layers[k].node != last) n++, last = c->layers[k].node;
    return n;
}

/* Five formats on a few hundred layers stay readable: underflow is one lane
 * of bars (only where it passes 1% of a layer's values), own errors are
 * dashed lines beside the run's, the worst few are named without overlap. */
static void test_plot_layout(void) {
    mpx_graph *g = load_tiny_cnn(32, 32);
    if (!g) return;
    mpx_rules *r = rules_of(g, RULE);
    mpx_plan *p = plan_of(g, r, NULL);
    mpx_compare *c = run_of(g, p, 1);
    if (!c) return;
    int n_pos = positions_of(c);
    enum { NS = 3 };
    mpx_layer *l[NS];
    mpx_compare cs[NS];
    mpx_viz_series s[NS] = {{"fp16", &cs[0]}, {"bf16", &cs[1]}, {"fp8e4m3", &cs[2]}};
    for (int i = 0; i < NS; i++) {
        l[i] = layers_of(c);
        memset(&cs[i], 0, sizeof cs[i]);
        cs[i].g = g;
        cs[i].n_layers = c->n_layers;
        cs[i].layers = l[i];
    }
    mpx_viz_plot_opts po;
    mpx_viz_plot_opts_default(&po);
    po.marks = p;
    char *plot = NULL;

    /* underflow everywhere: 50% in fp16, 2% in bf16, 0.5% in fp8e4m3 */
    for (int i = 0; i < NS; i++)
        for (int k = 0; k < c->n_layers; k++) {
            l[i][k].m.n = 1000;
            l[i][k].m.underflow = i == 0 ? 500 : i == 1 ? 20 : 5;
        }
    CHECK(mpx_viz_plot(s, NS, &po, &plot, &err) == MPX_OK);
    if (plot) {
        CHECK(count_of(plot, "<title>underflow at #") == n_pos); /* one bar a position, not one a point */
        CHECK(count_of(plot, "h8 l-4 7 z") == 0);                 /* the old triangle per point */
        CHECK_CONTAINS(plot, "underflow 500 of 1000 values");      /* the figures stay in the points' titles */
        CHECK_CONTAINS(plot, "\xe2\x89\xa5 1% of values");
        check_labels(plot, "underflow");
    }
    free(plot);
    /* a trace (0.5%) is no mark at all */
    CHECK(mpx_viz_plot(&s[2], 1, &po, &plot, &err) == MPX_OK);
    if (plot) {
        CHECK(count_of(plot, "<title>underflow at #") == 0);
        CHECK(strstr(plot, "1% of values") == NULL);
    }
    free(plot);

    /* own errors: dashed beside the run's with --local, and only then */
    for (int i = 0; i < NS; i++)
        for (int k = 0; k < c->n_layers; k++) {
            l[i][k].has_local = true;
            l[i][k].local = l[i][k].m;
            l[i][k].local.rel_l2 = l[i][k].m.rel_l2 / 10;
        }
    po.local = true;
    CHECK(mpx_viz_plot(s, NS, &po, &plot, &err) == MPX_OK);
    if (plot) {
        CHECK(count_of(plot, "<polyline class=\"run\"") == NS);
        CHECK(count_of(plot, "<polyline class=\"local\"") == NS);
        CHECK(count_of(plot, "stroke-dasharray=\"4,2.5\" points=") == NS);
        CHECK_CONTAINS(plot, ">dashed: own error (local)</text>");
        CHECK_CONTAINS(plot, ">fp8e4m3</text>");
        CHECK(check_labels(plot, "local") >= 1);
    }
    free(plot);
    po.local = false;
    CHECK(mpx_viz_plot(s, NS, &po, &plot, &err) == MPX_OK);
    if (plot) CHECK(count_of(plot, "<polyline class=\"local\"") == 0 && !strstr(plot, "dashed:"));
    free(plot);
    /* --local without local figures: the run's lines alone */
    for (int i = 0; i < NS; i++)
        for (int k = 0; k < c->n_layers; k++) l[i][k].has_local = false;
    po.local = true;
    CHECK(mpx_viz_plot(s, NS, &po, &plot, &err) == MPX_OK);
    if (plot) CHECK(count_of(plot, "<polyline class=\"local\"") == 0 && count_of(plot, "<polyline class=\"run\"") == NS);
    free(plot);
    po.local = false;

    /* the worst crowded together in the top right corner: three names that
     * fit, none over another, the legend or the frame; every point keeps
     * its title (hover) whether named or not */
    for (int i = 0; i < NS; i++)
        for (int k = 0; k < c->n_layers; k++) {
            l[i][k].m.underflow = 0;
            l[i][k].m.rel_l2 = k >= c->n_layers - 6 ? 10.0 + k + i * 0.5 : 1e-3 * (1 + i);
        }
    CHECK(mpx_viz_plot(s, NS, &po, &plot, &err) == MPX_OK);
    if (plot) {
        CHECK(check_labels(plot, "crowded") == 3);
        CHECK(count_of(plot, "</title></circle>") == NS * n_pos);
        char path[1024];
        snprintf(path, sizeof path, "%s/plot_crowded.svg", tmp_dir());
        write_text(path, plot);
    }
    free(plot);
    /* too small for all of them: fewer names, still no overlap */
    po.width = 330;
    po.height = 200;
    CHECK(mpx_viz_plot(s, NS, &po, &plot, &err) == MPX_OK);
    if (plot) {
        CHECK(check_labels(plot, "small") <= 3);
        CHECK(count_of(plot, "</title></circle>") == NS * n_pos);
        CHECK(strstr(plot, "nan") == NULL);
    }
    free(plot);
    for (int i = 0; i < NS; i++) free(l[i]);
    mpx_compare_free(c);
    mpx_plan_free(p);
    mpx_rules_free(r);
    mpx_graph_free(g);
}

/* A sweep's plot: every distinct point drawn once, the front marked, labels
 * where they overlap nothing; the same text twice. */
static void test_pareto(void) {
    mpx_viz_point pt[] = {
        {"0", 99.8, 5.1e-4, 0},  {"64k", 100, 4.7e-4, 0}, {"256k", 100, 4.7e-4, 0}, {"1M", 75, 5.1e-4, 0},
        {"4M", 75, 5.1e-4, 0},   {"8M", 40, 1e-4, 0},     {"16M", 20, 0, 0},        {"a", 100, 2e-2, 1},
        {"b", 90, 3e-3, 1},      {"c", 60, 2.9e-3, 1},    {"d", 30, 1e-3, 1},       {"nan", 50, NAN, 1},
    };
    int n = (int)(sizeof pt / sizeof pt[0]);
    const char *names[] = {"fp16", "fp8e4m3"};
    char *a = NULL, *b = NULL;
    CHECK_MSG(mpx_viz_pareto(pt, n, names, 2, "sweep t", &a, &err) == MPX_OK, "%s", err.msg);
    CHECK(mpx_viz_pareto(pt, n, names, 2, "sweep t", &b, &err) == MPX_OK);
    if (a && b) {
        CHECK(strcmp(a, b) == 0);
        CHECK(strncmp(a, "<?xml", 5) == 0);
        CHECK(count_of(a, "<g class=\"point") == n - 2); /* 256k and 4M share a point with 64k and 1M */
        CHECK_CONTAINS(a, "<title>64k, 256k: 100.0% of MACs low");
        CHECK(count_of(a, "<polyline class=\"front\"") == 2);
        CHECK_CONTAINS(a, ">fp16 (filled: Pareto front)</text>");
        CHECK_CONTAINS(a, "output rel_l2 (log scale)");
        CHECK(!non_finite_coordinate(a));
        int named = check_labels(a, "pareto");
        CHECK(named >= n - 4 && named <= n - 2);
        char path[1024];
        snprintf(path, sizeof path, "%s/pareto.svg", tmp_dir());
        write_text(path, a);
    }
    free(a);
    free(b);
    CHECK(mpx_viz_pareto(pt, 0, names, 2, NULL, &a, &err) == MPX_E_ARG);
}

/* The real detector, when the models were fetched: DOT is deterministic,
 * every non-Constant node drawn, and the SVG renders fast. */
/* ---- the model-level view (fold) ------------------------------------------------ */

/* What a reviewer relies on in a folded picture, checked on the plan p:
 * every drawn node is in exactly one box; a box's members share their
 * formats; no runtime cast is hidden inside a box; every box is convex (no
 * data path leaves it and comes back), so the folded graph has no cycles;
 * nodes set by a name: rule stay boxes of their own. Returns the boxes. */
static int check_fold(const mpx_graph *g, const mpx_plan *p, const mpx_rules *r, int fold) {
    mpx_viz_opts o;
    mpx_viz_opts_default(&o);
    o.rules = r;
    o.fold = fold;
    o.fold_by = MPX_VIZ_FOLD_REGIONS;
    char(*ids)[16] = calloc((size_t)g->n_nodes, sizeof *ids);
    int *box = calloc((size_t)g->n_nodes, sizeof *box);
    char *seen = calloc((size_t)g->n_nodes, 1);
    int *stack = calloc((size_t)g->n_nodes, sizeof *stack);
    CHECK_MSG(mpx_viz_node_ids(p, &o, ids, &err) == MPX_OK, "%s", err.msg);
    int boxes = 0, regions = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        bool hidden = g->nodes[i]->op == MPX_OP_Constant || p->nodes[i].folded;
        CHECK_MSG(hidden == (ids[i][0] == '\0'), "node %d: id \"%s\"", i, ids[i]);
        box[i] = ids[i][0] ? atoi(ids[i] + 1) : -1;
        if (box[i] == i) boxes++;
        if (box[i] == i && ids[i][0] == 'r') regions++;
        if (box[i] < 0) continue;
        CHECK_MSG(ids[i][0] == 'n' || ids[i][0] == 'r', "node %d in a box \"%s\"", i, ids[i]);
        const mpx_plan_node *a = &p->nodes[i], *h = &p->nodes[box[i]];
        CHECK_MSG(a->compute == h->compute && a->output == h->output && a->is_float == h->is_float,
                  "node %d does not share its box's formats", i);
        int rule = a->colour_rule;
        if (rule >= 0 && strstr(mpx_rules_text(r, rule), "name:"))
            CHECK_MSG(ids[i][0] == 'n', "node %d set by a name: rule is folded into %s", i, ids[i]);
    }
    for (int k = 0; k < p->n_casts; k++) {
        const mpx_tensor *t = g->tensors[p->casts[k].tensor];
        for (int c = 0; c < p->casts[k].n_consumers && t->producer; c++) {
            int q = p->casts[k].consumers[c];
            if (q >= 0) CHECK_MSG(box[q] != box[t->producer->index], "cast %d inside box %d", k, box[q]);
        }
    }
    /* convexity: from each box's outside consumers, no path back into it */
    for (int b = 0; b < g->n_nodes; b++) {
        if (box[b] != b || ids[b][0] != 'r') continue;
        memset(seen, 0, (size_t)g->n_nodes);
        int sp = 0;
        for (int m = 0; m < g->n_nodes; m++) {
            if (box[m] != b) continue;
            for (int k = 0; k < g->nodes[m]->n_outputs; k++) {
                const mpx_tensor *t = g->nodes[m]->outputs[k];
                for (int c = 0; t && c < t->n_consumers; c++) {
                    int x = t->consumers[c]->index;
                    if (box[x] != b && !seen[x]) seen[x] = 1, stack[sp++] = x;
                }
            }
        }
        while (sp > 0) {
            int m = stack[--sp];
            CHECK_MSG(box[m] != b, "box r%d is not convex: a path leaves it and returns at node %d", b, m);
            if (box[m] == b) break;
            for (int k = 0; k < g->nodes[m]->n_outputs; k++) {
                const mpx_tensor *t = g->nodes[m]->outputs[k];
                for (int c = 0; t && c < t->n_consumers; c++) {
                    int x = t->consumers[c]->index;
                    if (!seen[x]) seen[x] = 1, stack[sp++] = x;
                }
            }
        }
    }
    /* the picture itself: one r<i> node per region, edges but no labels on them */
    char *a = dot_of(p, &o);
    char id[24];
    for (int b = 0; b < g->n_nodes; b++) {
        if (box[b] != b) continue;
        snprintf(id, sizeof id, "\t%s\t[", ids[b]);
        CHECK_MSG(count_of(a, id) == 1, "box %s drawn %d times", ids[b], count_of(a, id));
    }
    CHECK(count_of(a, "shape=hexagon") == p->n_casts);
    free(a);
    free(ids);
    free(box);
    free(seen);
    free(stack);
    CHECK(regions > 0);
    return boxes;
}

static void test_fold(void) {
    mpx_graph *g = load_tiny_cnn(32, 32);
    if (!g) return;
    /* the rule keeps the Relu clear, as its default: only the name: selector
     * makes it a box of its own */
    mpx_rules *r = rules_of(g, RULE "\ncolour name:/backbone/stage2/act/Relu clear");
    mpx_plan *p = plan_of(g, r, NULL);
    int boxes = check_fold(g, p, r, MPX_VIZ_FOLD_BOXES);
    CHECK_MSG(boxes < g->n_nodes * 3 / 4, "tiny_cnn folds into %d boxes of %d nodes", boxes, g->n_nodes);
    mpx_plan_free(p);
    mpx_rules_free(r);
    /* an fp32 squeeze-excitation gate: the block's input and its Mul share
     * formats and an edge, but a box holding both would hide the gate's
     * path between them (not convex) */
    r = rules_of(g, RULE "\ncolour GlobalAveragePool gray\ncolour HardSigmoid red\ncolour Mul green");
    p = plan_of(g, r, NULL);
    check_fold(g, p, r, 1); /* one box's worth: as large as the formats allow */
    check_fold(g, p, r, MPX_VIZ_FOLD_BOXES);
    mpx_plan_free(p);
    mpx_rules_free(r);
    mpx_graph_free(g);
}

/* ---- the scope tree and the fold by scopes ------------------------------------- */

/* The tree's promises (mpx_graph.h), on g's tree: each kept node in one
 * scope, listed there once; totals add up; a parent before its children,
 * children in graph order; no NAME scope of one node, none with no node of
 * its own and one NAME child; a NAME scope's nodes' names start with its
 * path; short names end the names; at most MPX_SCOPE_MAX_CHILDREN children
 * but where groups would hold one each. Returns the tree (caller frees). */
static mpx_scopes *check_scopes(const mpx_graph *g, const bool *skip) {
    mpx_scopes *sc = NULL;
    CHECK_MSG(mpx_graph_scopes(g, skip, &sc, &err) == MPX_OK, "%s", err.msg);
    if (!sc) return NULL;
    CHECK(sc->s[0].kind == MPX_SCOPE_ROOT && sc->s[0].parent == -1);
    int *listed = calloc((size_t)g->n_nodes + 1, sizeof *listed);
    for (int k = 0; k < sc->n; k++) {
        const mpx_scope *x = &sc->s[k];
        int sum = x->n_nodes;
        for (int c = 0; c < x->n_children; c++) {
            int ch = x->children[c];
            CHECK_MSG(ch > k && sc->s[ch].parent == k, "scope %d: child %d", k, ch);
            if (c) CHECK_MSG(sc->s[x->children[c - 1]].first < sc->s[ch].first, "scope %d: children out of order", k);
            sum += sc->s[ch].n_total;
        }
        CHECK_MSG(sum == x->n_total, "scope %d (%s): %d nodes below, total %d", k, x->label, sum, x->n_total);
        if (k && x->kind == MPX_SCOPE_NAME) {
            CHECK_MSG(x->n_total > 1, "scope %s holds one node", x->path);
            CHECK_MSG(!(x->n_nodes == 0 && x->n_children == 1 && sc->s[x->children[0]].kind == MPX_SCOPE_NAME),
                      "scope %s: a chain of one child", x->path);
        }
        if (x->kind != MPX_SCOPE_GROUP)
            CHECK_MSG(x->n_children <= MPX_SCOPE_MAX_CHILDREN, "scope %s: %d children", x->label, x->n_children);
        for (int q = 0; q < x->n_nodes; q++) {
            int i = x->nodes[q];
            CHECK_MSG(sc->of_node[i] == k, "node %d listed in scope %d, of_node %d", i, k, sc->of_node[i]);
            listed[i]++;
            if (q) CHECK(x->nodes[q - 1] < i);
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        bool kept = !skip || !skip[i];
        CHECK_MSG(listed[i] == (kept ? 1 : 0), "node %d listed %d times", i, listed[i]);
        CHECK_MSG(kept == (sc->of_node[i] >= 0), "node %d: scope %d", i, sc->of_node[i]);
        if (!kept) continue;
        const char *nm = g->nodes[i]->name, *sh = sc->short_name[i];
        CHECK_MSG(strlen(sh) <= strlen(nm) && strcmp(nm + strlen(nm) - strlen(sh), sh) == 0, "node %s: short %s", nm, sh);
        for (int a = sc->of_node[i]; a > 0; a = sc->s[a].parent) {
            const mpx_scope *x = &sc->s[a];
            size_t pl = strlen(x->path);
            if (x->kind == MPX_SCOPE_NAME && !g->nodes[i]->guard)
                CHECK_MSG(strncmp(nm, x->path, pl) == 0 && nm[pl] == '/', "node %s in scope %s", nm, x->path);
        }
    }
    free(listed);
    return sc;
}

/* The ids a fold by scopes gives: each drawn node a scope box (p<k>, the
 * node inside scope k), a region or itself; the boxes of the top view are the
 * top's children. Returns how many boxes (scopes, regions, nodes). */
static int check_scope_fold(const mpx_plan *p, const mpx_scopes *sc, int open) {
    const mpx_graph *g = p->g;
    mpx_viz_opts o;
    mpx_viz_opts_default(&o);
    o.fold = MPX_VIZ_FOLD_BOXES;
    o.fold_by = MPX_VIZ_FOLD_SCOPES;
    o.open_scope = open;
    char(*ids)[16] = calloc((size_t)g->n_nodes + 1, sizeof *ids);
    CHECK_MSG(mpx_viz_node_ids(p, &o, ids, &err) == MPX_OK, "%s", err.msg);
    int opened = open > 0 ? open : sc->top, boxes = 0;
    bool *seen_scope = calloc((size_t)sc->n + 1, sizeof *seen_scope);
    for (int i = 0; i < g->n_nodes; i++) {
        int s = sc->of_node[i];
        if (s < 0) {
            CHECK(ids[i][0] == '\0');
            continue;
        }
        if (!mpx_scope_within(sc, s, opened)) {
            CHECK_MSG(ids[i][0] == '\0', "node %d outside the open scope drawn as %s", i, ids[i]);
            continue;
        }
        if (ids[i][0] == 'p') {
            int k = atoi(ids[i] + 1);
            CHECK_MSG(k < sc->n && mpx_scope_within(sc, s, k) && sc->s[k].parent == opened,
                      "node %d (scope %d) in box p%d", i, s, k);
            if (k < sc->n && !seen_scope[k]) seen_scope[k] = true, boxes++;
        } else {
            CHECK_MSG(ids[i][0] == 'n' || ids[i][0] == 'r', "node %d: %s", i, ids[i]);
            CHECK_MSG(s == opened, "node %d of scope %d drawn loose in scope %d", i, s, opened);
            boxes += atoi(ids[i] + 1) == i;
        }
    }
    for (int c = 0; c < sc->s[opened].n_children; c++)
        CHECK_MSG(seen_scope[sc->s[opened].children[c]], "child %d of %d has no box", sc->s[opened].children[c], opened);
    free(seen_scope);
    free(ids);
    return boxes;
}

static void test_scopes(void) {
    mpx_graph *g = load_tiny_cnn(32, 32);
    if (!g) return;
    mpx_rules *r = rules_of(g, RULE);
    mpx_plan *p = plan_of(g, r, NULL);
    bool *skip = calloc((size_t)g->n_nodes + 1, sizeof *skip);
    for (int i = 0; i < g->n_nodes; i++) skip[i] = g->nodes[i]->op == MPX_OP_Constant || p->nodes[i].folded;
    mpx_scopes *sc = check_scopes(g, skip);
    if (sc) {
        /* /backbone/... and /head/...: the root holds both */
        CHECK(mpx_scopes_useful(sc));
        const mpx_scope *top = &sc->s[sc->top];
        CHECK_MSG(top->n_children >= 2, "tiny_cnn's top scope %s has %d children", top->label, top->n_children);
        int boxes = check_scope_fold(p, sc, 0);
        CHECK_MSG(boxes >= 2 && boxes < 12, "tiny_cnn's first view: %d boxes", boxes);
        for (int k = 1; k < sc->n; k++)
            if (!mpx_scope_within(sc, sc->top, k)) check_scope_fold(p, sc, k);
        /* the figures: totals of the root, and casts counted once per border */
        mpx_scope_figures *f = NULL;
        CHECK_MSG(mpx_plan_scope_figures(p, sc, NULL, &f, &err) == MPX_OK, "%s", err.msg);
        if (f) {
            int kept = 0;
            for (int i = 0; i < g->n_nodes; i++) kept += !skip[i];
            CHECK(f[0].nodes == kept && f[0].casts_in + f[0].casts_out == 0);
            CHECK(f[0].casts_inside + f[0].casts_in <= p->n_casts);
            for (int k = 0; k < sc->n; k++) {
                CHECK(f[k].nodes == sc->s[k].n_total);
                int sum = 0;
                for (int c = 1; c < MPX_COLOUR_COUNT; c++) sum += f[k].colours[c];
                CHECK(sum == f[k].nodes);
                /* a cast into scope k: a consumer inside, its value made outside */
                int in = 0;
                for (int c = 0; c < p->n_casts; c++) {
                    const mpx_tensor *t = g->tensors[p->casts[c].tensor];
                    bool src_in = t->producer && sc->of_node[t->producer->index] >= 0 &&
                                  mpx_scope_within(sc, sc->of_node[t->producer->index], k);
                    bool dst_in = false;
                    for (int q = 0; q < p->casts[c].n_consumers; q++) {
                        int n = p->casts[c].consumers[q];
                        dst_in |= n >= 0 && sc->of_node[n] >= 0 && mpx_scope_within(sc, sc->of_node[n], k);
                    }
                    in += dst_in && !src_in;
                }
                CHECK_MSG(f[k].casts_in == in, "scope %s: %d casts in, counted %d", sc->s[k].label, f[k].casts_in, in);
            }
        }
        free(f);
        mpx_scopes_free(sc);
    }
    free(skip);
    /* regions stay as they were when asked for */
    mpx_viz_stats st;
    mpx_viz_opts o;
    mpx_viz_opts_default(&o);
    o.fold = MPX_VIZ_FOLD_BOXES;
    char *a = NULL;
    CHECK(mpx_viz_dot(p, &o, &a, &st, &err) == MPX_OK);
    CHECK_MSG(st.scopes >= 2, "--fold on tiny_cnn: %d scope boxes", st.scopes);
    free(a);
    o.fold_by = MPX_VIZ_FOLD_REGIONS;
    CHECK(mpx_viz_dot(p, &o, &a, &st, &err) == MPX_OK);
    CHECK(st.scopes == 0 && st.chains > 0);
    free(a);
    mpx_plan_free(p);
    mpx_rules_free(r);
    mpx_graph_free(g);

    /* 40 Keras-style layers "model/dense_<k>/...": one scope "model" of 40
     * children, gathered into groups; names without '/' have no scope */
    char *json = malloc(64 * 1024);
    size_t n = (size_t)snprintf(json, 64 * 1024,
                                "{\"format\": \"mpx-model\", \"opset\": 17, \"inputs\": [{\"name\": \"t0\", \"type\": "
                                "\"float32\", \"shape\": [1, 8]}], \"outputs\": [{\"name\": \"t80\", \"type\": \"float32\"}], "
                                "\"nodes\": [");
    for (int k = 0; k < 40; k++)
        n += (size_t)snprintf(json + n, 64 * 1024 - n,
                              "%s{\"name\": \"model/dense_%d/Relu\", \"op\": \"Relu\", \"inputs\": [\"t%d\"], \"outputs\": "
                              "[\"t%d\"]}, {\"name\": \"model/dense_%d/Neg\", \"op\": \"Neg\", \"inputs\": [\"t%d\"], "
                              "\"outputs\": [\"t%d\"]}",
                              k ? ", " : "", k, 2 * k, 2 * k + 1, k, 2 * k + 1, 2 * k + 2);
    snprintf(json + n, 64 * 1024 - n, "]}");
    mpx_error_clear(&err);
    g = mpx_graph_load_json_text(json, strlen(json), "keras.json", NULL, &err);
    CHECK_MSG(g != NULL, "%s", err.msg);
    free(json);
    if (!g) return;
    sc = check_scopes(g, NULL);
    if (sc) {
        const mpx_scope *top = &sc->s[sc->top];
        CHECK_MSG(strcmp(top->label, "model") == 0, "top %s", top->label);
        CHECK_MSG(top->n_children > 1 && top->n_children <= MPX_SCOPE_MAX_CHILDREN, "%d children", top->n_children);
        CHECK(sc->s[top->children[0]].kind == MPX_SCOPE_GROUP);
        CHECK_MSG(strcmp(sc->s[top->children[0]].label, "dense_0 \xe2\x80\xa6 dense_2") == 0, "group %s",
                  sc->s[top->children[0]].label);
        CHECK(strcmp(sc->short_name[0], "Relu") == 0);
        CHECK(mpx_scopes_useful(sc));
        mpx_scopes_free(sc);
    }
    mpx_graph_free(g);

    /* Silero VAD v5: an If whose flattened branches are the model */
    const char *src = getenv("MPX_SRC"), *cache = getenv("MPX_CACHE");
    char path[1024];
    if (cache && *cache) snprintf(path, sizeof path, "%s/vad-web-0.0.31/dist/silero_vad_v5.onnx", cache);
    else snprintf(path, sizeof path, "%s/.cache/vad-web-0.0.31/dist/silero_vad_v5.onnx", src ? src : "..");
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        printf("test_viz: Silero VAD not fetched, its scopes skipped\n");
        return;
    }
    fclose(fp);
    g = mpx_graph_load(path, &err);
    CHECK_MSG(g != NULL, "%s", err.msg);
    if (!g) return;
    sc = check_scopes(g, NULL);
    if (sc) {
        int branches = 0;
        const mpx_scope *top = &sc->s[sc->top];
        for (int c = 0; c < top->n_children; c++) branches += sc->s[top->children[c]].kind == MPX_SCOPE_BRANCH;
        CHECK_MSG(branches == 2, "Silero's top holds %d branches", branches);
        CHECK(strcmp(sc->s[top->children[0]].label, "If_0: then_branch") == 0);
        for (int i = 0; i < g->n_nodes; i++) {
            if (!g->nodes[i]->guard) continue;
            bool in_branch = false;
            for (int q = sc->of_node[i]; q > 0; q = sc->s[q].parent) in_branch |= sc->s[q].kind == MPX_SCOPE_BRANCH;
            CHECK_MSG(in_branch, "branch node %s outside a branch scope", g->nodes[i]->name);
            CHECK_MSG(!strstr(sc->short_name[i], "_branch") && !strstr(sc->short_name[i], "__Inline_"),
                      "branch node %s labelled %s", g->nodes[i]->name, sc->short_name[i]);
        }
        printf("test_viz: Silero VAD v5: %d scopes, top %s with %d children\n", sc->n, top->label[0] ? top->label : "(root)",
               top->n_children);
        mpx_scopes_free(sc);
    }
    mpx_graph_free(g);
}

static void test_ppocr_det(void) {
    const char *src = getenv("MPX_SRC"), *cache = getenv("MPX_CACHE");
    char path[1024];
    if (cache && *cache) snprintf(path, sizeof path, "%s/ocr-models-1.4.2/assets/ch_PP-OCRv4_det_infer.onnx", cache);
    else snprintf(path, sizeof path, "%s/.cache/ocr-models-1.4.2/assets/ch_PP-OCRv4_det_infer.onnx", src ? src : "..");
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("test_viz: PP-OCRv4 det not fetched, skipped (scripts/fetch-models.sh .cache)\n");
        return;
    }
    fclose(f);
    mpx_graph *g = mpx_graph_load(path, &err);
    CHECK_MSG(g != NULL, "%s", err.msg);
    if (!g) return;
    int64_t d[4] = {1, 3, 640, 640};
    CHECK(mpx_graph_bind_input(g, "x", 4, d, &err) == MPX_OK);
    CHECK(mpx_graph_infer(g, &err) == MPX_OK);
    mpx_rules *r = rules_of(g, "colour Conv green when macs >= 100M else gray");
    mpx_plan *p = plan_of(g, r, NULL);
    mpx_viz_opts o;
    mpx_viz_opts_default(&o);
    o.rules = r;
    char *a = dot_of(p, &o), *b = dot_of(p, &o);
    CHECK(strcmp(a, b) == 0);
    int constants = 0;
    for (int i = 0; i < g->n_nodes; i++) constants += g->nodes[i]->op == MPX_OP_Constant || p->nodes[i].folded;
    mpx_viz_stats st;
    char *svg = NULL;
    CHECK_MSG(mpx_viz_svg(p, &o, &svg, &st, &err) == MPX_OK, "%s", err.msg);
    CHECK(st.op_nodes + st.hidden == g->n_nodes && st.hidden == constants);
    CHECK(st.casts == p->n_casts);
    /* Times are printed, not checked: a unit test on a shared machine must not
     * fail on speed (bench/ measures it). */
    printf("test_viz: PP-OCRv4 det 640: %d nodes drawn, SVG %zu bytes, layout %.0f ms, render %.0f ms\n", st.nodes,
           st.bytes, st.ms_layout, st.ms_render);
    /* the model-level view of a real model: its invariants, and few boxes */
    int boxes = check_fold(g, p, r, MPX_VIZ_FOLD_BOXES);
    check_fold(g, p, r, 1);
    printf("test_viz: PP-OCRv4 det folds %d drawn nodes into %d boxes and nodes\n", st.op_nodes, boxes);
    CHECK(boxes * 4 < st.op_nodes);
    free(svg);
    free(a);
    free(b);
    mpx_plan_free(p);
    mpx_rules_free(r);
    mpx_graph_free(g);
}

/* Issue 18's plot, when the models were fetched: five formats on PP-OCRv4
 * det's 330 layers under the default colours. Underflow (in most layers
 * under fp8) is a lane of bars where it passes 1% of a layer's values, not
 * a mark per point; three names clear of everything; red bands inside the
 * frame. */
static void test_ppocr_det_plot(void) {
    const char *src = getenv("MPX_SRC"), *cache = getenv("MPX_CACHE");
    char path[1024];
    if (cache && *cache) snprintf(path, sizeof path, "%s/ocr-models-1.4.2/assets/ch_PP-OCRv4_det_infer.onnx", cache);
    else snprintf(path, sizeof path, "%s/.cache/ocr-models-1.4.2/assets/ch_PP-OCRv4_det_infer.onnx", src ? src : "..");
    FILE *f = fopen(path, "rb");
    if (!f) return; /* test_ppocr_det says it was skipped */
    fclose(f);
    mpx_graph *g = mpx_graph_load(path, &err);
    CHECK_MSG(g != NULL, "%s", err.msg);
    if (!g) return;
    int64_t d[4] = {1, 3, 640, 640};
    CHECK(mpx_graph_bind_input(g, "x", 4, d, &err) == MPX_OK);
    CHECK(mpx_graph_infer(g, &err) == MPX_OK);
    const mpx_format *fmt[5] = {&mpx_format_fp16, &mpx_format_bf16, &mpx_format_tf32, &mpx_format_fp8e4m3_sat,
                                &mpx_format_fp8e5m2};
    static const char *const fname[5] = {"fp16", "bf16", "tf32", "fp8e4m3", "fp8e5m2"};
    mpx_rules *none = mpx_rules_new();
    mpx_plan *pf[5] = {0};
    mpx_compare *cf[5] = {0};
    mpx_viz_series sf[5];
    bool ran = true;
    for (int i = 0; i < 5; i++) {
        pf[i] = plan_of(g, none, fmt[i]);
        cf[i] = pf[i] ? run_of(g, pf[i], 7) : NULL;
        sf[i] = (mpx_viz_series){fname[i], cf[i]};
        ran = ran && cf[i];
    }
    if (ran) {
        mpx_viz_plot_opts po;
        mpx_viz_plot_opts_default(&po);
        po.marks = pf[0];
        char *plot = NULL;
        CHECK_MSG(mpx_viz_plot(sf, 5, &po, &plot, &err) == MPX_OK, "%s", err.msg);
        if (plot) {
            int n_pos = positions_of(cf[0]), points = 0;
            for (int i = 0; i < 5; i++)
                for (int k = 0; k < cf[i]->n_layers; k++) points += cf[i]->layers[k].m.underflow > 0;
            int bars = count_of(plot, "<title>underflow at #"), named = check_labels(plot, "det");
            CHECK(bars > 0 && bars <= n_pos && bars < points);
            CHECK(count_of(plot, "h8 l-4 7 z") == 0);
            CHECK(named == 3);
            CHECK(check_bands(plot, "det") == pf[0]->counts.nodes[MPX_COLOUR_RED]);
            printf("test_viz: PP-OCRv4 det, 5 formats on %d positions: %d layers with underflow, %d underflow bars, "
                   "%d names\n", n_pos, points, bars, named);
            snprintf(path, sizeof path, "%s/plot_det5.svg", tmp_dir());
            write_text(path, plot);
        }
        free(plot);
    }
    for (int i = 0; i < 5; i++) {
        mpx_compare_free(cf[i]);
        mpx_plan_free(pf[i]);
    }
    mpx_rules_free(none);
    mpx_graph_free(g);
}

int main(void) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    test_dot_tiny_cnn();
    test_dot_casts_and_escaping();
    test_svg_and_overlay();
    test_plot_special_values();
    test_fold();
    test_scopes();
    test_plot_layout();
    test_pareto();
    test_ppocr_det();
    test_ppocr_det_plot();
    return check_report("test_viz");
}
