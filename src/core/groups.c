/* groups.c — building sweep groups from a sweep table (see groups.h).
 * Rows are bucketed by (gpu_model id, group id) with a hash map, then each
 * bucket is sorted by cap and repeats are merged into curve points. */
#include "pfi/groups.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct sort_ctx_row {
    double cap;
    size_t row;
} sort_row;

static int cmp_row(const void *a, const void *b)
{
    const sort_row *x = a, *y = b;
    if (x->cap != y->cap) return (x->cap > y->cap) - (x->cap < y->cap);
    return (x->row > y->row) - (x->row < y->row);
}

static long col_req(const pfi_table *t, const char *name, pfi_error *err)
{
    long c = pfi_table_col(t, name);
    if (c < 0) pfi_errorf(err, PFI_EINVAL, "sweep table has no column '%s'", name);
    return c;
}

uint64_t pfi_group_key(const pfi_group *g)
{
    return pfi_hash_str(g->name, pfi_hash_str(g->gpu_model, 0x5eed));
}

void pfi_groups_dispose(pfi_groups *gs)
{
    for (size_t i = 0; i < gs->n; i++) pfi_curve_dispose(&gs->g[i].curve);
    free(gs->g);
    free(gs->row_storage);
    gs->g = NULL;
    gs->row_storage = NULL;
    gs->n = 0;
}

/* the sweep table's columns that grouping reads (-1: absent, optional) */
typedef struct cols {
    long g, m, gpus, cap, tok, pow, tsem, psem, arch, task, model, split;
} cols;

/* rows -> group ids by (gpu_model id, group id) with a hash map, in order
 * of first appearance: gid[r], first[g] (the group's first row), count[g] */
static size_t assign_groups(const pfi_table *t, const cols *c, size_t nr, size_t nslots,
                            long *slots, uint64_t *keys, size_t *gid, size_t *first, size_t *count)
{
    for (size_t i = 0; i < nslots; i++) slots[i] = -1;
    size_t ng = 0;
    for (size_t r = 0; r < nr; r++) {
        uint64_t key = ((uint64_t)pfi_table_text_id(t, (size_t)c->m, r) << 32) |
                       pfi_table_text_id(t, (size_t)c->g, r);
        size_t j = pfi_mix64(key) & (nslots - 1);
        while (slots[j] >= 0 && keys[slots[j]] != key) j = (j + 1) & (nslots - 1);
        if (slots[j] < 0) {
            slots[j] = (long)ng;
            keys[ng] = key;
            first[ng] = r;
            ng++;
        }
        gid[r] = (size_t)slots[j];
        count[gid[r]]++;
    }
    return ng;
}

/* one curve point from the rows sr[k..m) that share a cap: means of power
 * and throughput; SEMs combined from the rows' own SEMs, or from the
 * repeats' spread when that is larger */
static void cap_point(const pfi_table *t, const cols *c, const sort_row *sr, size_t k, size_t m,
                      pfi_point *p)
{
    size_t rep = m - k;
    double sp = 0, stok = 0, vsp = 0, vst = 0;
    int have_psem = 1, have_tsem = 1;
    for (size_t q = k; q < m; q++) {
        size_t r = sr[q].row;
        sp += pfi_table_num(t, (size_t)c->pow, r);
        stok += pfi_table_num(t, (size_t)c->tok, r);
        double a = c->psem >= 0 ? pfi_table_num(t, (size_t)c->psem, r) : NAN;
        double b = c->tsem >= 0 ? pfi_table_num(t, (size_t)c->tsem, r) : NAN;
        if (isnan(a)) have_psem = 0;
        else vsp += a * a;
        if (isnan(b)) have_tsem = 0;
        else vst += b * b;
    }
    p->cap_w = sr[k].cap;
    p->power_w = sp / (double)rep;
    p->tokens_per_s = stok / (double)rep;
    p->repeats = (int)rep;
    p->power_w_sem = have_psem ? sqrt(vsp) / (double)rep : NAN;
    p->tokens_per_s_sem = have_tsem ? sqrt(vst) / (double)rep : NAN;
    if (rep >= 2) {
        double dp = 0, dt = 0;
        for (size_t q = k; q < m; q++) {
            size_t r = sr[q].row;
            double a = pfi_table_num(t, (size_t)c->pow, r) - p->power_w;
            double b = pfi_table_num(t, (size_t)c->tok, r) - p->tokens_per_s;
            dp += a * a;
            dt += b * b;
        }
        double bp = sqrt(dp / (double)(rep - 1) / (double)rep);
        double bt = sqrt(dt / (double)(rep - 1) / (double)rep);
        if (isnan(p->power_w_sem) || bp > p->power_w_sem) p->power_w_sem = bp;
        if (isnan(p->tokens_per_s_sem) || bt > p->tokens_per_s_sem) p->tokens_per_s_sem = bt;
    }
}

