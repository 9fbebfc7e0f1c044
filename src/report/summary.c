/* summary.c — the "paper vs pfi" table (see report.h). The rows are data:
 * data/report/summary_rows.csv (installed with the rest of data/; described
 * in data/report/README.md and docs/method.md) has one line per summary
 * row — section, item, kind, the paper's cell, pfi's cell, an optional
 * computation, note, series — and this file only walks it: it looks up the
 * paper's cell in data/paper (summary_ref.c), looks up pfi's cell in the
 * run's data/ or, for the few rows that aggregate several cells (a rank
 * correlation, a median, counts, a mean), calls the named computation
 * (summary_compute.c), and writes the row. No number of the paper is in the
 * code. `kind` says whether the reconstruction was calibrated to the number
 * (target), the number is an outcome of the reconstruction that was never
 * tuned (outcome), or it goes beyond the paper (beyond). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/reader.h"
#include "rows.h"
#include "summary_int.h"

/* the row table's columns, in this order in idx[] */
static const char *const row_cols[] = {"section", "item",    "kind", "paper",
                                       "pfi",     "compute", "note", "series"};
enum { C_SECTION, C_ITEM, C_KIND, C_PAPER, C_PFI, C_COMPUTE, C_NOTE, C_SERIES, C_N };

static pfi_status header(sum_ctx *x, const pfi_csv *c, size_t idx[C_N])
{
    for (int k = 0; k < C_N; k++) {
        size_t i = 0;
        while (i < c->nfields && strcmp(c->fields[i], row_cols[k])) i++;
        if (i == c->nfields) {
            x->field = row_cols[k];
            return sum_fail(x, PFI_ENOTFOUND, "no such column in the header");
        }
        idx[k] = i;
    }
    return PFI_OK;
}

static pfi_status copy(sum_ctx *x, char *dst, size_t n, char *const *f, const size_t *idx, int k)
{
    x->field = row_cols[k];
    const char *v = f[idx[k]];
    if (strlen(v) >= n) return sum_fail(x, PFI_EINVAL, "longer than %zu characters", n - 1);
    memcpy(dst, v, strlen(v) + 1);
    return PFI_OK;
}

/* the row's text columns, checked */
static pfi_status row_text(sum_ctx *x, char *const *f, const size_t *idx, pfi_srow *r)
{
    pfi_status st = copy(x, r->section, sizeof r->section, f, idx, C_SECTION);
    if (!st) st = copy(x, r->item, sizeof r->item, f, idx, C_ITEM);
    if (!st) st = copy(x, r->kind, sizeof r->kind, f, idx, C_KIND);
    if (!st) st = copy(x, r->source, sizeof r->source, f, idx, C_PFI);
    if (!st) st = copy(x, r->note, sizeof r->note, f, idx, C_NOTE);
    if (!st) st = copy(x, r->series, sizeof r->series, f, idx, C_SERIES);
    if (st) return st;
    x->field = "kind";
    if (strcmp(r->kind, "target") && strcmp(r->kind, "outcome") && strcmp(r->kind, "beyond"))
        return sum_fail(x, PFI_EINVAL, "'%s' is not target, outcome or beyond", r->kind);
    x->field = "item";
    if (!r->section[0] || !r->item[0])
        return sum_fail(x, PFI_EINVAL, "section and item must not be empty");
    x->field = "pfi";
    if (!r->source[0]) return sum_fail(x, PFI_EINVAL, "empty: every row names its source");
    return PFI_OK;
}

/* the paper's value: a cell of data/paper that must hold a number */
static pfi_status paper_value(sum_ctx *x, const char *ref, double *v)
{
    *v = NAN;
    x->field = "paper";
    if (!ref[0]) return PFI_OK;
    sum_ref r;
    pfi_status st = sum_ref_parse(x, ref, 1, &r);
    if (!st) st = sum_lookup(x, SUM_PAPER, &r, 0, v);
    if (!st && isnan(*v)) st = sum_fail(x, PFI_EINVAL, "%s: the cell %s is empty", r.file, r.text);
    return st;
}

/* pfi's value: computed, or the cell of the run's data/ (NaN if the run has no such row) */
static pfi_status pfi_value(sum_ctx *x, const char *compute, pfi_srow *r)
{
    r->pfi = NAN;
    x->field = "compute";
    sum_compute_fn fn = NULL;
    if (compute[0] && !(fn = sum_compute_find(compute)))
        return sum_fail(x, PFI_EINVAL, "no computation called '%s' (summary_compute.c)", compute);
    x->field = "pfi";
    sum_ref ref;
    pfi_status st = sum_ref_parse(x, r->source, !fn, &ref);
    if (st || !x->outdir) return st;
    if (!fn) return sum_lookup(x, SUM_RUN, &ref, 1, &r->pfi);
    char note[sizeof r->note] = "";
    st = fn(x, &ref, &r->pfi, note, sizeof note);
    if (!st && note[0]) {
        size_t have = strlen(r->note);
        snprintf(r->note + have, sizeof r->note - have, "%s%s", have ? "; " : "", note);
    }
    return st;
}

