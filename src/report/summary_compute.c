/* summary_compute.c — the summary rows whose pfi value is computed from
 * several cells of the run's CSVs instead of looked up (the `compute` column
 * of data/report/summary_rows.csv names one of these). Each reads the files,
 * keys and column its row's reference (the `pfi` column, written to
 * summary.csv as `source`) names; the paper's value of such a row is still a
 * plain lookup in data/paper. No number of the paper is here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/stats.h"
#include "summary_int.h"
#include "util.h"

enum { MAX_GROUPS = 64 };

/* "A,B" of a reference's only key, which must be called key */
static pfi_status two_values(sum_ctx *x, const sum_ref *r, const char *key, char *a, char *b,
                             size_t n)
{
    const char *comma = r->nk == 1 && !strcmp(r->k[0], key) ? strchr(r->v[0], ',') : NULL;
    if (!comma || strchr(comma + 1, ','))
        return sum_fail(x, PFI_EINVAL, "'%s': expected FILE|%s=A,B|...", r->text, key);
    snprintf(a, n, "%.*s", (int)(comma - r->v[0]), r->v[0]);
    snprintf(b, n, "%s", comma + 1);
    return PFI_OK;
}

/* Spearman rho between COLUMN at two GPU models, over the groups of
 * data/reconstruction/spec.csv whose split is h100 (the paper's H100
 * groups, in table 8's order): FILE|gpu_model=A,B|COLUMN */
static pfi_status rank_corr_models(sum_ctx *x, const sum_ref *r, double *v, char *note, size_t n)
{
    char m1[32], m2[32], ref[320];
    pfi_table *spec;
    long cs, cg;
    pfi_status st = two_values(x, r, "gpu_model", m1, m2, sizeof m1);
    if (!st) st = sum_table(x, SUM_RECON, "spec.csv", &spec);
    if (!st) st = sum_col(x, spec, "spec.csv", "split", &cs);
    if (!st) st = sum_col(x, spec, "spec.csv", "group_id", &cg);
    double a[MAX_GROUPS], b[MAX_GROUPS];
    size_t k = 0;
    for (size_t i = 0; !st && i < pfi_table_nrows(spec); i++) {
        if (strcmp(sum_text(spec, cs, i), "h100")) continue;
        if (k == MAX_GROUPS)
            return sum_fail(x, PFI_ENOMEM, "spec.csv: more than %d h100 groups", MAX_GROUPS);
        const char *g = sum_text(spec, cg, i);
        snprintf(ref, sizeof ref, "%s|group=%s&gpu_model=%s|%s", r->file, g, m1, r->col);
        st = sum_lookup_text(x, SUM_RUN, ref, 1, &a[k]);
        snprintf(ref, sizeof ref, "%s|group=%s&gpu_model=%s|%s", r->file, g, m2, r->col);
        if (!st) st = sum_lookup_text(x, SUM_RUN, ref, 1, &b[k]);
        k++;
    }
    if (st) return st;
    double p;
    pfi_spearman(a, b, k, v, &p);
    return PFI_OK;
}

/* COLUMN at H200 in FOUR (the 4-cap grid) and SIX (the 6-cap grid) over the
 * groups of the paper's table 9 (data/paper/table9_grid_sensitivity.csv):
 * FOUR,SIX|...|COLUMN */
static pfi_status grid_pairs(sum_ctx *x, const sum_ref *r, double *four, double *six, size_t *k)
{
    char f4[96], ref[320];
    const char *comma = strchr(r->file, ',');
    if (!comma || (size_t)(comma - r->file) >= sizeof f4)
        return sum_fail(x, PFI_EINVAL, "'%s': expected FOUR_CAPS.csv,SIX_CAPS.csv|...|COLUMN",
                        r->text);
    snprintf(f4, sizeof f4, "%.*s", (int)(comma - r->file), r->file);
    pfi_table *t9;
    long cg;
    pfi_status st = sum_table(x, SUM_PAPER, "table9_grid_sensitivity.csv", &t9);
    if (!st) st = sum_col(x, t9, "table9_grid_sensitivity.csv", "group_id", &cg);
    *k = 0;
    for (size_t i = 0; !st && i < pfi_table_nrows(t9); i++) {
        if (*k == MAX_GROUPS)
            return sum_fail(x, PFI_ENOMEM, "table 9: more than %d groups", MAX_GROUPS);
        const char *g = sum_text(t9, cg, i);
        snprintf(ref, sizeof ref, "%s|group=%s&gpu_model=H200|%s", f4, g, r->col);
        st = sum_lookup_text(x, SUM_RUN, ref, 1, &four[*k]);
        snprintf(ref, sizeof ref, "%s|group=%s&gpu_model=H200|%s", comma + 1, g, r->col);
        if (!st) st = sum_lookup_text(x, SUM_RUN, ref, 1, &six[*k]);
        ++*k;
    }
    return st;
}

