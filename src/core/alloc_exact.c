/* alloc_exact.c — the exact oracle on non-concave curves, by branch and
 * bound. A node fixes some jobs to one linear piece of their true curve;
 * the others keep their concave envelope. Greedy removal on that relaxation
 * gives an upper bound and an allocation; if every free job lands where its
 * envelope equals its curve, the node is solved. Otherwise branch on the job
 * with the largest envelope excess, one child per piece. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"

typedef struct piece {
    double lo, hi, tlo, thi; /* linear between (lo, tlo) and (hi, thi) */
} piece;

typedef struct bb {
    const prepared *pj;
    size_t n;
    double budget;
    piece **env; /* envelope pieces per job (bottom to top) */
    size_t *nenv;
    piece **seg; /* true linear pieces per job */
    size_t *nseg;
    double best;
    double *best_p;
    size_t nodes, max_nodes;
    int oom; /* an allocation failed: the search stopped, the result is an error */
} bb;

typedef struct rseg {
    double slope, len;
    size_t job;
} rseg;

static int cmp_rseg(const void *a, const void *b)
{
    const rseg *x = a, *y = b;
    if (x->slope != y->slope) return (x->slope > y->slope) - (x->slope < y->slope);
    return (x->job > y->job) - (x->job < y->job);
}

/* relaxation at a node: fixed[i] < 0 free, else a piece index. Returns
 * -1 infeasible, else 0 with P and the bound */
static int relax(bb *B, const int *fixed, double *P, double *ub)
{
    size_t n = B->n, cap = 0;
    for (size_t i = 0; i < n; i++) cap += fixed[i] < 0 ? B->nenv[i] : 1;
    rseg *s = malloc((cap ? cap : 1) * sizeof *s);
    if (!s) {
        B->oom = 1;
        return -1;
    }
    double top = 0, sum_hi = 0, sum_lo = 0;
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        if (fixed[i] < 0) {
            piece *e = B->env[i];
            size_t m = B->nenv[i];
            double hi = m ? e[m - 1].hi : B->pj->hi[i], lo = m ? e[0].lo : B->pj->floor[i];
            top += m ? e[m - 1].thi : jc_at(&B->pj->jc[i], hi);
            sum_hi += hi;
            sum_lo += lo;
            P[i] = hi;
            for (size_t k = m; k-- > 0;) {
                double len = e[k].hi - e[k].lo;
                if (len > 0) s[ns++] = (rseg){(e[k].thi - e[k].tlo) / len, len, i};
            }
        } else {
            piece *g = &B->seg[i][fixed[i]];
            top += g->thi;
            sum_hi += g->hi;
            sum_lo += g->lo;
            P[i] = g->hi;
            double len = g->hi - g->lo;
            if (len > 0) s[ns++] = (rseg){(g->thi - g->tlo) / len, len, i};
        }
    }
    if (sum_lo > B->budget + 1e-9) {
        free(s);
        return -1;
    }
    qsort(s, ns, sizeof *s, cmp_rseg);
    double delta = sum_hi - B->budget, val = top;
    for (size_t k = 0; k < ns && delta > 0; k++) {
        double take = s[k].len < delta ? s[k].len : delta;
        P[s[k].job] -= take;
        val -= s[k].slope * take;
        delta -= take;
    }
    free(s);
    *ub = val;
    return 0;
}

static double env_at(const bb *B, size_t i, double p)
{
    piece *e = B->env[i];
    for (size_t k = 0; k < B->nenv[i]; k++)
        if (p <= e[k].hi + 1e-12) {
            double f = e[k].hi > e[k].lo ? (p - e[k].lo) / (e[k].hi - e[k].lo) : 0;
            return e[k].tlo + f * (e[k].thi - e[k].tlo);
        }
    return B->nenv[i] ? e[B->nenv[i] - 1].thi : 0;
}

static void search(bb *B, int *fixed, double *P)
{
    if (B->oom || ++B->nodes > B->max_nodes) return;
    double ub;
    if (relax(B, fixed, P, &ub) < 0) return;
    if (ub <= B->best + 1e-12 * fabs(B->best)) return;
    /* the free job with the largest envelope excess */
    size_t worst = B->n;
    double excess = 0, total = 0;
    for (size_t i = 0; i < B->n; i++) {
        double t = jc_at(&B->pj->jc[i], P[i]);
        total += t;
        if (fixed[i] < 0) {
            double e = env_at(B, i, P[i]) - t;
            if (e > excess + 1e-12 * (fabs(t) + 1)) {
                excess = e;
                worst = i;
            }
        }
    }
    if (total > B->best) {
        B->best = total;
        memcpy(B->best_p, P, B->n * sizeof *P);
    }
    if (worst == B->n) return; /* consistent: this node is solved */
    double *Pc = malloc(B->n * sizeof *Pc);
    if (!Pc) {
        B->oom = 1;
        return;
    }
    for (size_t k = 0; k < B->nseg[worst]; k++) {
        fixed[worst] = (int)k;
        search(B, fixed, Pc);
    }
    fixed[worst] = -1;
    free(Pc);
}

