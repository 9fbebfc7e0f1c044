/* alloc_greedy.c — the envelope greedy, the oracle's optimizer
 * (alloc_internal.h: envelope_greedy): every job's believed curve as the
 * segments of its concave envelope, taken in ascending slope until each
 * budget is met; for one budget a weighted quickselect of the threshold
 * slope, for several one sort. Split from alloc_base.c (928 lines, issue
 * 43); the strategies above it call it, never each other. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "util.h"

/* the envelope greedy's scratch for curves of cap points in all (plus two
 * ends each), the widest widest (plus two) */
size_t greedy_scratch_bytes(size_t n, size_t cap, size_t widest)
{
    return cap * sizeof(seg) + (n + 2 * widest + 1) * sizeof(double);
}

/* ---- envelope greedy over believed curves, for several budgets ---- */

static int cmp_seg(const void *a, const void *b)
{
    const seg *x = a, *y = b;
    if (x->slope != y->slope) return (x->slope > y->slope) - (x->slope < y->slope);
    return (x->job > y->job) - (x->job < y->job);
}

/* segments by slope ascending, ties in input (job) order: a stable LSD
 * radix sort on the slope's order-preserving bit pattern for large inputs
 * (the sort dominated the oracle's time), qsort for small ones */
typedef struct rkey {
    uint64_t key;
    uint32_t idx;
} rkey;

static uint64_t order_bits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (b >> 63) ? ~b : b | 0x8000000000000000ULL;
}

static int sort_segs(seg *s, size_t ns)
{
    if (ns < 128) {
        qsort(s, ns, sizeof *s, cmp_seg);
        return 0;
    }
    enum { BITS = 11, BUCKETS = 1 << BITS, PASSES = 6 }; /* 6 x 11 >= 64 bits */
    rkey *a = malloc(ns * sizeof *a), *b = malloc(ns * sizeof *b);
    seg *o = malloc(ns * sizeof *o);
    size_t *cnt = malloc(BUCKETS * sizeof *cnt);
    if (!a || !b || !o || !cnt) {
        free(a), free(b), free(o), free(cnt);
        return -1;
    }
    for (size_t i = 0; i < ns; i++) a[i] = (rkey){order_bits(s[i].slope), (uint32_t)i};
    for (int pass = 0; pass < PASSES; pass++) {
        int sh = BITS * pass;
        memset(cnt, 0, BUCKETS * sizeof *cnt);
        for (size_t i = 0; i < ns; i++) cnt[(a[i].key >> sh) & (BUCKETS - 1)]++;
        size_t sum = 0;
        for (size_t k = 0; k < BUCKETS; k++) {
            size_t c = cnt[k];
            cnt[k] = sum;
            sum += c;
        }
        for (size_t i = 0; i < ns; i++) b[cnt[(a[i].key >> sh) & (BUCKETS - 1)]++] = a[i];
        rkey *t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < ns; i++) o[i] = s[a[i].idx];
    memcpy(s, o, ns * sizeof *s);
    free(a), free(b), free(o), free(cnt);
    return 0;
}

/* The slope below which every segment of s[0, hi) is removed whole when r
 * watts go from segments taken in ascending slope: a quickselect on slope
 * weighted by length (expected linear time; one budget needs no more order
 * than that). Reorders s. When r is the length of the segments below some
 * slope exactly (safe-online's every job at its current power: r is the sum
 * of the segments above it), rounding can leave r a few ulps over what is
 * left: the threshold is then the pivot that last bounded the search from
 * above (the segments below it go whole, those at it take the ~0 left), or
 * with none the steepest slope (every segment goes). Earlier versions
 * returned INFINITY there: every segment went, every job to the bottom of
 * its domain, far under the budget. */
