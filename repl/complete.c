/* complete.c - tab completion from the command table.
 *
 * What completes depends on the command and the word's position: the row's
 * spec (repl/commands.c) says what each word and each --option's value is,
 * and names come from the tables that define them (commands, op types,
 * formats, colours, rule figures, metrics, settings) or from the model
 * (nodes, tensors, inputs). Grammars a spec cannot say (input, data,
 * colour rules, set, conditions) have a completer named in their row.
 * Only repl/ completes; the prompt (main.c) hands the candidates to libedit.
 */
#include "repl_internal.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What completes depends on the command and the word's position: command
 * names first, then op types, node names, formats, colours, file paths. The
 * candidates are gathered (those starting with the word) into one list that
 * the generator hands to libedit one by one. */

static const mpx_session *completing; /* the session whose names complete */

static struct {
    char **v;
    int n, cap, next;
} cands;

static bool cands_grow(void) {
    int cap = cands.cap ? cands.cap * 2 : 64;
    char **grown = realloc(cands.v, (size_t)cap * sizeof *grown);
    if (!grown) return false;
    cands.v = grown;
    cands.cap = cap;
    return true;
}

static void cands_reset(void) {
    for (int i = 0; i < cands.n; i++) free(cands.v[i]);
    cands.n = cands.next = 0;
}

/* Add head + word when it starts with prefix (head: the part of the word
 * before the item completed, e.g. "Conv," in a selector list). */
static void cand2(const char *prefix, const char *head, const char *word) {
    size_t hl = strlen(head), wl = strlen(word);
    char *c = malloc(hl + wl + 1);
    if (!c) return;
    memcpy(c, head, hl);
    memcpy(c + hl, word, wl + 1);
    if (strncmp(c, prefix, strlen(prefix)) != 0 || (cands.n == cands.cap && !cands_grow())) {
        free(c);
        return;
    }
    cands.v[cands.n++] = c;
}

static void cand(const char *prefix, const char *word) { cand2(prefix, "", word); }

static void cand_list(const char *prefix, const char *const *words) {
    for (; *words; words++) cand(prefix, *words);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted, each once (an op type is both in the registry and the graph). */
static void cands_unique(void) {
    qsort(cands.v, (size_t)cands.n, sizeof *cands.v, cmp_str);
    int k = 0;
    for (int i = 0; i < cands.n; i++) {
        if (k && strcmp(cands.v[k - 1], cands.v[i]) == 0) free(cands.v[i]);
        else cands.v[k++] = cands.v[i];
    }
    cands.n = k;
}


/* Names come from the tables that define them: formats (numerics), colours
 * and rule figures (colour), metrics (numerics/metrics.def). */
static void cand_formats(const char *text) {
    for (size_t i = 0; mpx_format_at(i); i++) cand(text, mpx_format_at(i)->name);
}

static void cand_colours(const char *text) {
    for (int c = 1; c < MPX_COLOUR_COUNT; c++) cand(text, mpx_colour_name((mpx_colour)c));
}

static void cand_figures(const char *text) {
    for (size_t i = 0; mpx_rule_figure_at(i); i++) cand(text, mpx_rule_figure_at(i));
}

static void cand_metrics(const char *text) {
    for (int m = 0; m < MPX_METRIC_COUNT; m++) cand(text, mpx_metric_info_of((mpx_metric_id)m)->name);
}

static void cand_commands(const char *text) {
    int n = 0;
    const mpx_command *c = mpx_commands(&n);
    for (int i = 0; i < n; i++) cand(text, c[i].name);
    cand(text, "exit");
}

/* Op types a selector may name: the registry's and the model's own. */
static void cand_ops(const char *text, const char *head) {
    for (int op = 1; op < MPX_OP_COUNT; op++) cand2(text, head, mpx_op_name((mpx_op)op));
    const mpx_graph *g = completing ? completing->graph : NULL;
    for (int i = 0; g && i < g->n_nodes; i++) cand2(text, head, g->nodes[i]->op_type);
}

static void cand_nodes(const char *text, const char *head) {
    const mpx_graph *g = completing ? completing->graph : NULL;
    for (int i = 0; g && i < g->n_nodes; i++) cand2(text, head, g->nodes[i]->name);
}

static void cand_tensors(const char *text) {
    const mpx_graph *g = completing ? completing->graph : NULL;
    for (int i = 0; g && i < g->n_tensors; i++) cand(text, g->tensors[i]->name);
}

static void cand_inputs(const char *text) {
    const mpx_graph *g = completing ? completing->graph : NULL;
    for (int i = 0; g && i < g->n_inputs; i++) cand(text, g->inputs[i]->name);
}

/* A selector: items separated by commas; complete the last one, an op type
 * or name:<node>. */
static void cand_selector(const char *text) {
    const char *comma = strrchr(text, ',');
    size_t hl = comma ? (size_t)(comma - text) + 1 : 0;
    char head[512];
    if (hl >= sizeof head) return;
    memcpy(head, text, hl);
    head[hl] = '\0';
    const char *item = text + hl;
    if (strncmp(item, "name:", 5) == 0) {
        if (hl + 5 >= sizeof head) return;
        memcpy(head + hl, "name:", 6);
        cand_nodes(text, head);
    } else {
        cand_ops(text, head);
        cand2(text, head, "*");
    }
}

/* Paths: entries of the word's folder; folders end in '/'. Hidden entries
 * only when the word asks for them. */
static void cand_files(const char *text) {
    const char *slash = strrchr(text, '/');
    char dir[4096];
    size_t dl = slash ? (size_t)(slash - text) + 1 : 0;
    if (dl >= sizeof dir) return;
    memcpy(dir, text, dl);
    dir[dl] = '\0';
    const char *base = text + dl;
    DIR *d = opendir(dl ? dir : ".");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0) continue;
        if (nm[0] == '.' && base[0] != '.') continue;
        if (strncmp(nm, base, strlen(base)) != 0) continue;
        char full[8192];
        snprintf(full, sizeof full, "%s%s", dir, nm);
        struct stat st;
        bool is_dir = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
        if (is_dir) strncat(full, "/", sizeof full - strlen(full) - 1);
        cand(text, full);
    }
    closedir(d);
}

