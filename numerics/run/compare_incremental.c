/* compare_incremental.c - the run from the incremental cache: which nodes
 * a plan change makes dirty, which cached values they read, which values
 * are made again, and what the cache holds after (compare_cache_internal.h;
 * the cache itself: compare_cache.c). */
#include "compare_cache_internal.h"

#include <stdlib.h>
#include <string.h>

/* A view of a cached value: the cache keeps it (freeing the view frees
 * nothing). */
static void view(mpx_value *dst, const mpx_value *src) {
    *dst = *src;
    if (dst->n >= 0) dst->borrowed = true;
}

/* Tensor t's candidate value is the reference's (same): a view of the
 * reference's where that is at hand; where it is absent and t changed
 * (a shared node's output), absent too (compare the run below). */
static void read_same(int t, const bool *same, const bool *changed, const mpx_value *ref, mpx_value *cand) {
    if (!same[t] || (ref[t].n < 0 && !changed[t]) || (cand[t].n >= 0 && !cand[t].borrowed)) return;
    mpx_value_free(&cand[t]);
    if (ref[t].n >= 0) view(&cand[t], &ref[t]);
}

/* Frees the remade values (last[t] >= 0) that nodes lo..hi read for the
 * last time, unless kept; their bytes. */
static size_t free_remade(const mpx_graph *g, const mpx_compare_opts *opts, int lo, int hi, int *last,
                          mpx_value *cand) {
    size_t freed = 0;
    for (int q = lo; q <= hi; q++) {
        const mpx_node *n = g->nodes[q];
        for (int j = 0; j < n->n_inputs; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (!t || last[t->index] < 0 || last[t->index] > hi || mpx_cmp_kept(g, opts, t->index)) continue;
            freed += mpx_value_bytes(&cand[t->index]);
            mpx_value_free(&cand[t->index]);
            last[t->index] = -1;
        }
    }
    return freed;
}

/* Tensor t's reference value for the run: the cache's, else, for a value
 * full runs leave out (cache_plan_lean), made again by its producer
 * (rregen) unless dropped over budget since. False: a full run (as for a
 * value left out as unmeasured: making those again is a full run's work
 * holding every value at once). */
static bool ref_at_hand(const mpx_compare_cache *k, const mpx_tensor *t) {
    return k->ref[t->index].n >= 0 || (k->rank[t->index] >= k->evict && k->lean[t->index] && t->producer);
}

static bool need_ref(const mpx_compare_cache *k, const mpx_tensor *t, bool *rregen) {
    if (k->ref[t->index].n >= 0) return true;
    if (!ref_at_hand(k, t)) return false;
    rregen[t->producer->index] = true;
    return true;
}

/* Tensor t's candidate value for the run: a dirty node's (changed), the
 * cache's, else made again by its producer (regen). */
static bool need_cand(const mpx_compare_cache *k, const mpx_tensor *t, const bool *changed, bool *regen) {
    if (changed[t->index] || k->cand[t->index].n >= 0) return true;
    if (!t->producer) return false;
    regen[t->producer->index] = true;
    return true;
}

/* Node n's outputs (outs, just made with scratch bytes beside them) into
 * vals, replacing what vals held of them (a view of a cached value counts
 * no bytes; a value the run made is freed and uncounted); the bytes live
 * after, with *peak raised to the most held at once. */
static size_t take_outs(const mpx_node *n, size_t scratch, mpx_value *outs, mpx_value *vals, size_t live,
                        size_t *peak) {
    size_t o = mpx_cmp_outs_bytes(outs, n->n_outputs);
    if (live + scratch + o > *peak) *peak = live + scratch + o;
    for (int j = 0; j < n->n_outputs; j++) {
        const mpx_tensor *t = n->outputs[j];
        if (!t) {
            mpx_value_free(&outs[j]);
            continue;
        }
        live -= mpx_value_bytes(&vals[t->index]);
        mpx_value_free(&vals[t->index]);
        mpx_cmp_take(&vals[t->index], &outs[j]);
        live += mpx_value_bytes(&vals[t->index]);
    }
    return live;
}

