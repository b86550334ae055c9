/* kern_kept.c - the list of derived forms kept on a constant's tensor
 * (kern_kept.h), guarded by one lock. */
#include "kern_kept.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t kg_kept_lock = PTHREAD_MUTEX_INITIALIZER;

atomic_llong kg_rounded_bytes; /* the kept rounded copies' bytes (mpx_k_kept_rounded) */

float *kg_alloc(size_t n) {
    size_t bytes = (n ? n : 1) * sizeof(float);
    bytes = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

static void kg_kept_del(kg_kept *k) {
    if (k->kind == KG_KEPT_ROUNDED) atomic_fetch_sub(&kg_rounded_bytes, k->M * (long long)sizeof(float));
    free(k->ap);
    free(k);
}

static void kg_kept_free(void *p) {
    for (kg_kept *k = p, *n; k; k = n) {
        n = k->next;
        kg_kept_del(k);
    }
}

/* Whether p is the tensor's own values (float or integer) or a rounded copy
 * of them kept on it (called with the lock held). */
static bool kg_kept_current(const mpx_tensor *t, const void *p) {
    if (p == t->f32 || (t->i64 && p == t->i64)) return true;
    for (const kg_kept *o = t->derived_free == kg_kept_free ? t->derived : NULL; o; o = o->next)
        if (o->kind == KG_KEPT_ROUNDED && o->ap == p && o->a == t->f32) return true;
    return false;
}

bool kg_kept_holds(const mpx_tensor *t, const void *p) {
    pthread_mutex_lock(&kg_kept_lock);
    const bool own = kg_kept_current(t, p);
    pthread_mutex_unlock(&kg_kept_lock);
    return own;
}

static bool kg_kept_match(const kg_kept *k, const kg_key *q) {
    return k->kind == q->k.kind && k->a == q->k.a && k->M == q->k.M && k->K == q->k.K && k->G == q->k.G &&
           k->ams == q->k.ams && k->aks == q->k.aks && k->ga == q->k.ga && k->fmt == q->k.fmt &&
           (k->checked || !q->check);
}

const kg_kept *kg_kept_find(const kg_key *q) {
    pthread_mutex_lock(&kg_kept_lock);
    const kg_kept *k = q->owner->derived_free == kg_kept_free ? q->owner->derived : NULL;
    while (k && !kg_kept_match(k, q)) k = k->next;
    pthread_mutex_unlock(&kg_kept_lock);
    return k;
}

/* Keep ap (true: the tensor owns it now). */
bool kg_kept_add(const kg_key *q, float *ap, bool finite) {
    kg_kept *k = malloc(sizeof *k);
    if (!k) return false;
    *k = q->k;
    k->checked = q->check;
    k->finite = finite;
    k->ap = ap;
    k->next = NULL;
    mpx_tensor *t = q->owner;
    pthread_mutex_lock(&kg_kept_lock);
    bool ok = !t->derived || t->derived_free == kg_kept_free;
    /* Packings of values the tensor no longer holds (a folded weight gets a
     * new buffer when shapes are bound again) go, and rounded copies of
     * them: no kernel can be using one, since a kernel keeps only what
     * matches the tensor's values (the rounded copies are dropped last:
     * whether a packing is current is looked up among them). */
    for (int pass = 0; pass < 2; pass++)
        for (kg_kept **pp = ok ? (kg_kept **)&t->derived : NULL; pp && *pp;) {
            kg_kept *o = *pp;
            if ((o->kind == KG_KEPT_ROUNDED) != (pass == 1) || kg_kept_current(t, o->a)) {
                pp = &o->next;
                continue;
            }
            *pp = o->next;
            kg_kept_del(o);
        }
    for (const kg_kept *o = ok ? t->derived : NULL; o && ok; o = o->next) ok = !kg_kept_match(o, q);
    if (ok) {
        k->next = t->derived;
        t->derived = k;
        t->derived_free = kg_kept_free;
    }
    pthread_mutex_unlock(&kg_kept_lock);
    if (!ok) free(k);
    return ok;
}
