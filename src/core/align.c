/* align.c — binning of telemetry samples into scrape-interval bins and the
 * job-level series (see protocol.h, "alignment").
 *
 * Storage: per GPU, per absolute bin, per metric, a sum and a count (two
 * samples of one GPU in one bin — a scrape a little early, the next a little
 * late — are averaged). Bins are absolute (t_ms / interval_ms) so hosts
 * scraped out of phase fall into the same bins; the array grows at both
 * ends. Memory is bounded by one run's span (max_bins). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/protocol.h"
#include "vec.h"

typedef struct gpu_store {
    char *key;
    double *sum; /* [cap * PFI_M_COUNT] */
    uint8_t *cnt;
} gpu_store;

struct pfi_bins {
    pfi_protocol_opts o;
    int64_t interval_ms;
    int64_t base;   /* absolute bin of index 0 */
    size_t cap;     /* bins allocated per GPU */
    int64_t lo, hi; /* absolute bins seen: [lo, hi] */
    int any;
    gpu_store *g;
    size_t ng, gcap;
    size_t nsamples;
    int last_gpu;
};

void pfi_protocol_opts_default(pfi_protocol_opts *o)
{
    o->interval_s = 5;
    o->fb_warmup_mib = 10240;
    o->util_train_pct = 50;
    o->sustain_scrapes = 3;
    o->agg = PFI_AGG_TOP;
    o->top_frac = 0.10;
    o->tput_agg = PFI_AGG_TOP;
    o->cap_tol_w = 1;
    o->cap_check = 1;
    o->max_bins = 2000000;
    o->max_gpus = 4096;
}

pfi_bins *pfi_bins_new(const pfi_protocol_opts *o)
{
    pfi_bins *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->o = *o;
    b->interval_ms = (int64_t)llround(o->interval_s * 1000.0);
    if (b->interval_ms <= 0) b->interval_ms = 5000;
    b->last_gpu = -1;
    return b;
}

void pfi_bins_free(pfi_bins *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->ng; i++) {
        free(b->g[i].key);
        free(b->g[i].sum);
        free(b->g[i].cnt);
    }
    free(b->g);
    free(b);
}

size_t pfi_bins_ngpus(const pfi_bins *b)
{
    return b->ng;
}
size_t pfi_bins_nsamples(const pfi_bins *b)
{
    return b->nsamples;
}

static int alloc_gpu(pfi_bins *b, gpu_store *g)
{
    size_t n = (b->cap ? b->cap : 1) * PFI_M_COUNT;
    g->sum = calloc(n, sizeof *g->sum);
    g->cnt = calloc(n, sizeof *g->cnt);
    return g->sum && g->cnt ? 0 : -1;
}

int pfi_bins_gpu(pfi_bins *b, const char *key, size_t len)
{
    if (b->last_gpu >= 0) {
        const char *k = b->g[b->last_gpu].key;
        if (strncmp(k, key, len) == 0 && k[len] == '\0') return b->last_gpu;
    }
    for (size_t i = 0; i < b->ng; i++)
        if (strncmp(b->g[i].key, key, len) == 0 && b->g[i].key[len] == '\0')
            return b->last_gpu = (int)i;
    if (b->ng >= b->o.max_gpus) return -1;
    if (PFI_VEC_RESERVE(b->g, b->gcap, b->ng + 1, NULL)) return -1;
    gpu_store *g = &b->g[b->ng];
    memset(g, 0, sizeof *g);
    g->key = strndup(key, len);
    if (!g->key || alloc_gpu(b, g) != 0) {
        free(g->key);
        free(g->sum);
        free(g->cnt);
        return -1;
    }
    return b->last_gpu = (int)b->ng++;
}

/* make absolute bin `bin` addressable */
static pfi_status ensure_bin(pfi_bins *b, int64_t bin, pfi_error *err)
{
    if (!b->any) {
        b->base = bin - 8;
        b->lo = b->hi = bin;
        b->any = 1;
    }
    int64_t lo = bin < b->lo ? bin : b->lo, hi = bin > b->hi ? bin : b->hi;
    if ((uint64_t)(hi - lo) >= b->o.max_bins)
        return pfi_errorf(
            err, PFI_ERANGE,
            "telemetry spans more than %zu scrape intervals (timestamps %lld..%lld ms)",
            b->o.max_bins, (long long)(lo * b->interval_ms), (long long)(hi * b->interval_ms));
    if (bin >= b->base && bin < b->base + (int64_t)b->cap) {
        b->lo = lo;
        b->hi = hi;
        return PFI_OK;
    }
    /* reallocate with room at both ends */
    int64_t nbase = lo < b->base ? lo - (hi - lo) / 4 - 8 : b->base;
    int64_t shift = b->base - nbase;
    size_t ncap = b->cap ? b->cap : 256;
    while (nbase + (int64_t)ncap <= hi || (size_t)shift + b->cap > ncap) ncap *= 2;
    for (size_t i = 0; i < b->ng; i++) {
        gpu_store *g = &b->g[i];
        double *s = calloc(ncap * PFI_M_COUNT, sizeof *s);
        uint8_t *c = calloc(ncap * PFI_M_COUNT, sizeof *c);
        if (!s || !c) {
            free(s);
            free(c);
            return pfi_errorf(err, PFI_ENOMEM, "out of memory for %zu bins", ncap);
        }
        if (b->cap) {
            memcpy(s + (size_t)shift * PFI_M_COUNT, g->sum, b->cap * PFI_M_COUNT * sizeof *s);
            memcpy(c + (size_t)shift * PFI_M_COUNT, g->cnt, b->cap * PFI_M_COUNT * sizeof *c);
        }
        free(g->sum);
        free(g->cnt);
        g->sum = s;
        g->cnt = c;
    }
    b->base = nbase;
    b->cap = ncap;
    b->lo = lo;
    b->hi = hi;
    return PFI_OK;
}