static pfi_status build_row(sum_ctx *x, char *const *f, const size_t *idx, pfi_srow *r)
{
    memset(r, 0, sizeof *r);
    pfi_status st = row_text(x, f, idx, r);
    if (!st) st = paper_value(x, f[idx[C_PAPER]], &r->paper);
    if (!st) st = pfi_value(x, f[idx[C_COMPUTE]], r);
    return st;
}

static pfi_status walk(sum_ctx *x, pfi_csv *c, pfi_summary *s)
{
    size_t idx[C_N];
    x->line = 1;
    int rc = pfi_csv_next(c, x->err);
    if (rc == 0) return sum_fail(x, PFI_EINVAL, "empty file");
    pfi_status st = rc < 0 ? (x->err ? x->err->code : PFI_EPARSE) : header(x, c, idx);
    size_t nh = c->nfields;
    while (!st && (rc = pfi_csv_next(c, x->err)) == 1) {
        x->line = (unsigned long)c->line;
        x->field = NULL;
        if (c->nfields != nh)
            return sum_fail(x, PFI_EPARSE, "expected %zu fields, found %zu", nh, c->nfields);
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 128;
            pfi_srow *p = realloc(s->r, cap * sizeof *p);
            if (!p) return sum_fail(x, PFI_ENOMEM, "out of memory");
            s->r = p;
            s->cap = cap;
        }
        st = build_row(x, c->fields, idx, &s->r[s->n]);
        if (!st) s->n++;
    }
    if (!st && rc < 0) st = x->err ? x->err->code : PFI_EPARSE;
    return st;
}

/* outdir NULL: the paper's values only */
static pfi_status summary_build(const char *outdir, const char *datadir, pfi_summary *s,
                                pfi_error *err)
{
    memset(s, 0, sizeof *s);
    sum_ctx *x = calloc(1, sizeof *x);
    if (!x) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    x->outdir = outdir;
    x->datadir = datadir;
    x->err = err;
    snprintf(x->rows_path, sizeof x->rows_path, "%s/report/summary_rows.csv", datadir);
    pfi_reader rd;
    pfi_status st = pfi_reader_open(&rd, x->rows_path, 0, err);
    if (!st) {
        pfi_csv c;
        pfi_csv_init(&c, &rd);
        st = walk(x, &c, s);
        pfi_csv_dispose(&c);
        pfi_reader_close(&rd);
    }
    sum_tables_free(x);
    free(x);
    if (st) pfi_summary_dispose(s);
    return st;
}

pfi_status pfi_report_summary(const char *outdir, const char *datadir, pfi_summary *s,
                              pfi_error *err)
{
    return summary_build(outdir, datadir, s, err);
}

pfi_status pfi_report_summary_paper(const char *datadir, pfi_summary *s, pfi_error *err)
{
    return summary_build(NULL, datadir, s, err);
}

void pfi_summary_dispose(pfi_summary *s)
{
    free(s->r);
    memset(s, 0, sizeof *s);
}

