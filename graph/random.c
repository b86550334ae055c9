/* random.c - the seeded generator behind JSON models' random weights and the
 * REPL's random inputs. splitmix64 seeds xoshiro256** (Blackman & Vigna);
 * both are pure 64-bit integer arithmetic, so a seed gives the same stream on
 * every machine, and a script's "seed 3" means the same numbers everywhere. */
#include "mpx_graph.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void mpx_rng_init(mpx_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
    r->have_spare = false;
    r->spare = 0.0;
}

uint64_t mpx_rng_next(mpx_rng *r) {
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double mpx_rng_unit(mpx_rng *r) {
    return (double)(mpx_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Box-Muller: each pair of draws gives two values, cos then sin. */
double mpx_rng_normal(mpx_rng *r, double mean, double std) {
    if (r->have_spare) {
        r->have_spare = false;
        return mean + std * r->spare;
    }
    double u1 = 1.0 - mpx_rng_unit(r), u2 = mpx_rng_unit(r);
    double rad = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
    r->spare = rad * sin(th);
    r->have_spare = true;
    return mean + std * rad * cos(th);
}