pfi_status pfi_bins_add(pfi_bins *b, int gpu, pfi_metric m, int64_t t_ms, double v, pfi_error *err)
{
    if (gpu < 0 || (size_t)gpu >= b->ng || (unsigned)m >= PFI_M_COUNT)
        return pfi_errorf(err, PFI_EINVAL, "bad GPU or metric index");
    int64_t bin =
        t_ms >= 0 ? t_ms / b->interval_ms : -((-t_ms + b->interval_ms - 1) / b->interval_ms);
    if (!(bin >= b->base && bin < b->base + (int64_t)b->cap)) {
        pfi_status st = ensure_bin(b, bin, err);
        if (st) return st;
    } else {
        if (bin < b->lo) b->lo = bin;
        if (bin > b->hi) b->hi = bin;
    }
    size_t idx = (size_t)(bin - b->base) * PFI_M_COUNT + (size_t)m;
    gpu_store *g = &b->g[gpu];
    if (g->cnt[idx] == 255)
        return PFI_OK; /* absurdly many samples in one bin: keep the mean so far */
    g->sum[idx] += v;
    g->cnt[idx]++;
    b->nsamples++;
    return PFI_OK;
}

void pfi_series_dispose(pfi_series *s)
{
    free(s->t_ms);
    free(s->power_w);
    free(s->util_min);
    for (int m = 0; m < PFI_M_COUNT; m++) free(s->metric[m]);
    for (int d = 0; d < PFI_D_COUNT; d++) free(s->derived[d]);
    memset(s, 0, sizeof *s);
}

/* value of GPU g, metric m at relative bin r, carried from r-1 if absent;
 * returns 0 if missing, 1 if real, 2 if carried */
static int cell(const pfi_bins *b, size_t g, size_t r, int m, double *v)
{
    const gpu_store *gs = &b->g[g];
    size_t i = r * PFI_M_COUNT + (size_t)m;
    if (gs->cnt[i]) {
        *v = gs->sum[i] / gs->cnt[i];
        return 1;
    }
    if (r > 0 && gs->cnt[i - PFI_M_COUNT]) {
        *v = gs->sum[i - PFI_M_COUNT] / gs->cnt[i - PFI_M_COUNT];
        return 2;
    }
    return 0;
}

pfi_status pfi_bins_series(const pfi_bins *b, pfi_series *s, pfi_error *err)
{
    memset(s, 0, sizeof *s);
    s->n_gpus = b->ng;
    if (!b->any || b->ng == 0) return PFI_OK;
    size_t span = (size_t)(b->hi - b->lo + 1);
    s->n_bins_seen = span;
    s->t_ms = malloc(span * sizeof *s->t_ms);
    s->power_w = malloc(span * sizeof *s->power_w);
    s->util_min = malloc(span * sizeof *s->util_min);
    int ok = s->t_ms && s->power_w && s->util_min;
    for (int m = 0; m < PFI_M_COUNT && ok; m++)
        ok = (s->metric[m] = malloc(span * sizeof(double))) != NULL;
    for (int d = 0; d < PFI_D_COUNT && ok; d++)
        ok = (s->derived[d] = malloc(span * sizeof(double))) != NULL;
    if (!ok) {
        pfi_series_dispose(s);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory for %zu bins", span);
    }
    size_t r0 = (size_t)(b->lo - b->base);
    size_t k = 0;
    for (size_t r = r0; r < r0 + span; r++) {
        /* a bin is kept when every GPU has a power reading (real or carried) */
        int complete = 1, any_real = 0;
        double pw = 0;
        for (size_t g = 0; g < b->ng; g++) {
            double v;
            int c = cell(b, g, r, PFI_M_POWER_USAGE, &v);
            if (!c) {
                complete = 0;
                break;
            }
            if (c == 1) any_real = 1;
            pw += v;
        }
        if (!any_real) continue; /* nothing measured here at all: not a bin of the run */
        if (!complete) {
            s->n_dropped++;
            continue;
        }
        s->t_ms[k] = (b->base + (int64_t)r) * b->interval_ms;
        s->power_w[k] = pw;
        double umin = NAN;
        for (int m = 0; m < PFI_M_COUNT; m++) {
            double acc = 0;
            size_t have = 0;
            for (size_t g = 0; g < b->ng; g++) {
                double v;
                int c = cell(b, g, r, m, &v);
                if (!c) break;
                if (c == 2 && m == PFI_M_POWER_USAGE) s->n_carried++;
                acc += v;
                have++;
                if (m == PFI_M_GPU_UTIL && (isnan(umin) || v < umin)) umin = v;
            }
            if (have < b->ng) {
                s->metric[m][k] = NAN;
                if (m == PFI_M_GPU_UTIL) umin = NAN;
                continue;
            }
            s->metric[m][k] =
                pfi_metric_get((pfi_metric)m)->agg == PFI_AGG_SUM ? acc : acc / (double)b->ng;
        }
        s->util_min[k] = umin;
        double mk[PFI_M_COUNT];
        for (int m = 0; m < PFI_M_COUNT; m++) mk[m] = s->metric[m][k];
        for (int d = 0; d < PFI_D_COUNT; d++)
            s->derived[d][k] = pfi_derived_value((pfi_derived)d, mk);
        k++;
    }
    s->n = k;
    return PFI_OK;
}
