/* scopes.c - the scope tree: the structure a model's node names give it
 * (mpx_graph.h says what a scope is and how the tree is shaped).
 *
 * Built in three steps: a raw tree with one scope per name component (and
 * per If branch), found for every node whether drawn or not (a branch's
 * scope hangs below its If's, which may be skipped); then the reader's shape
 * (single-node scopes dissolved into their parent, chains of one child
 * merged, crowded levels grouped), written out depth first so that a parent
 * comes before its children. */
#include "graph_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct raw {
    int parent;
    mpx_scope_kind kind;
    const char *comp; /* the component (NAME) or the branch key */
    size_t comp_len;
    const char *path; /* literal prefix of the first member's name */
    size_t path_len;
    const char *label; /* BRANCH: "If_0: then_branch" (arena) */
    int *kids, n_kids, cap;
    int direct, total, first;
    int final;
} raw;

typedef struct builder {
    const mpx_graph *g;
    mpx_arena *arena;
    raw *r;
    int n, cap;
    int *memo;   /* [n_nodes] raw scope of each node's name, -1 not yet */
    bool oom;
    mpx_scopes *out;
    int out_cap;
} builder;

/* An inliner's component ("If_0_then_branch__Inline_0__"): no scope. */
static bool inline_comp(const char *c, size_t len) {
    if (len < 12 || c[len - 1] != '_' || c[len - 2] != '_') return false;
    for (size_t i = 0; i + 9 <= len; i++)
        if (memcmp(c + i, "__Inline_", 9) == 0) return true;
    return false;
}

const char *mpx_node_local_name(const mpx_node *n) {
    const char *s = n->name;
    if (n->guard) {
        const char *which = n->branch ? "else_branch" : "then_branch";
        size_t gl = strlen(n->guard->name), wl = strlen(which);
        if (strncmp(s, n->guard->name, gl) == 0 && s[gl] == '/' && strncmp(s + gl + 1, which, wl) == 0 &&
            s[gl + 1 + wl] == '/')
            s += gl + wl + 2;
        /* the inliner's prefix, a component of its own or glued to the name
         * ("If_0_then_branch__Inline_0__/stft/Pad",
         * "If_0_else_branch__Inline_0__Constant_46"), and the exporter's
         * "<if>_then_branch__" ("If_0_then_branch__Introduce_0_id1") */
        const char *gshort = strrchr(n->guard->name, '/');
        gshort = gshort && gshort[1] ? gshort + 1 : n->guard->name;
        size_t l = strcspn(s, "/"), gs = strlen(gshort);
        const char *mark = strstr(s, "__Inline_");
        if (mark && mark < s + l) {
            const char *q = mark + 9;
            while (*q >= '0' && *q <= '9') q++;
            if (q[0] == '_' && q[1] == '_' && q[2] != '\0' && !(q[2] == '/' && !q[3])) s = q[2] == '/' ? q + 3 : q + 2;
        } else if (strncmp(s, gshort, gs) == 0 && s[gs] == '_' && strncmp(s + gs + 1, which, wl) == 0 &&
                   s[gs + 1 + wl] == '_' && s[gs + 2 + wl] == '_' && s[gs + 3 + wl]) {
            s += gs + 3 + wl;
        }
    }
    return s;
}

static int raw_child(builder *b, int parent, mpx_scope_kind kind, const char *comp, size_t len) {
    raw *p = &b->r[parent];
    for (int k = 0; k < p->n_kids; k++) {
        raw *c = &b->r[p->kids[k]];
        if (c->kind == kind && c->comp_len == len && memcmp(c->comp, comp, len) == 0) return p->kids[k];
    }
    if (b->n == b->cap) {
        int nc = b->cap ? 2 * b->cap : 64;
        raw *nr = realloc(b->r, (size_t)nc * sizeof *nr);
        if (!nr) {
            b->oom = true;
            return parent;
        }
        b->r = nr;
        b->cap = nc;
        p = &b->r[parent];
    }
    if (p->n_kids == p->cap) {
        int nc = p->cap ? 2 * p->cap : 4;
        int *nk = realloc(p->kids, (size_t)nc * sizeof *nk);
        if (!nk) {
            b->oom = true;
            return parent;
        }
        p->kids = nk;
        p->cap = nc;
    }
    int id = b->n++;
    p->kids[p->n_kids++] = id;
    raw *c = &b->r[id];
    memset(c, 0, sizeof *c);
    c->parent = parent;
    c->kind = kind;
    c->comp = comp;
    c->comp_len = len;
    c->first = -1;
    c->final = -1;
    return id;
}