pfi_status pfi_summary_save(const pfi_summary *s, const char *path, pfi_error *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return pfi_errorf(err, PFI_EIO, "%s: cannot create", path);
    fprintf(f, "section,item,paper,pfi,difference,kind,source,note\n");
    for (size_t i = 0; i < s->n; i++) {
        const pfi_srow *r = &s->r[i];
        pfi_csv_write_text(f, r->section);
        fputc(',', f);
        pfi_csv_write_text(f, r->item);
        char a[64] = "", b[64] = "", d[64] = "";
        if (isfinite(r->paper)) pfi_fmt_num(a, sizeof a, r->paper);
        if (isfinite(r->pfi)) pfi_fmt_num(b, sizeof b, r->pfi);
        if (isfinite(r->paper) && isfinite(r->pfi)) pfi_fmt_num(d, sizeof d, r->pfi - r->paper);
        fprintf(f, ",%s,%s,%s,", a, b, d);
        pfi_csv_write_text(f, r->kind);
        fputc(',', f);
        pfi_csv_write_text(f, r->source);
        fputc(',', f);
        pfi_csv_write_text(f, r->note);
        fputc('\n', f);
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return pfi_errorf(err, PFI_EIO, "%s: write failed", path);
    return PFI_OK;
}

/* table 3 as one sub-table: R^2 in-sample, LOO, LOCO, paper and pfi */
static size_t print_table3(const pfi_summary *s, size_t i, FILE *f)
{
    fprintf(f, "\ntable 3 (predictor ablation, outcome except dram_copy_product in-sample)\n");
    fprintf(f, "  %-40s %15s %15s %15s\n", "", "R^2 in-sample", "LOO R^2", "LOCO R^2");
    fprintf(f, "  %-40s %7s %7s %7s %7s %7s %7s\n", "predictors", "paper", "pfi", "paper", "pfi",
            "paper", "pfi");
    while (i < s->n && !strcmp(s->r[i].section, "table 3")) {
        char pred[160];
        snprintf(pred, sizeof pred, "%s", s->r[i].item);
        char *colon = strrchr(pred, ':');
        if (colon) *colon = '\0';
        double v[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
        for (; i < s->n && !strcmp(s->r[i].section, "table 3") &&
               !strncmp(s->r[i].item, pred, strlen(pred)) && s->r[i].item[strlen(pred)] == ':';
             i++) {
            const char *c = s->r[i].item + strlen(pred) + 2;
            int k = !strcmp(c, "r2_in")     ? 0
                    : !strcmp(c, "loo_r2")  ? 1
                    : !strcmp(c, "loco_r2") ? 2
                                            : -1;
            if (k >= 0) v[2 * k] = s->r[i].paper, v[2 * k + 1] = s->r[i].pfi;
        }
        fprintf(f, "  %-40.40s %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f\n", pred, v[0], v[1], v[2], v[3],
                v[4], v[5]);
    }
    fputc('\n', f);
    return i;
}

static size_t print_series(const pfi_summary *s, size_t i, FILE *f)
{
    const pfi_srow *r = &s->r[i];
    size_t j = i;
    while (j < s->n && !strcmp(s->r[j].series, r->series)) j++;
    fprintf(f, "%-16s %s\n", r->section, r->series);
    if (isfinite(r->paper)) {
        fprintf(f, "%-16s   paper", "");
        for (size_t k = i; k < j; k++) fprintf(f, " %6.3f", s->r[k].paper);
        fputc('\n', f);
    }
    fprintf(f, "%-16s   pfi  ", "");
    for (size_t k = i; k < j; k++) fprintf(f, " %6.3f", s->r[k].pfi);
    fprintf(f, "   (%s)\n", r->kind);
    return j;
}

/* a row's section and item, indented by indent, padded to the numbers'
 * column; an item too long for it is printed whole on its own line and the
 * numbers go on the next, so no two rows read alike ("... round 5" and
 * "... round 15" were cut to the same 64 characters; issue 30) */
#define SUMMARY_ITEM_W 64
static void label(FILE *f, const char *section, const char *item, int indent)
{
    int w = SUMMARY_ITEM_W - indent;
    if ((int)strlen(item) <= w) {
        fprintf(f, "%-16s %*s%-*s", section, indent, "", w, item);
        return;
    }
    fprintf(f, "%-16s %*s%s\n", section, indent, "", item);
    fprintf(f, "%-16s %*s", "", SUMMARY_ITEM_W, "");
}

void pfi_summary_print(const pfi_summary *s, FILE *f)
{
    /* per-group tables collapse to their largest deviation; series to one line */
    fprintf(f,
            "\npaper vs pfi  (target: the reconstruction was calibrated to it; outcome: not tuned, "
            "follows from the model; beyond: not in the paper)\n");
    fprintf(f, "%-16s %-64s %9s %9s %9s  %s\n", "", "", "paper", "pfi", "diff", "kind");
    for (size_t i = 0; i < s->n;) {
        const pfi_srow *r = &s->r[i];
        if (!strcmp(r->section, "table 3")) {
            i = print_table3(s, i, f);
            continue;
        }
        if (r->series[0]) {
            i = print_series(s, i, f);
            continue;
        }
        int per_group = !strcmp(r->section, "table 6") || !strcmp(r->section, "table 7") ||
                        (!strcmp(r->section, "table 8") && !strncmp(r->item, "H100 ", 5)) ||
                        (!strcmp(r->section, "table 9") && !strchr(r->item, ' '));
        if (per_group) {
            size_t j = i, n = 0, worst = i;
            double wd = -1, sum = 0;
            while (j < s->n && !strcmp(s->r[j].section, r->section) &&
                   (!strcmp(r->section, "table 9")   ? !strchr(s->r[j].item, ' ')
                    : !strcmp(r->section, "table 8") ? !strncmp(s->r[j].item, "H100 ", 5)
                                                     : 1)) {
                double d = fabs(s->r[j].pfi - s->r[j].paper);
                if (!(d <= wd)) wd = d, worst = j;
                sum += d;
                n++;
                j++;
            }
            char item[200];
            snprintf(item, sizeof item, "PFI of %zu groups: mean |diff| %.3f; largest at", n,
                     n ? sum / (double)n : NAN);
            fprintf(f, "%-16s %-64s\n", r->section, item);
            label(f, "", s->r[worst].item, 2);
            fprintf(f, " %9.3f %9.3f %+9.3f  %s\n", s->r[worst].paper, s->r[worst].pfi,
                    s->r[worst].pfi - s->r[worst].paper, r->kind);
            i = j;
            continue;
        }
        label(f, r->section, r->item, 0);
        if (isfinite(r->paper))
            fprintf(f, " %9.4g %9.4g %+9.3g  %s\n", r->paper, r->pfi, r->pfi - r->paper, r->kind);
        else
            fprintf(f, " %9s %9.4g %9s  %s%s%s\n", "-", r->pfi, "", r->kind, r->note[0] ? "; " : "",
                    r->note);
        i++;
    }
}