static int cmp_d(const void *a, const void *b)
{
    double p = *(const double *)a, q = *(const double *)b;
    return (p > q) - (p < q);
}

/* median over table 9's groups of the 4-cap minus the 6-cap PFI */
static pfi_status grid_median_increase(sum_ctx *x, const sum_ref *r, double *v, char *note,
                                       size_t n)
{
    double four[MAX_GROUPS], six[MAX_GROUPS], d[MAX_GROUPS];
    size_t k;
    pfi_status st = grid_pairs(x, r, four, six, &k);
    if (st) return st;
    for (size_t i = 0; i < k; i++) d[i] = four[i] - six[i];
    qsort(d, k, sizeof *d, cmp_d);
    *v = k ? pfi_quantile_select(d, k, 0.5) : NAN;
    return PFI_OK;
}

/* Spearman rho of the 6-cap and the 4-cap PFI over table 9's groups */
static pfi_status grid_rank_corr(sum_ctx *x, const sum_ref *r, double *v, char *note, size_t n)
{
    double four[MAX_GROUPS], six[MAX_GROUPS], p;
    size_t k;
    pfi_status st = grid_pairs(x, r, four, six, &k);
    if (st) return st;
    pfi_spearman(six, four, k, v, &p);
    return PFI_OK;
}

/* scenario-cut cells where strategy A's total_tokens_per_s is below strategy
 * B's (by more than 1e-12 relative): FILE|strategy=A,B|count(...); the note
 * says of how many cells */
static pfi_status count_below(sum_ctx *x, const sum_ref *r, double *v, char *note, size_t n)
{
    char sa[64], sb[64];
    pfi_table *t;
    long csc, cst, ccut, ctok;
    pfi_status st = two_values(x, r, "strategy", sa, sb, sizeof sa);
    if (!st) st = sum_table(x, SUM_RUN, r->file, &t);
    if (!st) st = sum_col(x, t, r->file, "scenario", &csc);
    if (!st) st = sum_col(x, t, r->file, "strategy", &cst);
    if (!st) st = sum_col(x, t, r->file, "cut", &ccut);
    if (!st) st = sum_col(x, t, r->file, "total_tokens_per_s", &ctok);
    if (st) return st;
    size_t worse = 0, cells = 0, nr = pfi_table_nrows(t);
    for (size_t i = 0; i < nr; i++) {
        if (strcmp(sum_text(t, cst, i), sa)) continue;
        const char *scn = sum_text(t, csc, i);
        double cut = pfi_table_get(t, (long)i, "cut"),
               mine = pfi_table_get(t, (long)i, "total_tokens_per_s");
        for (size_t q = 0; q < nr; q++)
            if (!strcmp(sum_text(t, cst, q), sb) && !strcmp(sum_text(t, csc, q), scn) &&
                fabs(pfi_table_get(t, (long)q, "cut") - cut) < 1e-9) {
                cells++;
                worse += mine < pfi_table_get(t, (long)q, "total_tokens_per_s") * (1 - 1e-12);
            }
    }
    *v = (double)worse;
    snprintf(note, n, "of %zu scenario-cut cells", cells);
    return PFI_OK;
}

/* groups of one GPU model whose verdict is ok or noisy (a finite robust
 * PFI): FILE|gpu_model=X|count(...); the note has the other verdicts and the
 * ranges of Eq. 1 and the robust PFI */