static bool is(const char *a, const char *b) { return a && strcmp(a, b) == 0; }

static void cand_choices(const char *text, const char *choices) {
    char w[64];
    for (int k = 0; repl_choice_at(choices, k, w, sizeof w); k++) cand(text, w);
}

static void cand_kind(const char *text, mpx_word_kind k, const char *choices) {
    switch (k) {
    case MPX_WORD_FILE: cand_files(text); break;
    case MPX_WORD_NODE: cand_nodes(text, ""); break;
    case MPX_WORD_NODE_OR_TENSOR:
        cand_nodes(text, "");
        cand_tensors(text);
        break;
    case MPX_WORD_FORMAT: cand_formats(text); break;
    case MPX_WORD_METRIC: cand_metrics(text); break;
    case MPX_WORD_COMMAND: cand_commands(text); break;
    case MPX_WORD_CHOICE: cand_choices(text, choices); break;
    case MPX_WORD_TEXT: break;
    }
}

/* An option's value, by its type (numbers and text: nothing to offer). */
static void cand_value(const char *text, const mpx_opt *o) {
    char w[64];
    switch (o->type) {
    case MPX_OPT_PATH: cand_files(text); break;
    case MPX_OPT_NODE: cand_nodes(text, ""); break;
    case MPX_OPT_NODES:
        cand_nodes(text, "");
        cand_tensors(text);
        break;
    case MPX_OPT_CHOICE:
        for (int k = 0; repl_opt_choice(o, k, w, sizeof w); k++) cand(text, w);
        break;
    case MPX_OPT_FLAG:
    case MPX_OPT_INT:
    case MPX_OPT_NUMBER:
    case MPX_OPT_TEXT:
    case MPX_OPT_SHARD: break;
    }
}

/* ---- grammars the spec cannot say ---------------------------------------------- */

void repl_complete_input(const char *text, int pos, char **w) {
    static const char *const kinds[] = {"shape", "random", "const", "file", "image", "audio", "files", NULL};
    static const char *const dists[] = {"normal", "uniform", "seed", NULL};
    static const char *const file_kinds[] = {"npy", "image", "audio", NULL};
    const char *prev = w[pos - 1];
    /* input x files '<glob>' image [options]: the kind is the fifth word */
    bool per_file = pos >= 5 && is(w[2], "files");
    const char *kind = per_file ? w[4] : pos >= 3 ? w[2] : "";
    if (pos == 1) cand_inputs(text);
    else if (pos == 2) cand_list(text, kinds);
    else if (pos == 3 && is(w[2], "random")) cand_list(text, dists);
    else if (pos == 3 && (is(w[2], "file") || is(w[2], "image") || is(w[2], "audio") || is(w[2], "files")))
        cand_files(text);
    else if (pos == 4 && is(w[2], "files")) cand_list(text, file_kinds);
    else if (pos == 4 && is(w[2], "file")) cand(text, "convert");
    else if (pos >= 4 && (is(kind, "image") || is(kind, "audio"))) {
        /* an option's value (its choices), else the options' names */
        const mpx_opt *table = is(kind, "image") ? repl_image_keywords : repl_audio_keywords;
        for (const mpx_opt *k = table; k->name; k++)
            if (is(prev, k->name)) {
                if (k->type != MPX_OPT_FLAG) cand_value(text, k);
                return;
            }
        for (const mpx_opt *k = table; k->name; k++) cand(text, k->name);
        if (per_file)
            for (int k = DATA_LIMIT; k < DATA_KEYWORD_COUNT; k++) cand(text, repl_data_keywords[k].name);
    }
}

void repl_complete_profile(const char *text, int pos, char **w) {
    (void)w;
    if (pos == 1)
        for (int k = 0; mpx_profile_name(k); k++) cand(text, mpx_profile_name(k));
}

void repl_complete_data(const char *text, int pos, char **w) {
    (void)w;
    if (pos == 1) {
        cand_files(text);
        cand(text, "off");
    } else {
        for (const mpx_opt *k = repl_data_keywords; k->name; k++) cand(text, k->name);
    }
}