static const char *text_or_empty(const pfi_table *t, long c, size_t r)
{
    return c >= 0 && pfi_table_coltype(t, (size_t)c) == PFI_COL_TEXT
               ? pfi_table_text(t, (size_t)c, r)
               : "";
}

/* group g's attributes (from its first row r0), its rows sorted by cap into
 * sr (n of them, all with the same GPU count), and its curve from pts */
static pfi_status fill_group(const pfi_table *t, const cols *c, pfi_group *g, size_t n, size_t r0,
                             sort_row *sr, pfi_point *pts, pfi_error *err)
{
    g->nrows = n;
    g->name = pfi_table_text(t, (size_t)c->g, r0);
    g->gpu_model = pfi_table_text(t, (size_t)c->m, r0);
    g->arch = text_or_empty(t, c->arch, r0);
    g->task = text_or_empty(t, c->task, r0);
    g->model = text_or_empty(t, c->model, r0);
    g->split = text_or_empty(t, c->split, r0);
    g->gpus = (int)pfi_table_num(t, (size_t)c->gpus, r0);
    for (size_t k = 0; k < n; k++) {
        size_t r = g->rows[k];
        sr[k].cap = pfi_table_num(t, (size_t)c->cap, r);
        sr[k].row = r;
        if ((int)pfi_table_num(t, (size_t)c->gpus, r) != g->gpus) {
            const char *f1, *f2;
            uint64_t l1, l2;
            pfi_table_row_origin(t, r0, &f1, &l1);
            pfi_table_row_origin(t, r, &f2, &l2);
            return pfi_errorf(err, PFI_EINVAL,
                              "%s:%llu: column 'gpus': group '%s' (%s) has %g GPUs here but %d "
                              "at %s:%llu",
                              f2, (unsigned long long)l2, g->name, g->gpu_model,
                              pfi_table_num(t, (size_t)c->gpus, r), g->gpus, f1,
                              (unsigned long long)l1);
        }
    }
    qsort(sr, n, sizeof *sr, cmp_row);
    size_t np = 0;
    for (size_t k = 0; k < n;) {
        size_t m = k;
        while (m < n && sr[m].cap == sr[k].cap) m++;
        cap_point(t, c, sr, k, m, &pts[np++]);
        if (m == n) g->n_uncapped_rows = m - k;
        k = m;
    }
    for (size_t k = 0; k < n; k++) g->rows[k] = sr[k].row;
    return pfi_curve_init(&g->curve, pts, np, err);
}

/* each group's rows and curve; sr and pts grow to the largest group */
static pfi_status fill_groups(const pfi_table *t, const cols *c, pfi_groups *out,
                              const size_t *first, const size_t *count, pfi_error *err)
{
    sort_row *sr = NULL;
    pfi_point *pts = NULL;
    size_t scap = 0;
    pfi_status st = PFI_OK;
    for (size_t gi = 0; gi < out->n && st == PFI_OK; gi++) {
        size_t n = count[gi];
        if (n > scap) {
            free(sr);
            free(pts);
            sr = malloc(n * sizeof *sr);
            pts = malloc(n * sizeof *pts);
            scap = n;
            if (!sr || !pts) {
                st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
                break;
            }
        }
        st = fill_group(t, c, &out->g[gi], n, first[gi], sr, pts, err);
    }
    free(sr);
    free(pts);
    return st;
}