/* The raw scope node i's name puts it in (skip or not: a branch's scope
 * hangs below its If's). */
static int name_scope(builder *b, const mpx_node *nd, int depth) {
    int i = nd->index;
    if (i >= 0 && i < b->g->n_nodes && b->g->nodes[i] == nd && b->memo[i] >= 0) return b->memo[i];
    int s = 0;
    const char *local = nd->name;
    if (nd->guard && depth < MPX_MAX_SUBGRAPH_DEPTH) {
        int gs = name_scope(b, nd->guard, depth + 1);
        const char *which = nd->branch ? "else_branch" : "then_branch";
        /* keyed by the If's full name and the branch: two Ifs of one scope
         * have two branches each */
        size_t kl = strlen(nd->guard->name) + strlen(which) + 2;
        char *key = mpx_arena_alloc(b->arena, kl);
        const char *gshort = strrchr(nd->guard->name, '/');
        gshort = gshort && gshort[1] ? gshort + 1 : nd->guard->name;
        size_t ll = strlen(gshort) + strlen(which) + 3;
        char *label = mpx_arena_alloc(b->arena, ll);
        if (!key || !label) {
            b->oom = true;
            return 0;
        }
        snprintf(key, kl, "%s/%s", nd->guard->name, which);
        snprintf(label, ll, "%s: %s", gshort, which);
        s = raw_child(b, gs, MPX_SCOPE_BRANCH, key, kl - 1);
        if (b->oom) return 0;
        b->r[s].label = label;
        if (!b->r[s].path) {
            b->r[s].path = key;
            b->r[s].path_len = kl - 1;
        }
        local = mpx_node_local_name(nd);
    }
    /* every component but the last names a scope */
    for (const char *p = local;;) {
        while (*p == '/') p++;
        size_t l = strcspn(p, "/");
        if (!p[l]) break; /* the last: the node's own name */
        if (l && !inline_comp(p, l)) {
            s = raw_child(b, s, MPX_SCOPE_NAME, p, l);
            if (b->oom) return 0;
            if (!b->r[s].path) {
                b->r[s].path = nd->name;
                b->r[s].path_len = (size_t)(p + l - nd->name);
            }
        }
        p += l;
    }
    if (i >= 0 && i < b->g->n_nodes && b->g->nodes[i] == nd) b->memo[i] = s;
    return s;
}

static bool alive(const builder *b, int s) {
    const raw *r = &b->r[s];
    if (s == 0) return true;
    if (r->kind == MPX_SCOPE_BRANCH) return r->total > 0;
    return r->total > 1; /* a scope of one node is that node */
}