/* colour/color <selector> <colour> [when <expr> [else <colour>]], and
 * accum with formats where colour has colours. */
void repl_complete_rule(const char *text, int pos, char **w) {
    const char *prev = w[pos - 1];
    bool accum = w[0][0] == 'a';
    if (pos == 1) cand_selector(text);
    else if (pos == 2 || is(prev, "else")) accum ? cand_formats(text) : cand_colours(text);
    else if (pos == 3) cand(text, "when");
    else if (is(prev, "when") || is(prev, "and") || is(prev, "or") || is(prev, "not") || is(prev, "("))
        cand_figures(text);
}

/* assert/search <figure> <op> <number> [and ...]: figures first and after
 * and (a tensor's <tensor>.<metric> is typed, not listed). */
/* A figure: the plan's and run's own, output., worst. and out[<output>].;
 * after <what>. its metric. */
void repl_complete_condition(const char *text, int pos, char **w) {
    if (!(pos == 1 || is(w[pos - 1], "and"))) return;
    const mpx_graph *g = completing ? completing->graph : NULL;
    const char *dot = mpx_figure_metric_dot(text);
    bool in_out = strncmp(text, "out[", 4) == 0;
    if (in_out && !strstr(text, "].")) dot = NULL; /* still in the output's name (which may hold dots) */
    if (dot) {
        char head[1024];
        snprintf(head, sizeof head, "%.*s", (int)(dot - text + 1), text);
        for (int i = 0; i < MPX_METRIC_COUNT; i++) cand2(text, head, mpx_metric_info_of((mpx_metric_id)i)->name);
        cand2(text, head, "absmax");
        cand2(text, head, "local");
        for (int i = 0; i < MPX_TASK_COUNT; i++) cand2(text, head, mpx_task_name((mpx_task_id)i));
        return;
    }
    mpx_figure_names(text, cand);
    cand(text, "output.");
    cand(text, "worst.");
    char o[1024];
    for (int k = 0; g && k < g->n_outputs; k++)
        if (g->outputs[k]) {
            snprintf(o, sizeof o, "out[%s].", g->outputs[k]->name);
            cand(text, o);
        }
}

static void gather(const char *text, int pos, char **w);

/* sweep <name> in <values> : <command>: after the colon, the command's own. */
void repl_complete_sweep(const char *text, int pos, char **w) {
    for (int i = 1; i < pos; i++)
        if (is(w[i], ":")) {
            gather(text, pos - i - 1, w + i + 1);
            return;
        }
    if (pos == 2) cand(text, "in");
}

void repl_complete_set(const char *text, int pos, char **w) {
    if (pos == 1) repl_setting_names(text, cand);
    else if (pos == 2) cand_choices(text, repl_setting_choices(w[1]));
}

/* ---- the spec ---------------------------------------------------------------- */

/* Candidates for word number pos (0 = the command) given the words before. */
static void gather(const char *text, int pos, char **w) {
    if (pos == 0) {
        cand_commands(text);
        return;
    }
    const mpx_command *c = mpx_command_find(w[0]);
    if (!c) return;
    if (text[0] == '-' && c->options) {
        for (const mpx_opt *o = c->options; o->name; o++) cand(text, o->name);
        return;
    }
    /* The word after an --option that takes values is that value. */
    for (int back = 1; back <= 2 && pos - back >= 1; back++) {
        const mpx_opt *o = mpx_command_option(c, w[pos - back]);
        if (!o) continue;
        if (back == 1 && o->type != MPX_OPT_FLAG) {
            cand_value(text, o);
            return;
        }
        if (back == 2 && o->type2 != MPX_OPT_FLAG) return; /* --around <node> <depth> */
    }
    if (c->complete) {
        c->complete(text, pos, w);
        return;
    }
    /* The k-th word that is not an option or an option's value. */
    int k = 0;
    for (int i = 1; i < pos; i++) {
        const mpx_opt *o = mpx_command_option(c, w[i]);
        if (!o) {
            k++;
            continue;
        }
        i += repl_opt_takes(o, i, pos, w);
    }
    if (c->max_args >= 0 && k >= c->max_args) return;
    int last = (int)(sizeof c->args / sizeof c->args[0]) - 1;
    cand_kind(text, c->args[k < last ? k : last], c->choices);
}

int repl_complete(const mpx_session *s, const char *text, int pos, char **words) {
    completing = s;
    cands_reset();
    gather(text, pos, words);
    cands_unique();
    return cands.n;
}

void repl_complete_free(void) {
    cands_reset();
    free(cands.v);
    cands.v = NULL;
    cands.cap = 0;
    completing = NULL;
}

char *repl_complete_take(void) {
    if (cands.next >= cands.n) return NULL;
    char *c = cands.v[cands.next];
    cands.v[cands.next++] = NULL; /* the taker frees it */
    return c;
}

const char *repl_complete_peek(int i) { return i >= 0 && i < cands.n ? cands.v[i] : NULL; }