pfi_status pfi_alloc_exact(const pfi_alloc_job *jobs, size_t n, double budget_w, int normalized,
                           double *power_w, double *total, size_t max_nodes, pfi_error *err)
{
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.strategy = PFI_STRAT_ORACLE;
    o.normalized = normalized;
    prepared pj;
    pfi_status st = prep_jobs(jobs, n, &o, 1, &pj, err);
    if (st) return st;
    bb B;
    memset(&B, 0, sizeof B);
    B.pj = &pj;
    B.n = n;
    B.budget = budget_w;
    B.max_nodes = max_nodes ? max_nodes : 1000000;
    B.env = calloc(n, sizeof *B.env);
    B.nenv = calloc(n, sizeof *B.nenv);
    B.seg = calloc(n, sizeof *B.seg);
    B.nseg = calloc(n, sizeof *B.nseg);
    B.best_p = malloc(n * sizeof *B.best_p);
    int *fixed = malloc(n * sizeof *fixed);
    double *P = malloc(n * sizeof *P);
    if (!B.env || !B.nenv || !B.seg || !B.nseg || !B.best_p || !fixed || !P) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const jcurve *j = &pj.jc[i];
        double lo = pj.floor[i], hi = pj.hi[i];
        double *vp = malloc((j->n + 2) * sizeof *vp), *vt = malloc((j->n + 2) * sizeof *vt);
        size_t m = vp && vt ? jc_envelope(j, lo, hi, vp, vt, j->n + 2) : 0;
        B.env[i] = malloc((m ? m : 1) * sizeof(piece));
        B.seg[i] = malloc((j->n + 2) * sizeof(piece));
        if (!vp || !vt || !B.env[i] || !B.seg[i]) {
            free(vp), free(vt);
            st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t k = 0; k + 1 < m; k++)
            B.env[i][k] = (piece){vp[k], vp[k + 1], vt[k], vt[k + 1]};
        B.nenv[i] = m ? m - 1 : 0;
        /* the true pieces: consecutive breakpoints inside [lo, hi] */
        size_t q = 0;
        vp[q] = lo;
        vt[q++] = jc_at(j, lo);
        for (size_t k = 0; k < j->n; k++)
            if (j->p[k] > lo + 1e-9 && j->p[k] < hi - 1e-9) {
                vp[q] = j->p[k];
                vt[q++] = j->t[k];
            }
        if (hi > lo + 1e-9) {
            vp[q] = hi;
            vt[q++] = jc_at(j, hi);
        }
        for (size_t k = 0; k + 1 < q; k++)
            B.seg[i][k] = (piece){vp[k], vp[k + 1], vt[k], vt[k + 1]};
        B.nseg[i] = q ? q - 1 : 0;
        if (B.nseg[i] == 0) { /* a single point: one degenerate piece */
            B.seg[i][0] = (piece){lo, lo, vt[0], vt[0]};
            B.nseg[i] = 1;
        }
        free(vp), free(vt);
        fixed[i] = -1;
    }
    B.best = -INFINITY;
    search(&B, fixed, P);
    if (B.oom) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    else if (B.best == -INFINITY)
        st = pfi_errorf(err, PFI_EINVAL, "infeasible: the jobs' floors exceed the budget");
    else if (B.nodes > B.max_nodes)
        st = pfi_errorf(err, PFI_ERANGE, "branch and bound gave up after %zu nodes", B.max_nodes);
    if (!st) {
        if (power_w) memcpy(power_w, B.best_p, n * sizeof *power_w);
        if (total) *total = B.best;
    }
out:
    for (size_t i = 0; B.env && i < n; i++) free(B.env[i]);
    for (size_t i = 0; B.seg && i < n; i++) free(B.seg[i]);
    free(B.env), free(B.nenv), free(B.seg), free(B.nseg), free(B.best_p), free(fixed), free(P);
    prep_free(&pj);
    return st;
}