static double select_slope(seg *s, size_t hi, double r)
{
    size_t lo = 0, n = hi;
    double up = INFINITY;                 /* the threshold is at most this */
    uint64_t rng = 0x9E3779B97F4A7C15ULL; /* fixed: the same pivots every run */
    while (lo < hi) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        double pv = s[lo + (size_t)((rng >> 33) % (hi - lo))].slope;
        size_t lt = lo, i = lo, gt = hi; /* [lo,lt) < pv, [lt,i) == pv, [gt,hi) > pv */
        double below = 0, at = 0;
        while (i < gt) {
            seg x = s[i];
            if (x.slope < pv) {
                s[i++] = s[lt];
                s[lt++] = x;
                below += x.len;
            } else if (x.slope > pv) {
                s[i] = s[--gt];
                s[gt] = x;
            } else {
                at += x.len;
                i++;
            }
        }
        if (r < below) {
            hi = lt;
            up = pv;
        } else if (r <= below + at) return pv;
        else {
            r -= below + at;
            lo = gt;
        }
    }
    if (isinf(up))
        for (size_t k = 0; k < n; k++) up = k ? fmax(up, s[k].slope) : s[k].slope;
    return up;
}

static int cmp_seg_slope(const void *a, const void *b)
{
    double x = ((const seg *)a)->slope, y = ((const seg *)b)->slope;
    return (x > y) - (x < y);
}

/* moves the segments of s[0, ns) with in(slope) to the front in one pass
 * without branches on the data; returns how many */
static size_t to_front(seg *s, size_t ns, double lo, double hi)
{
    size_t k = 0;
    for (size_t i = 0; i < ns; i++) {
        seg x = s[i];
        int in = (x.slope >= lo) & (x.slope <= hi);
        s[i] = s[k];
        s[k] = x;
        k += (size_t)in;
    }
    return k;
}

/* The threshold slope of delta watts over s[0, ns) (total_len watts in
 * all); reorders s. Many segments are narrowed first: a sample of them
 * brackets the threshold, one pass moves those between the two brackets
 * to the front, and the selection runs on them alone. The bracket is the
 * sample's weighted quantile +- ORACLE_Z standard errors (the weights are
 * the lengths), so it misses about once in 10^4; a miss selects among the
 * segments on the side it missed. The sample is drawn at fixed
 * pseudo-random positions (the same every run), never at a stride: jobs
 * of equal size lay their segments out with a period, and a stride that is
 * a multiple of it draws one segment of each job (1,000,000 jobs x 5
 * segments: a stride of 5,000,000 / 512 = 9,765 = 5 x 1,953 drew only top
 * segments, and the bracket missed every time). */
#define ORACLE_Z 4.0
enum { ORACLE_NARROW = 4096, ORACLE_SAMPLE_MIN = 512, ORACLE_SAMPLE_MAX = 4096 };