/* Layer L's figures from the run's values of its tensor, the time they
 * took added to c's; an error names the node and the output. */
static mpx_status measure_layer(const mpx_graph *g, mpx_compare *c, mpx_layer *L, const mpx_value *ref,
                                const mpx_value *cand, mpx_error *err) {
    const mpx_tensor *t = g->tensors[L->tensor];
    L->unmeasured = false;
    double t0 = mpx_cmp_now_ms();
    mpx_error e;
    mpx_error_clear(&e);
    mpx_status st = mpx_metrics_compute(&ref[t->index], &cand[t->index], L->fmt, &L->m, &e);
    c->ms_metrics += mpx_cmp_now_ms() - t0;
    if (st == MPX_OK) return MPX_OK;
    const mpx_node *n = g->nodes[L->node];
    return mpx_error_set(err, st, "node \"%s\" (%s): output \"%s\": %s", n->name, n->op_type, t->name, e.msg);
}

/* The run from the cache k (which fits g and the inputs). MPX_OK with *out
 * NULL: a value it needs is not cached, run in full. A run that fails
 * leaves the cache describing the run before it, less the candidate values
 * a run that cannot be undone had let go of (below). */
mpx_status mpx_cmp_run_incremental(mpx_compare_cache *k, const mpx_graph *g, const mpx_assign *a,
                                  const mpx_value *inputs, const mpx_compare_opts *opts,
                                  mpx_compare **out, mpx_error *err) {
    int nt = g->n_tensors, nn = g->n_nodes, max_out = 1;
    *out = NULL;
    mpx_cmp_undo_drop(k); /* the run before stands from now on */
    for (int i = 0; i < nn; i++)
        if (g->nodes[i]->n_outputs > max_out) max_out = g->nodes[i]->n_outputs;
    bool *dirty = mpx_cmp_alloc_n(nn, sizeof *dirty), *changed = mpx_cmp_alloc_n(nt, sizeof *changed),
         *layer = mpx_cmp_alloc_n(nt, sizeof *layer), *want = mpx_cmp_alloc_n(nt, sizeof *want),
         *regen = mpx_cmp_alloc_n(nn, sizeof *regen), *rregen = mpx_cmp_alloc_n(nn, sizeof *rregen),
         *hold = mpx_cmp_alloc_n(nt, sizeof *hold), *same = mpx_cmp_alloc_n(nt, sizeof *same),
         *inner = mpx_cmp_alloc_n(nt, sizeof *inner), *whole = mpx_cmp_alloc_n(nt, sizeof *whole),
         *pass = mpx_cmp_alloc_n(nt, sizeof *pass),
         *share = mpx_cmp_alloc_n(nn, sizeof *share);
    int *last = mpx_cmp_alloc_n(nt, sizeof *last); /* a remade value's last reader; -1: not remade */
    int *plast = mpx_cmp_alloc_n(nt, sizeof *plast); /* a passed-through value's last reader */
    int *lfirst = mpx_cmp_alloc_n(nn, sizeof *lfirst); /* a node's first layer; -1: none */
    mpx_value *ref = mpx_cmp_alloc_values(nt), *cand = mpx_cmp_alloc_values(nt), *outs = mpx_cmp_alloc_values(max_out);
    mpx_compare *c = calloc(1, sizeof *c);
    mpx_status st = MPX_OK;
    const volatile int *scope = NULL;
    bool scoped = false;
    if (c) {
        c->g = g;
        c->layers = mpx_cmp_alloc_n(k->n_layers, sizeof *c->layers);
        c->ref = mpx_cmp_alloc_values(nt);
        c->cand = mpx_cmp_alloc_values(nt);
        c->n_values = nt;
    }
    if (!dirty || !changed || !layer || !want || !regen || !rregen || !hold || !same || !inner || !whole || !pass || !plast || !lfirst || !share || !last || !ref || !cand || !outs || !c || !c->layers ||
        !c->ref || !c->cand) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto done;
    }
    for (int t = 0; t < nt; t++) last[t] = -1;
    /* What changed: formats first, then nodes in topological order. */
    for (int i = 0; i < k->n_layers; i++) layer[k->layers[i].tensor] = true;
    for (int t = 0; t < nt; t++) changed[t] = mpx_cmp_fmt_of(a, t) != k->tfmt[t];
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        mpx_node_prec p = mpx_cmp_prec_of(a, i);
        bool d = !mpx_cmp_same_prec(&p, &k->prec[i]);
        for (int j = 0; j < n->n_inputs && !d; j++) d = n->inputs[j] && changed[n->inputs[j]->index];
        for (int j = 0; j < n->n_outputs && !d; j++)
            d = n->outputs[j] && changed[n->outputs[j]->index];
        if (!d) continue;
        dirty[i] = true;
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j]) changed[n->outputs[j]->index] = true;
    }
    /* No work twice (as a full run's plan_shared): a dirty node that
     * rounds nothing (mpx_cmp_rounds_nothing) whose every input's candidate
     * value is the reference's is not run; its outputs' candidate values
     * are the reference's (same), which the run reads where they are
     * needed and the cache then holds once. A search's set of every
     * candidate fp32 made det at 640x640 compute the whole model again,
     * 660 MB of values the process had never touched. Inputs and constants
     * held in fp32 start the same (mpx_exec_start_some copies or views
     * them unrounded); a clean node's outputs are as the cache recorded.
     * A node that computes reads such an input as the reference's value
     * where that is at hand (need_ref); else the value is made: by its
     * producer, run after all when it was to share (the same bits), or
     * made again as a clean node's (regen). Not where a tensor has two
     * writers. */
    bool one_writer = true; /* every tensor written by its producer alone */
    for (int i = 0; i < nn && one_writer; i++)
        for (int j = 0; j < g->nodes[i]->n_outputs; j++)
            if (g->nodes[i]->outputs[j] && g->nodes[i]->outputs[j]->producer != g->nodes[i]) one_writer = false;
    const bool can_share = one_writer && !mpx_env_on("MPX_CMP_NOSHARE");
    for (int t = 0; t < nt && can_share; t++) {
        const mpx_tensor *tt = g->tensors[t];
        same[t] = (!tt->producer || mpx_exec_skipped(tt->producer)) && !mpx_cmp_fmt_of(a, t);
    }
    for (int i = 0; i < nn && can_share; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        bool sh = dirty[i] && mpx_cmp_rounds_nothing(a, n);
        for (int j = 0; sh && j < n->n_inputs; j++) sh = !n->inputs[j] || same[n->inputs[j]->index];
        for (int j = 0; sh && j < n->n_outputs; j++) sh = !n->outputs[j] || k->rank[n->outputs[j]->index] >= 0;
        share[i] = sh;
        for (int j = 0; j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (t) same[t->index] = dirty[i] ? sh : k->same[t->index];
        }
    }
    /* What the run reads from the cache: reference values of dirty nodes'
     * measured layers, both values of a clean layer measured now and not
     * before, both values of kept tensors, and the candidate values of the
     * dirty nodes' unchanged inputs. A value the cache lacks is made again
     * by its producer (same precision, same inputs, so the same bits; its
     * layer stands), and so on back to values the cache holds or the run
     * makes (inputs, constants):
     * - a candidate value ("regen"), also one dropped over budget: without
     *   it such a trial ran in full, the reference included, and as the
     *   earliest values go first, on det at 640x640 every trial of an early
     *   node did (13 of a search's 85 evaluations; the search 9.5 -> 7.1 s);
     * - a reference value ("rregen"), one a full run did not give the cache
     *   (compare.c: plan_lean) or one it left out as unmeasured; one dropped
     *   over budget means a full run, which refills the cache in order,
     *   rather than a partial one holding a whole run's values at once.
     * Remade values are given to the cache at the end (values of clean
     * nodes: the same bits before and after the run, so not part of what
     * an undo takes back), but those dropped over budget, which are freed
     * after their last reader (last[]) unless the end reads them (hold). */
    bool ok = true;
    for (int i = 0; i < nn && ok; i++) {
        const mpx_node *n = g->nodes[i];
        if (!dirty[i]) continue;
        for (int j = 0; j < n->n_outputs && ok; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (t && layer[t->index] && mpx_cmp_measured(opts, t->index)) ok = need_ref(k, t, rregen);
        }
    }
    for (int i = 0; i < k->n_layers && ok; i++) {
        const mpx_layer *L = &k->layers[i];
        if (L->unmeasured && !dirty[L->node] && mpx_cmp_measured(opts, L->tensor)) {
            const mpx_tensor *t = g->tensors[L->tensor];
            ok = need_ref(k, t, rregen) && (same[t->index] || need_cand(k, t, changed, regen));
            hold[L->tensor] = true;
        }
    }
    for (int t = 0; t < nt && ok; t++)
        if (k->rank[t] >= 0 && mpx_cmp_kept(g, opts, t)) {
            ok = need_ref(k, g->tensors[t], rregen) && (same[t] || need_cand(k, g->tensors[t], changed, regen));
            hold[t] = true;
        }
    for (int i = nn - 1; i >= 0 && ok; i--) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; rregen[i] && j < n->n_inputs && ok; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (t && k->rank[t->index] >= 0) ok = need_ref(k, t, rregen);
        }
        if ((!dirty[i] || share[i]) && !regen[i]) continue;
        for (int j = 0; j < n->n_inputs && ok; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (t && k->rank[t->index] >= 0 && same[t->index]) { /* the reference's value is read */
                if (need_ref(k, t, rregen)) continue;
                if (changed[t->index]) { /* (its producer comes later in this loop) */
                    share[t->producer->index] = false;
                    continue;
                }
            }
            if (!t || k->rank[t->index] < 0 || changed[t->index] || k->cand[t->index].n >= 0) continue;
            need_cand(k, t, changed, regen);
            if (k->rank[t->index] < k->evict && !hold[t->index] && i > last[t->index]) last[t->index] = i;
        }
    }
    /* A candidate value made again only for other values made again (the
     * Add and BatchNormalization before the Relu that feeds a recoloured
     * ConvTranspose, when full runs left all three out) is passed through:
     * freed after its last reader, not given to the cache, and not written
     * whole where its readers run as one chain (below). Given to the cache,
     * such values took memory the process had never touched: det's first
     * re-run after recolouring its last ConvTranspose made three values of
     * 9.8 MB and grew the process by 18 MB for the one it needed. A later
     * run that needs one makes it again, as now. */
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; regen[i] && !dirty[i] && j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (t && k->rank[t->index] >= 0 && !hold[t->index] && !mpx_cmp_kept(g, opts, t->index))
                inner[t->index] = true;
        }
        for (int j = 0; dirty[i] && !share[i] && j < n->n_inputs; j++)
            if (n->inputs[j]) inner[n->inputs[j]->index] = false;
    }
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; regen[i] && !dirty[i] && j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (t && inner[t->index] && last[t->index] < i) last[t->index] = i;
        }
        for (int j = 0; ((dirty[i] && !share[i]) || regen[i]) && j < n->n_inputs; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (t && last[t->index] >= 0 && i > last[t->index]) last[t->index] = i;
        }
    }
    /* The remade values held to the end must fit the room the budget
     * leaves (they are given to the cache then): else a full run, which
     * streams. */
    size_t held = 0, room = k->budget > k->bytes ? k->budget - k->bytes : 0;
    for (int i = 0; i < nn && ok; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; (rregen[i] || regen[i]) && j < n->n_outputs && ok; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            size_t b = mpx_cmp_est_bytes(t);
            int copies = rregen[i] + (regen[i] && !dirty[i] && k->rank[t->index] >= k->evict);
            /* a constant a node passes on (Identity of a weight) has a size
             * but no activation estimate: counted at 8 bytes an element */
            if (b == 0 && t->nelem > 0 && (t->flags & (MPX_T_CONSTANT | MPX_T_FOLDED)))
                b = (size_t)t->nelem * 8u;
            if (copies && b == 0 && t->nelem != 0) ok = false; /* (not known) */
            held += (size_t)copies * b;
            ok = ok && held <= room;
        }
    }
    if (!ok) goto done;
    /* A run nobody may undo lets go of the candidate values it will replace
     * (the dirty nodes' outputs: only dirty nodes read them, and they read
     * the new ones) before it makes any, so the heap hands their blocks to
     * the new values of the same sizes. Made while the old ones were held,
     * the new values took memory the process had never touched, which the
     * host backs as it is first written: a re-run of the quantised BERT-style
     * encoder after recolouring its last layer's Gemm grew the process by
     * 6 MB and took 17-32 ms instead of 3-4 on this virtual machine. Should
     * the run then fail, the cache lacks those values as it lacks ones
     * dropped over budget: a later run that reads one makes it again from
     * its producer under the recorded plan (the same bits). Not where a
     * tensor has two writers (a clean one may have written the value). */
    const bool let_go = one_writer && !opts->undoable;
    for (int i = 0; i < nn && let_go; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; dirty[i] && j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t || k->cand[t->index].n < 0 || k->cand[t->index].borrowed) continue;
            k->bytes -= mpx_value_bytes(&k->cand[t->index]);
            mpx_value_free(&k->cand[t->index]);
        }
    }

    /* Only the constants and inputs the dirty nodes read, and the kept
     * ones, are made (rounding every weight again cost more than
     * recomputing a late layer). */
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; ((dirty[i] && !share[i]) || regen[i] || rregen[i]) && j < n->n_inputs; j++)
            if (n->inputs[j]) want[n->inputs[j]->index] = true;
    }
    bool *keep = mpx_cmp_alloc_n(nt, sizeof *keep);
    if (!keep) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto done;
    }
    for (int t = 0; t < nt; t++) {
        keep[t] = mpx_cmp_kept(g, opts, t);
        want[t] = want[t] || keep[t];
    }
    double t0 = mpx_cmp_now_ms();
    st = mpx_exec_start_some(g, NULL, inputs, want, NULL, ref, err);
    double t1 = mpx_cmp_now_ms();
    if (st == MPX_OK) st = mpx_exec_start_some(g, a, inputs, want, keep, cand, err);
    free(keep);
    c->ms_ref = t1 - t0;
    c->ms_cand = mpx_cmp_now_ms() - t1;
    if (st != MPX_OK) goto done;
    /* The forms of the weights the recomputed nodes read rounded (a
     * recolour's new formats), before the values they make. */
    bool *runs = mpx_cmp_alloc_n(nn, sizeof *runs);
    for (int i = 0; runs && i < nn; i++) runs[i] = (dirty[i] && !share[i]) || regen[i];
    if (runs) (void)mpx_exec_prepare_forms(g, a, cand, runs);
    free(runs);
    size_t live = 0, peak;
    for (int t = 0; t < nt; t++) live += mpx_value_bytes(&ref[t]) + mpx_value_bytes(&cand[t]);
    peak = live;
    for (int t = 0; t < nt; t++)
        if (k->rank[t] >= 0) {
            view(&ref[t], &k->ref[t]);
            view(&cand[t], &k->cand[t]);
        }
    const bool fuse = mpx_fuse_enabled();
    /* The run's own cancel reaches inside the kernels too (put back at done). */
    scope = mpx_k_cancel_scope(opts->cancel);
    scoped = true;
    /* Layers: the cached ones, the dirty nodes' measured again (as each
     * node is made, below), and those measured now that were left out
     * before (at the end). */
    for (int i = 0; i < nn; i++) lfirst[i] = -1;
    for (int i = 0; i < k->n_layers; i++) {
        mpx_layer *L = &c->layers[c->n_layers++];
        *L = k->layers[i];
        L->fmt = mpx_cmp_fmt_of(a, L->tensor);
        if (lfirst[L->node] < 0) lfirst[L->node] = i; /* (a node's layers are together, in node order) */
        if (!mpx_cmp_measured(opts, L->tensor) && dirty[L->node]) mpx_cmp_set_unmeasured(L);
    }
    /* A run that cannot be undone passes through the values full runs leave
     * out of the cache (lean) that its recomputed nodes make, candidate and
     * reference: each is freed once its last reader has run and its layer
     * is measured, and none is given to the cache, as a full run keeps none.
     * Kept to the end, the quantised BERT-style encoder's first re-run after
     * recolouring its last layer's Gemm held 14 MB of them at once, more
     * than its heap had free, and took memory the host backs as it is first
     * written (5 to 54 ms where later re-runs take 3 to 4). So the reference
     * values are made as the run reaches them, not all first, and the
     * layers are measured node by node. Searches' trials (undoable) keep
     * them: the next trial of the same layers reads them. */
    int rnext = 0;
    if (let_go) {
        for (int t = 0; t < nt; t++) plast[t] = -1;
        for (int i = 0; i < nn; i++) {
            const mpx_node *n = g->nodes[i];
            const bool makes = rregen[i] || (dirty[i] && !share[i]) || regen[i];
            for (int j = 0; makes && j < n->n_inputs; j++)
                if (n->inputs[j] && plast[n->inputs[j]->index] < i) plast[n->inputs[j]->index] = i;
            for (int j = 0; (rregen[i] || dirty[i]) && j < n->n_outputs; j++) {
                const mpx_tensor *t = n->outputs[j];
                if (!t || !k->lean[t->index] || hold[t->index] || mpx_cmp_kept(g, opts, t->index)) continue;
                if (plast[t->index] < i) plast[t->index] = i;
                pass[t->index] = true;
            }
        }
    }
    /* Candidate values that are the reference's (same: a shared node's
     * outputs, a clean one's the cache marked, constants and inputs held in
     * fp32) read the reference's value, for the nodes that compute, the
     * metrics and the kept copies. Where the reference's is absent, a
     * shared node's output is absent too (not the cache's old value: no
     * node reads it, its producer runs after all where one would), and a
     * clean one's stays the value the cache holds, if any (made again when
     * the reference's was not at hand: the same bits). Here for the values
     * at hand, and for those made again as each is made. */
    for (int t = 0; t < nt; t++) read_same(t, same, changed, ref, cand);
    for (int i = 0; i <= nn; i++) {
        const mpx_node *n = i < nn ? g->nodes[i] : NULL;
        const bool makes = n && (dirty[i] || regen[i]);
        int span = makes && !share[i] && fuse ? mpx_fuse_span(g, i) : 0, end = makes ? i + (span > 1 ? span : 1) - 1 : i;
        /* (not where a value is passed through: the chain's outputs would
         * all be held at once until its layers are measured) */
        for (int q = i; span >= 2 && q <= end; q++) {
            if (!((dirty[q] && !share[q]) || (regen[q] && !dirty[q])) && !mpx_exec_skipped(g->nodes[q])) span = 0;
            for (int j = 0; span >= 2 && j < g->nodes[q]->n_outputs; j++)
                if (g->nodes[q]->outputs[j] && pass[g->nodes[q]->outputs[j]->index]) span = 0;
        }
        if (span < 2) end = i;
        /* Reference values made again up to here (they read reference
         * values only), node by node as the stream's reference steps run. */
        for (; rnext < nn && (rnext <= end || i == nn); rnext++) {
            const mpx_node *r = g->nodes[rnext];
            if (!rregen[rnext]) continue;
            if (opts->cancel && *opts->cancel) {
                st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)",
                                   r->name, rnext + 1, nn);
                goto done;
            }
            size_t scratch = 0;
            double t2 = mpx_cmp_now_ms();
            st = mpx_exec_node(r, NULL, ref, false, outs, &scratch, err);
            c->ms_ref += mpx_cmp_now_ms() - t2;
            if (st != MPX_OK) goto done;
            live = take_outs(r, scratch, outs, ref, live, &peak);
            if (!dirty[rnext] && !regen[rnext]) c->n_run++;
            for (int j = 0; j < r->n_outputs; j++)
                if (r->outputs[j]) read_same(r->outputs[j]->index, same, changed, ref, cand);
        }
        if (!makes) {
            if (i == nn) end = nn - 1;
            goto measured;
        }
        if (share[i]) { /* (its outputs are the reference's: above) */
            c->n_run++; /* (counted as a full run counts them: mpx_compare's n_shared) */
            c->n_shared++;
            goto measured;
        }
        if (opts->cancel && *opts->cancel) {
            st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)",
                               n->name, i + 1, nn);
            goto done;
        }
        size_t scratch = 0;
        double t2 = mpx_cmp_now_ms();
        /* A chain of dirty elementwise nodes runs by tiles (fuse.c), every
         * output written whole (the cache keeps them all, where none is
         * passed through: above): the same bits, a pass over memory
         * less per node. A search evaluation that recomputes det's candidate
         * spent a third of its time in such nodes one by one; det's search
         * went 11.4 -> 10.7 s (MPX_FUSE=0 against 1). */
        if (span >= 2) {
            size_t before = 0, after = 0;
            for (int q = i; q <= end; q++)
                if (!mpx_exec_skipped(g->nodes[q])) {
                    const int t = g->nodes[q]->outputs[0]->index;
                    before += mpx_value_bytes(&cand[t]);
                    /* written whole: what the run or the cache keeps, and
                     * what a node after the chain reads */
                    whole[t] = !inner[t] || last[t] > end;
                }
            if (mpx_fuse_run(g, a, i, span, cand, whole, NULL, err) == MPX_OK) {
                for (int q = i; q <= end; q++)
                    if (!mpx_exec_skipped(g->nodes[q])) {
                        after += mpx_value_bytes(&cand[g->nodes[q]->outputs[0]->index]);
                        c->n_run++;
                    }
                live = live - before + after;
                if (live > peak) peak = live;
                c->ms_cand += mpx_cmp_now_ms() - t2;
                live -= free_remade(g, opts, i, end, last, cand);
                goto measured;
            }
            if (mpx_k_cancelled()) { /* (the chain's values are dropped, as a node's are) */
                st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)", n->name, i + 1, nn);
                goto done;
            }
            if (err) mpx_error_clear(err); /* nothing changed: node by node, with its own message */
            end = i;
        }
        st = mpx_exec_node(n, a, cand, false, outs, &scratch, err);
        c->ms_cand += mpx_cmp_now_ms() - t2;
        if (st != MPX_OK) goto done;
        live = take_outs(n, scratch, outs, cand, live, &peak);
        c->n_run++;
        live -= free_remade(g, opts, i, i, last, cand);
    measured:
        /* The dirty nodes' measured layers, then the values passed through
         * that nothing reads any more. */
        for (int q = i; q <= end && q < nn; q++)
            for (int x = lfirst[q]; dirty[q] && x >= 0 && x < c->n_layers && c->layers[x].node == q; x++)
                if (mpx_cmp_measured(opts, c->layers[x].tensor) &&
                    (st = measure_layer(g, c, &c->layers[x], ref, cand, err)) != MPX_OK)
                    goto done;
        for (int q = i; q <= end && q < nn; q++) { /* (plast[t]: t's producer or a node reading it) */
            const mpx_node *m = g->nodes[q];
            for (int j = 0; j < m->n_inputs + m->n_outputs; j++) {
                const mpx_tensor *o = j < m->n_inputs ? m->inputs[j] : m->outputs[j - m->n_inputs];
                if (!o || !pass[o->index] || plast[o->index] != q) continue;
                live -= mpx_value_bytes(&cand[o->index]) + mpx_value_bytes(&ref[o->index]);
                mpx_value_free(&cand[o->index]); /* (a second time for an input read twice: nothing) */
                mpx_value_free(&ref[o->index]);
            }
        }
        if (span >= 2) i = end;
    }
    /* Layers measured now that were left out before. */
    for (int i = 0; i < c->n_layers; i++) {
        mpx_layer *L = &c->layers[i];
        if (dirty[L->node] || !L->unmeasured || !mpx_cmp_measured(opts, L->tensor)) continue;
        if ((st = measure_layer(g, c, L, ref, cand, err)) != MPX_OK) goto done;
    }
    /* Kept values: copies of what the cache holds, inputs and constants as
     * mpx_exec_start made them. */
    for (int t = 0; t < nt; t++) {
        if (!mpx_cmp_kept(g, opts, t)) continue;
        if (k->rank[t] < 0) {
            mpx_cmp_take(&c->ref[t], &ref[t]);
            mpx_cmp_take(&c->cand[t], &cand[t]);
            continue;
        }
        if (ref[t].n >= 0 && (st = mpx_value_copy(&c->ref[t], &ref[t], err)) != MPX_OK) goto done;
        if (cand[t].n >= 0 && (st = mpx_value_copy(&c->cand[t], &cand[t], err)) != MPX_OK)
            goto done;
    }
    /* The cache now describes this run (and, when asked, remembers what it
     * describes no longer). */
    if (opts->undoable) mpx_cmp_undo_begin(k);
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        if (!dirty[i]) continue;
        for (int j = 0; j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            /* (an absent output replaces the cached value too) */
            mpx_value v;
            mpx_value_clear(&v);
            if (!share[i]) mpx_cmp_take(&v, &cand[t->index]);
            mpx_cmp_cache_put_cand(k, t->index, &v, share[i]);
            mpx_value_free(&v);
        }
    }
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; (rregen[i] || (regen[i] && !dirty[i])) && j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            if (rregen[i]) mpx_cmp_cache_put_remade(k, t->index, &ref[t->index], k->ref);
            if (regen[i] && !dirty[i]) mpx_cmp_cache_put_remade(k, t->index, &cand[t->index], k->cand);
        }
    }
    for (int t = 0; t < nt; t++) k->tfmt[t] = mpx_cmp_fmt_of(a, t);
    for (int i = 0; i < nn; i++) k->prec[i] = mpx_cmp_prec_of(a, i);
    memcpy(k->layers, c->layers, (size_t)k->n_layers * sizeof *k->layers);
    c->peak_bytes = peak;
    c->incremental = true;
    if (opts->progress) opts->progress(opts->progress_ctx, nn, nn);
    *out = c;
    c = NULL;
done:
    if (scoped) mpx_k_cancel_scope(scope);
    for (int t = 0; ref && t < nt; t++) mpx_value_free(&ref[t]);
    for (int t = 0; cand && t < nt; t++) mpx_value_free(&cand[t]);
    for (int j = 0; outs && j < max_out; j++) mpx_value_free(&outs[j]);
    free(ref);
    free(cand);
    free(outs);
    free(dirty);
    free(changed);
    free(layer);
    free(want);
    free(regen);
    free(rregen);
    free(hold);
    free(same);
    free(inner);
    free(whole);
    free(pass);
    free(plast);
    free(lfirst);
    free(share);
    free(last);
    mpx_compare_free(c);
    return st;
}