static pfi_status count_ok_noisy(sum_ctx *x, const sum_ref *r, double *v, char *note, size_t n)
{
    pfi_table *t;
    long cg, cv;
    if (r->nk != 1 || strcmp(r->k[0], "gpu_model"))
        return sum_fail(x, PFI_EINVAL, "'%s': expected FILE|gpu_model=X|count(...)", r->text);
    pfi_status st = sum_table(x, SUM_RUN, r->file, &t);
    if (!st) st = sum_col(x, t, r->file, "gpu_model", &cg);
    if (!st) st = sum_col(x, t, r->file, "verdict", &cv);
    if (st) return st;
    size_t groups = 0, ok = 0, npb = 0;
    double lo = INFINITY, hi = -INFINITY, rlo = INFINITY, rhi = -INFINITY;
    for (size_t i = 0; i < pfi_table_nrows(t); i++) {
        if (strcmp(sum_text(t, cg, i), r->v[0])) continue;
        groups++;
        const char *verdict = sum_text(t, cv, i);
        ok += !strcmp(verdict, "ok") || !strcmp(verdict, "noisy");
        npb += !strcmp(verdict, "not-power-bound");
        double e = pfi_table_get(t, (long)i, "pfi"), rb = pfi_table_get(t, (long)i, "pfi_robust");
        if (isfinite(e)) lo = fmin(lo, e), hi = fmax(hi, e);
        if (isfinite(rb)) rlo = fmin(rlo, rb), rhi = fmax(rhi, rb);
    }
    *v = (double)ok;
    snprintf(note, n,
             "%zu of %zu groups ok/noisy, %zu not power-bound; Eq. 1 spans %.2f..%.2f, robust "
             "%.2f..%.2f",
             ok, groups, npb, lo, hi, rlo, rhi);
    return PFI_OK;
}

/* mean of COLUMN over the rows matching every key; the note has the largest
 * value: FILE|KEY=VALUE[&...]|mean(COLUMN) */
static pfi_status mean_and_max(sum_ctx *x, const sum_ref *r, double *v, char *note, size_t n)
{
    char col[96];
    size_t len = strlen(r->col);
    if (r->nk == 0 || strncmp(r->col, "mean(", 5) || r->col[len - 1] != ')' ||
        len - 6 >= sizeof col)
        return sum_fail(x, PFI_EINVAL, "'%s': expected FILE|KEY=VALUE[&...]|mean(COLUMN)", r->text);
    snprintf(col, sizeof col, "%.*s", (int)(len - 6), r->col + 5);
    pfi_table *t;
    long kc[SUM_MAX_KEYS], cc;
    pfi_status st = sum_table(x, SUM_RUN, r->file, &t);
    if (!st) st = sum_key_cols(x, t, r, kc);
    if (!st) st = sum_col(x, t, r->file, col, &cc);
    if (st) return st;
    double sum = 0, mx = 0;
    int m = 0;
    for (size_t i = 0; i < pfi_table_nrows(t); i++)
        if (sum_row_has(t, kc, r, i)) {
            double e = pfi_table_get(t, (long)i, col);
            sum += e;
            mx = fmax(mx, e);
            m++;
        }
    *v = m ? sum / m : NAN;
    snprintf(note, n, "largest %.3f", mx);
    return PFI_OK;
}

/* safe-online's safety over a scores CSV (docs/allocation.md, "Scoring"):
 * COLUMN summed over the rows matching every key at cuts 5% and deeper and
 * every round (round 0 included: with profiles it is the plan, not the
 * reference); the note has the cells summed and the worst workload's
 * shortfall (worst_vs_ref_in_gaps) with its cut and round:
 * FILE|KEY=VALUE[&...]|rounds(COLUMN) */