pfi_status pfi_groups_build(const pfi_table *t, pfi_groups *out, pfi_error *err)
{
    memset(out, 0, sizeof *out);
    cols c = {.g = col_req(t, "group", err),
              .m = col_req(t, "gpu_model", err),
              .gpus = col_req(t, "gpus", err),
              .cap = col_req(t, "cap_w", err),
              .tok = col_req(t, "tokens_per_s", err),
              .pow = col_req(t, "power_w", err)};
    if (c.g < 0 || c.m < 0 || c.gpus < 0 || c.cap < 0 || c.tok < 0 || c.pow < 0)
        return err ? err->code : PFI_EINVAL;
    if (pfi_table_coltype(t, (size_t)c.g) != PFI_COL_TEXT ||
        pfi_table_coltype(t, (size_t)c.m) != PFI_COL_TEXT)
        return pfi_errorf(err, PFI_EINVAL, "columns group and gpu_model must be text");
    c.tsem = pfi_table_col(t, "tokens_per_s_sem");
    c.psem = pfi_table_col(t, "power_w_sem");
    c.arch = pfi_table_col(t, "arch");
    c.task = pfi_table_col(t, "task");
    c.model = pfi_table_col(t, "model");
    c.split = pfi_table_col(t, "split");
    size_t nr = pfi_table_nrows(t);
    if (nr == 0) return pfi_errorf(err, PFI_EINVAL, "sweep table has no rows");

    size_t nslots = 64;
    while (nslots < 2 * nr) nslots *= 2;
    long *slots = malloc(nslots * sizeof *slots);
    size_t *gid = malloc(nr * sizeof *gid);
    uint64_t *keys = malloc(nr * sizeof *keys);
    size_t *first = malloc(nr * sizeof *first);
    size_t *count = calloc(nr, sizeof *count);
    pfi_status st = PFI_OK;
    if (!slots || !gid || !keys || !first || !count) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory grouping %zu rows", nr);
        goto done;
    }
    size_t ng = assign_groups(t, &c, nr, nslots, slots, keys, gid, first, count);
    out->g = calloc(ng, sizeof *out->g);
    out->row_storage = malloc(nr * sizeof *out->row_storage);
    if (!out->g || !out->row_storage) {
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        goto done;
    }
    /* counting sort rows into groups */
    size_t off = 0;
    for (size_t g = 0; g < ng; g++) {
        out->g[g].rows = out->row_storage + off;
        off += count[g];
        count[g] = 0;
    }
    for (size_t r = 0; r < nr; r++) out->g[gid[r]].rows[count[gid[r]]++] = r;
    out->n = ng;
    st = fill_groups(t, &c, out, first, count, err);
done:
    free(slots);
    free(gid);
    free(keys);
    free(first);
    free(count);
    if (st) pfi_groups_dispose(out);
    return st;
}

double pfi_group_uncapped_mean(const pfi_table *t, const pfi_group *g, size_t col)
{
    if (pfi_table_coltype(t, col) != PFI_COL_NUM) return NAN;
    double s = 0;
    size_t n = 0;
    for (size_t k = g->nrows - g->n_uncapped_rows; k < g->nrows; k++) {
        double v = pfi_table_num(t, col, g->rows[k]);
        if (!isnan(v)) {
            s += v;
            n++;
        }
    }
    return n ? s / (double)n : NAN;
}

const char *pfi_group_text(const pfi_table *t, const pfi_group *g, const char *col)
{
    long c = pfi_table_col(t, col);
    if (c < 0 || g->nrows == 0) return "";
    if (pfi_table_coltype(t, (size_t)c) != PFI_COL_TEXT) return "";
    return pfi_table_text(t, (size_t)c, g->rows[0]);
}