static double threshold_slope(seg *s, size_t ns, double delta, double total_len, oracle_trace *tr)
{
    /* 2 sqrt(ns) samples: sorting them costs about what the bracket saves */
    size_t M = (size_t)(2 * sqrt((double)ns));
    M = M < ORACLE_SAMPLE_MIN ? ORACLE_SAMPLE_MIN : M > ORACLE_SAMPLE_MAX ? ORACLE_SAMPLE_MAX : M;
    seg *smp = ns < ORACLE_NARROW || !(total_len > 0) ? NULL : malloc(M * sizeof *smp);
    if (!smp) { /* few segments (or no memory to narrow them) */
        if (tr) tr->path = ORACLE_SELECT, tr->selected = ns;
        return select_slope(s, ns, delta);
    }
    double wsum = 0, w2 = 0;
    for (size_t k = 0; k < M; k++) {
        smp[k] = s[pfi_mix64(k) % ns];
        wsum += smp[k].len;
        w2 += smp[k].len * smp[k].len;
    }
    qsort(smp, M, sizeof *smp, cmp_seg_slope);
    /* the quantile's standard error, kept from vanishing at a cut near none or all */
    double p = delta / total_len, margin = ORACLE_Z * sqrt((p * (1 - p) + 1.0 / (double)M) * w2),
           lo_w = p * wsum - margin, hi_w = p * wsum + margin, acc = 0;
    double lo_pv = -INFINITY, hi_pv = INFINITY;
    for (size_t k = 0; k < M; k++) {
        if (acc <= lo_w) lo_pv = smp[k].slope;
        acc += smp[k].len;
        if (acc >= hi_w) {
            hi_pv = smp[k].slope;
            break;
        }
    }
    if (lo_w <= 0) lo_pv = -INFINITY;
    if (hi_w >= wsum) hi_pv = INFINITY;
    free(smp);
    double below = 0, mid = 0;
    for (size_t i = 0; i < ns; i++) { /* 0/1 factors: no branch to mispredict */
        below += (double)(s[i].slope < lo_pv) * s[i].len;
        mid += (double)((s[i].slope >= lo_pv) & (s[i].slope <= hi_pv)) * s[i].len;
    }
    size_t k = to_front(s, ns, lo_pv, hi_pv);
    if (below <= delta && delta <= below + mid) {
        if (tr) tr->path = ORACLE_BRACKET, tr->selected = k;
        return select_slope(s, k, delta - below);
    }
    /* missed: the threshold is among the segments below the bracket, or above it */
    int low = delta < below;
    size_t m = low ? to_front(s + k, ns - k, -INFINITY, nextafter(lo_pv, -INFINITY))
                   : to_front(s + k, ns - k, nextafter(hi_pv, INFINITY), INFINITY);
    if (tr) tr->path = ORACLE_BRACKET_MISSED, tr->selected = m;
    return select_slope(s + k, m, low ? delta : delta - below - mid);
}

/* one budget: the segments below the threshold slope whole, then those at
 * it by job, as the sorted path of several budgets takes them (the same
 * allocation up to rounding; within one job, equal slopes are
 * interchangeable). The sums run in the order the selection left the
 * segments in: pfi reproduce's figures depend on it to the last bit.
 * Returns -1 when memory ran out. */
static int greedy_one(const prepared *pj, seg *s, size_t ns, double delta, double total_len,
                      double top_total, double *removed, double *P, double *env_total,
                      oracle_trace *tr)
{
    double lam = -INFINITY;
    if (delta > 0) lam = threshold_slope(s, ns, delta, total_len, tr);
    else if (tr) tr->path = ORACLE_SELECT, tr->selected = 0;
    double done = 0, loss = 0;
    size_t nties = 0;
    for (size_t k = 0; k < ns; k++) { /* x 0 or 1: no branch to mispredict */
        double whole = (double)(s[k].slope < lam);
        removed[s[k].job] += whole * s[k].len;
        loss += whole * (s[k].slope * s[k].len);
        done += whole * s[k].len;
        nties += s[k].slope == lam;
    }
    for (size_t i = 0; i < pj->n; i++) P[i] = pj->hi[i] - removed[i];
    double env = top_total - loss;
    seg *ties = malloc((nties ? nties : 1) * sizeof *ties);
    if (!ties) return -1;
    nties = 0;
    for (size_t k = 0; k < ns; k++)
        if (s[k].slope == lam) ties[nties++] = s[k];
    qsort(ties, nties, sizeof *ties, cmp_seg);
    for (size_t k = 0; k < nties && done < delta; k++) {
        double take = done + ties[k].len <= delta + 1e-12 ? ties[k].len : delta - done;
        P[ties[k].job] -= take;
        env -= ties[k].slope * take;
        done += take;
        if (take < ties[k].len) break;
    }
    free(ties);
    if (env_total) *env_total = env;
    return 0;
}