static pfi_status rounds_sum(sum_ctx *x, const sum_ref *r, double *v, char *note, size_t n)
{
    char col[96];
    size_t len = strlen(r->col);
    if (r->nk == 0 || strncmp(r->col, "rounds(", 7) || r->col[len - 1] != ')' ||
        len - 8 >= sizeof col)
        return sum_fail(x, PFI_EINVAL, "'%s': expected FILE|KEY=VALUE[&...]|rounds(COLUMN)",
                        r->text);
    snprintf(col, sizeof col, "%.*s", (int)(len - 8), r->col + 7);
    pfi_table *t;
    long kc[SUM_MAX_KEYS], cc, ccut, cr, cw;
    pfi_status st = sum_table(x, SUM_RUN, r->file, &t);
    if (!st) st = sum_key_cols(x, t, r, kc);
    if (!st) st = sum_col(x, t, r->file, col, &cc);
    if (!st) st = sum_col(x, t, r->file, "cut", &ccut);
    if (!st) st = sum_col(x, t, r->file, "round", &cr);
    if (!st) st = sum_col(x, t, r->file, "worst_vs_ref_in_gaps", &cw);
    if (st) return st;
    double sum = 0, worst = INFINITY, wcut = NAN, wround = NAN;
    size_t cells = 0;
    for (size_t i = 0; i < pfi_table_nrows(t); i++) {
        double cut = pfi_table_num(t, (size_t)ccut, i), q = pfi_table_num(t, (size_t)cr, i);
        if (!sum_row_has(t, kc, r, i) || cut < 0.05 - 1e-9 || q < 0) continue;
        sum += pfi_table_num(t, (size_t)cc, i);
        cells++;
        double w = pfi_table_num(t, (size_t)cw, i);
        if (w < worst) worst = w, wcut = cut, wround = q;
    }
    *v = sum;
    snprintf(note, n, "%zu cut-rounds; worst workload %+.2f gaps (%.0f%% cut, round %.0f)", cells,
             worst, 100 * wcut, wround);
    return PFI_OK;
}

/* over the cuts of a scores CSV (the rows matching every key): mean of
 * COLUMN over cuts 5-30% (cutmean; the note has the smallest and its cut)
 * or its sum over cuts 10-30% (cutsum): FILE|KEY=VALUE[&...]|cutmean(COLUMN) */
static pfi_status over_cuts(sum_ctx *x, const sum_ref *r, double *v, char *note, size_t n)
{
    char col[96];
    size_t len = strlen(r->col);
    int mean = !strncmp(r->col, "cutmean(", 8), skip = mean ? 8 : 7;
    if (r->nk == 0 || (!mean && strncmp(r->col, "cutsum(", 7)) || r->col[len - 1] != ')' ||
        len - (size_t)skip - 1 >= sizeof col)
        return sum_fail(x, PFI_EINVAL, "'%s': expected FILE|KEY=VALUE[&...]|cutmean(COLUMN)",
                        r->text);
    snprintf(col, sizeof col, "%.*s", (int)(len - (size_t)skip - 1), r->col + skip);
    pfi_table *t;
    long kc[SUM_MAX_KEYS], cc, ccut;
    pfi_status st = sum_table(x, SUM_RUN, r->file, &t);
    if (!st) st = sum_key_cols(x, t, r, kc);
    if (!st) st = sum_col(x, t, r->file, col, &cc);
    if (!st) st = sum_col(x, t, r->file, "cut", &ccut);
    if (st) return st;
    double sum = 0, lo = INFINITY, lo_cut = NAN, from = mean ? 0.05 : 0.10;
    size_t cells = 0;
    for (size_t i = 0; i < pfi_table_nrows(t); i++) {
        double cut = pfi_table_num(t, (size_t)ccut, i), e = pfi_table_num(t, (size_t)cc, i);
        if (!sum_row_has(t, kc, r, i) || cut < from - 1e-9 || cut > 0.30 + 1e-9 || !isfinite(e))
            continue;
        sum += e;
        cells++;
        if (e < lo) lo = e, lo_cut = cut;
    }
    *v = mean ? (cells ? sum / (double)cells : NAN) : sum;
    snprintf(note, n, "%zu cuts (%.0f-30%%); smallest %.3f at %.0f%%", cells, 100 * from, lo,
             100 * lo_cut);
    return PFI_OK;
}

static const struct {
    const char *name;
    sum_compute_fn fn;
} computations[] = {
    {"rank_corr_h100_h200", rank_corr_models},
    {"grid_median_increase", grid_median_increase},
    {"grid_rank_corr", grid_rank_corr},
    {"count_below_equal", count_below},
    {"count_ok_noisy", count_ok_noisy},
    {"mean_and_max", mean_and_max},
    {"rounds_sum", rounds_sum},
    {"over_cuts", over_cuts},
};

sum_compute_fn sum_compute_find(const char *name)
{
    for (size_t i = 0; i < sizeof computations / sizeof *computations; i++)
        if (!strcmp(computations[i].name, name)) return computations[i].fn;
    return NULL;
}