/* Children of raw s that stay, by their first node. */
static int alive_kids(const builder *b, int s, int *out) {
    int n = 0;
    const raw *r = &b->r[s];
    for (int k = 0; k < r->n_kids; k++)
        if (alive(b, r->kids[k])) out[n++] = r->kids[k];
    /* insertion sort: few children, mostly in order already */
    for (int i = 1; i < n; i++) {
        int x = out[i], j = i;
        while (j > 0 && b->r[out[j - 1]].first > b->r[x].first) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return n;
}

static int new_final(builder *b, mpx_scope_kind kind, int parent, const char *label, const char *path) {
    mpx_scopes *o = b->out;
    if (o->n == b->out_cap) {
        int nc = b->out_cap ? 2 * b->out_cap : 64;
        mpx_scope *ns = realloc(o->s, (size_t)nc * sizeof *ns);
        if (!ns) {
            b->oom = true;
            return -1;
        }
        o->s = ns;
        b->out_cap = nc;
    }
    int id = o->n++;
    mpx_scope *s = &o->s[id];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->parent = parent;
    s->depth = parent >= 0 ? o->s[parent].depth + 1 : 0;
    s->label = label ? label : "";
    s->path = path ? path : "";
    s->first = -1;
    return id;
}

static const char *arena_strn(builder *b, const char *s, size_t n) {
    char *c = mpx_arena_alloc(b->arena, n + 1);
    if (!c) {
        b->oom = true;
        return "";
    }
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

static void emit(builder *b, int s, int parent, int depth);

/* Children kids[0..n) of final scope f: gathered into groups when many. */
static void emit_kids(builder *b, const int *kids, int n, int f, int depth) {
    if (n <= MPX_SCOPE_MAX_CHILDREN) {
        for (int k = 0; k < n && !b->oom; k++) emit(b, kids[k], f, depth + 1);
        return;
    }
    int per = (n + MPX_SCOPE_MAX_CHILDREN - 1) / MPX_SCOPE_MAX_CHILDREN;
    for (int k = 0; k < n && !b->oom; k += per) {
        int m = n - k < per ? n - k : per;
        if (m == 1) {
            emit(b, kids[k], f, depth + 1);
            continue;
        }
        const raw *a = &b->r[kids[k]], *z = &b->r[kids[k + m - 1]];
        size_t ll = a->comp_len + z->comp_len + 8;
        char *label = mpx_arena_alloc(b->arena, ll);
        if (!label) {
            b->oom = true;
            return;
        }
        snprintf(label, ll, "%.*s \xe2\x80\xa6 %.*s", (int)a->comp_len, a->comp, (int)z->comp_len, z->comp);
        if (a->kind == MPX_SCOPE_BRANCH) snprintf(label, ll, "%s \xe2\x80\xa6", a->label ? a->label : "");
        int gid = new_final(b, MPX_SCOPE_GROUP, f, label, "");
        if (gid < 0) return;
        for (int q = 0; q < m && !b->oom; q++) emit(b, kids[k + q], gid, depth + 1);
    }
}

static void emit(builder *b, int s, int parent, int depth) {
    if (depth > 1024) return; /* deeper than any name: a guard against a pathological one */
    const raw *r = &b->r[s];
    int *kids = malloc(((size_t)r->n_kids + 1) * sizeof *kids);
    if (!kids) {
        b->oom = true;
        return;
    }
    int nk = alive_kids(b, s, kids);
    const char *label = "", *path = "";
    size_t label_len = 0, path_len = 0;
    if (s != 0) {
        label = r->kind == MPX_SCOPE_BRANCH ? r->label : r->comp;
        label_len = r->kind == MPX_SCOPE_BRANCH ? strlen(r->label) : r->comp_len;
        path = r->path;
        path_len = r->path_len;
    }
    /* a scope with no node of its own and one child is one scope with it:
     * the raw scopes of the chain all become the one final scope */
    int chain[64], n_chain = 0, cur = s;
    chain[n_chain++] = s;
    while (s != 0 && b->r[cur].direct == 0 && nk == 1 && b->r[kids[0]].kind == MPX_SCOPE_NAME && n_chain < 64) {
        const raw *c = &b->r[kids[0]];
        if (r->kind == MPX_SCOPE_NAME) {
            size_t nl = label_len + 1 + c->comp_len;
            char *l2 = mpx_arena_alloc(b->arena, nl + 1);
            if (!l2) {
                b->oom = true;
                free(kids);
                return;
            }
            memcpy(l2, label, label_len);
            l2[label_len] = '/';
            memcpy(l2 + label_len + 1, c->comp, c->comp_len);
            l2[nl] = '\0';
            label = l2;
            label_len = nl;
        }
        path = c->path;
        path_len = c->path_len;
        cur = kids[0];
        chain[n_chain++] = cur;
        int *nk2 = realloc(kids, ((size_t)b->r[cur].n_kids + 1) * sizeof *kids);
        if (!nk2) {
            b->oom = true;
            free(kids);
            return;
        }
        kids = nk2;
        nk = alive_kids(b, cur, kids);
    }
    int f = new_final(b, s == 0 ? MPX_SCOPE_ROOT : r->kind, parent, arena_strn(b, label, label_len),
                      arena_strn(b, path, path_len));
    if (f >= 0) {
        for (int q = 0; q < n_chain; q++) b->r[chain[q]].final = f;
        emit_kids(b, kids, nk, f, depth);
    }
    free(kids);
}

mpx_status mpx_graph_scopes(const mpx_graph *g, const bool *skip, mpx_scopes **out, mpx_error *err) {
    *out = NULL;
    builder b;
    memset(&b, 0, sizeof b);
    b.g = g;
    mpx_scopes *o = calloc(1, sizeof *o);
    size_t nn = (size_t)g->n_nodes + 1;
    if (o) {
        o->arena = mpx_arena_new();
        o->of_node = malloc(nn * sizeof *o->of_node);
        o->short_name = calloc(nn, sizeof *o->short_name);
    }
    b.memo = malloc(nn * sizeof *b.memo);
    b.out = o;
    if (!o || !o->arena || !o->of_node || !o->short_name || !b.memo) goto oom;
    b.arena = o->arena;
    o->n_graph_nodes = g->n_nodes;
    for (int i = 0; i < g->n_nodes; i++) b.memo[i] = -1;
    b.cap = 64;
    b.r = calloc((size_t)b.cap, sizeof *b.r);
    if (!b.r) goto oom;
    b.n = 1;
    b.r[0].first = -1;
    b.r[0].kind = MPX_SCOPE_ROOT;
    b.r[0].parent = -1;
    for (int i = 0; i < g->n_nodes && !b.oom; i++) name_scope(&b, g->nodes[i], 0);
    if (b.oom) goto oom;
    /* totals: children are made after their parents */
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        if (skip && skip[i]) continue;
        raw *r = &b.r[b.memo[i]];
        r->total++;
        r->first = i;
    }
    for (int s = b.n - 1; s > 0; s--) {
        raw *r = &b.r[s], *p = &b.r[r->parent];
        p->total += r->total;
        if (r->first >= 0 && (p->first < 0 || r->first < p->first)) p->first = r->first;
    }
    /* each node in the nearest scope that stays */
    int *eff = malloc(nn * sizeof *eff);
    if (!eff) goto oom;
    for (int i = 0; i < g->n_nodes; i++) {
        if (skip && skip[i]) {
            eff[i] = -1;
            continue;
        }
        int s = b.memo[i];
        while (s != 0 && !alive(&b, s)) s = b.r[s].parent;
        eff[i] = s;
        b.r[s].direct++;
    }
    emit(&b, 0, -1, 0);
    if (b.oom) {
        free(eff);
        goto oom;
    }
    /* nodes into their final scopes, in graph order */
    int *cnt = calloc((size_t)o->n + 1, sizeof *cnt);
    if (!cnt) {
        free(eff);
        goto oom;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        int f = eff[i] >= 0 ? b.r[eff[i]].final : -1;
        o->of_node[i] = f;
        if (f >= 0) cnt[f]++;
    }
    free(eff);
    for (int s = 0; s < o->n; s++) {
        mpx_scope *sc = &o->s[s];
        sc->nodes = mpx_arena_alloc(o->arena, ((size_t)cnt[s] + 1) * sizeof *sc->nodes);
        if (!sc->nodes) {
            free(cnt);
            goto oom;
        }
    }
    for (int s = 1; s < o->n; s++) o->s[o->s[s].parent].n_children++;
    for (int s = 0; s < o->n; s++) {
        mpx_scope *sc = &o->s[s];
        sc->children = mpx_arena_alloc(o->arena, ((size_t)sc->n_children + 1) * sizeof *sc->children);
        if (!sc->children) {
            free(cnt);
            goto oom;
        }
        sc->n_children = 0;
    }
    for (int s = 1; s < o->n; s++) {
        mpx_scope *p = &o->s[o->s[s].parent];
        p->children[p->n_children++] = s;
    }
    free(cnt);
    for (int i = 0; i < g->n_nodes; i++) {
        int f = o->of_node[i];
        o->short_name[i] = g->nodes[i]->name;
        if (f < 0) continue;
        mpx_scope *sc = &o->s[f];
        sc->nodes[sc->n_nodes++] = i;
        if (f != 0) o->n_scoped++;
        const char *nm = g->nodes[i]->name;
        size_t pl = strlen(sc->path);
        if (sc->kind == MPX_SCOPE_NAME && pl && strncmp(nm, sc->path, pl) == 0 && nm[pl] == '/')
            o->short_name[i] = nm + pl + 1;
        else if (g->nodes[i]->guard)
            o->short_name[i] = mpx_node_local_name(g->nodes[i]);
        for (int a = f; a >= 0; a = o->s[a].parent) {
            o->s[a].n_total++;
            if (o->s[a].first < 0) o->s[a].first = i;
        }
    }
    o->top = 0;
    while (o->s[o->top].n_nodes == 0 && o->s[o->top].n_children == 1) o->top = o->s[o->top].children[0];
    for (int s = 0; s < b.n; s++) free(b.r[s].kids);
    free(b.r);
    free(b.memo);
    *out = o;
    return MPX_OK;
oom:
    if (b.r)
        for (int s = 0; s < b.n; s++) free(b.r[s].kids);
    free(b.r);
    free(b.memo);
    mpx_scopes_free(o);
    return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
}

void mpx_scopes_free(mpx_scopes *s) {
    if (!s) return;
    free(s->s);
    free(s->of_node);
    free(s->short_name);
    if (s->arena) mpx_arena_free(s->arena);
    free(s);
}

bool mpx_scope_within(const mpx_scopes *sc, int s, int a) {
    for (int depth = 0; s >= 0 && depth <= sc->n; depth++, s = sc->s[s].parent)
        if (s == a) return true;
    return false;
}

bool mpx_scopes_useful(const mpx_scopes *sc) {
    if (!sc || sc->n < 2) return false;
    const mpx_scope *t = &sc->s[sc->top];
    return 2 * sc->n_scoped >= sc->s[0].n_total && t->n_children >= 2 - (t->n_nodes > 0);
}