/* several budgets: one pass over the segments sorted by slope */
static void greedy_sorted(const prepared *pj, const seg *s, size_t ns, const dref *d, size_t nb,
                          double shed_cap, double top_total, double *removed, double *P,
                          double *env_total, int *feasible)
{
    size_t n = pj->n, si = 0;
    double done = 0, part = 0, loss = 0; /* loss: envelope tokens removed by whole segments */
    for (size_t q = 0; q < nb; q++) {
        double delta = d[q].delta;
        size_t k = d[q].k;
        int ok = delta <= shed_cap + 1e-6;
        if (delta > shed_cap) delta = shed_cap;
        if (delta < 0) delta = 0;
        /* advance whole segments */
        while (si < ns && done + s[si].len <= delta + 1e-12) {
            removed[s[si].job] += s[si].len;
            loss += s[si].slope * s[si].len;
            done += s[si].len;
            si++;
        }
        part = delta - done;
        for (size_t i = 0; i < n; i++) P[k * n + i] = pj->hi[i] - removed[i];
        double env = top_total - loss;
        if (si < ns && part > 0) {
            P[k * n + s[si].job] -= part;
            env -= s[si].slope * part;
        }
        if (env_total) env_total[k] = env;
        if (feasible) feasible[k] = ok;
    }
}

/* curves[i]: what the optimizer maximizes; writes P[k * n + i] per budget,
 * env_total[k] (the envelope value) and feasible[k]; tr (may be NULL): the
 * path taken */
pfi_status envelope_greedy(const prepared *pj, const jcurve *curves, const double *budgets,
                           size_t nb, double *P, double *env_total, int *feasible, oracle_trace *tr,
                           pfi_error *err)
{
    size_t n = pj->n, cap = 0, widest = 1; /* all segments; the most points of one curve */
    for (size_t i = 0; i < n; i++) {
        cap += curves[i].n + 2;
        if (curves[i].n + 2 > widest) widest = curves[i].n + 2;
    }
    /* one block: the segments, what each job sheds, two curves' points;
     * the prepared workload's scratch when it has room */
    size_t need = greedy_scratch_bytes(n, cap, widest);
    seg *own = NULL, *s = need <= pj->scratch_bytes ? pj->scratch : (own = malloc(need));
    dref *d = malloc((nb ? nb : 1) * sizeof *d);
    if (!s || !d) {
        free(own), free(d);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    double *removed = (double *)(s + cap), *vp = removed + n, *vt = vp + widest;
    memset(removed, 0, n * sizeof *removed);
    size_t ns = 0;
    double sum_hi = 0, top_total = 0, shed_cap = 0;
    for (size_t i = 0; i < n; i++) {
        double lo = pj->floor[i], hi = pj->hi[i];
        sum_hi += hi;
        shed_cap += hi - lo;
        top_total += jc_at(&curves[i], hi);
        size_t m = jc_envelope(&curves[i], lo, hi, vp, vt, widest);
        for (size_t v = m; v-- > 1;) { /* top segment first */
            double len = vp[v] - vp[v - 1];
            if (len <= 0) continue;
            s[ns++] = (seg){(vt[v] - vt[v - 1]) / len, len, i};
        }
    }
    if (tr) tr->segments = ns, tr->path = ORACLE_SORTED, tr->selected = 0;
    int fail = 0;
    if (nb == 1) {
        double delta = sum_hi - budgets[0];
        if (feasible) feasible[0] = delta <= shed_cap + 1e-6;
        delta = delta > shed_cap ? shed_cap : delta < 0 ? 0 : delta;
        fail = greedy_one(pj, s, ns, delta, shed_cap, top_total, removed, P, env_total, tr);
    } else if (!(fail = sort_segs(s, ns))) {
        for (size_t k = 0; k < nb; k++) d[k] = (dref){sum_hi - budgets[k], k};
        qsort(d, nb, sizeof *d, cmp_dref);
        greedy_sorted(pj, s, ns, d, nb, shed_cap, top_total, removed, P, env_total, feasible);
    }
    free(own), free(d);
    return fail ? pfi_errorf(err, PFI_ENOMEM, "out of memory") : PFI_OK;
}
