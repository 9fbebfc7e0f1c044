/* check_summary.c — test tool for `pfi reproduce`: every row of
 * OUT/summary.csv whose source is one file (FILE|k=v[&k=v...]|COLUMN) must
 * show exactly the value in OUT/data/FILE at the row matching all keys; the
 * paper column of the per-group table rows must equal data/paper. Prints
 * the number of rows checked; exits 1 on the first mismatch. Sources that
 * name several files or rows, or an aggregate (mean(...), count(...)), are
 * derived values and are skipped here.
 *
 *   check_summary OUT PAPER_DIR MIN_ROWS */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvtable.h"

static pfi_table *load(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    pfi_table *t = NULL;
    pfi_error e;
    if (pfi_csv_load(path, &t, &e) != PFI_OK) {
        fprintf(stderr, "check_summary: %s\n", e.msg);
        exit(1);
    }
    return t;
}

static const char *text(const pfi_table *t, const char *col, size_t r)
{
    long c = pfi_table_col(t, col);
    if (c < 0) return NULL;
    if (pfi_table_coltype(t, (size_t)c) != PFI_COL_TEXT) return NULL;
    return pfi_table_text(t, (size_t)c, r);
}

/* row of t matching every k=v in keys ("a=1&b=x"); -1 if none, -2 if ambiguous */
static long match(const pfi_table *t, char *keys)
{
    char *kv[8];
    int n = 0;
    for (char *p = strtok(keys, "&"); p && n < 8; p = strtok(NULL, "&")) kv[n++] = p;
    long found = -1;
    for (size_t r = 0; r < pfi_table_nrows(t); r++) {
        int all = 1;
        for (int i = 0; i < n && all; i++) {
            char k[128];
            const char *eq = strchr(kv[i], '=');
            if (!eq) return -1;
            snprintf(k, sizeof k, "%.*s", (int)(eq - kv[i]), kv[i]);
            long c = pfi_table_col(t, k);
            if (c < 0) return -1;
            if (pfi_table_coltype(t, (size_t)c) == PFI_COL_TEXT)
                all = !strcmp(pfi_table_text(t, (size_t)c, r), eq + 1);
            else all = fabs(pfi_table_num(t, (size_t)c, r) - atof(eq + 1)) < 1e-9;
        }
        if (all) {
            if (found >= 0) return -2;
            found = (long)r;
        }
    }
    return found;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: check_summary OUT PAPER_DIR MIN_ROWS\n");
        return 2;
    }
    char data[4096];
    snprintf(data, sizeof data, "%s/data", argv[1]);
    pfi_table *s = load(argv[1], "summary.csv");
    pfi_table *t6 = load(argv[2], "table6_h200_pfi.csv"),
              *t7 = load(argv[2], "table7_h200_validation_pfi.csv");
    size_t checked = 0, paper_checked = 0;
    for (size_t r = 0; r < pfi_table_nrows(s); r++) {
        const char *src = text(s, "source", r), *item = text(s, "item", r),
                   *sec = text(s, "section", r);
        double shown = pfi_table_get(s, (long)r, "pfi");
        /* the paper column of the per-group rows */
        if (sec && item && (!strcmp(sec, "table 6") || !strcmp(sec, "table 7"))) {
            pfi_table *pt = !strcmp(sec, "table 6") ? t6 : t7;
            long pr = pfi_table_find_row(pt, "group_id", item, NULL, NULL);
            double paper = pfi_table_get(s, (long)r, "paper");
            if (pr < 0 || fabs(pfi_table_get(pt, pr, "pfi") - paper) > 1e-12) {
                fprintf(stderr, "check_summary: %s %s: paper %g is not data/paper's value\n", sec,
                        item, paper);
                return 1;
            }
            paper_checked++;
        }
        if (!src || !*src) continue;
        char buf[512];
        snprintf(buf, sizeof buf, "%s", src);
        char *bar1 = strchr(buf, '|'), *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
        if (!bar1 || !bar2) continue;
        *bar1 = *bar2 = '\0';
        /* derived values (several files, several rows, an aggregate) are recomputed elsewhere */
        if (strchr(buf, ',') || strchr(bar1 + 1, ',') || !strchr(bar1 + 1, '=') ||
            strchr(bar2 + 1, '('))
            continue;
        pfi_table *t = load(data, buf);
        long row = match(t, bar1 + 1);
        if (row < 0) {
            fprintf(stderr, "check_summary: row %zu (%s): source %s: %s\n", r + 2, item, src,
                    row == -2 ? "matches several rows" : "no such row");
            pfi_table_free(t);
            return 1;
        }
        double v = pfi_table_get(t, row, bar2 + 1);
        pfi_table_free(t);
        int same = (isnan(v) && isnan(shown)) || fabs(v - shown) <= 1e-9 * fmax(1, fabs(v));
        if (!same) {
            fprintf(stderr, "check_summary: row %zu (%s): summary shows %.12g, %s has %.12g\n",
                    r + 2, item, shown, src, v);
            return 1;
        }
        checked++;
    }
    pfi_table_free(s);
    pfi_table_free(t6);
    pfi_table_free(t7);
    printf("checked %zu summary values against their sources, %zu paper values\n", checked,
           paper_checked);
    if (checked < (size_t)atol(argv[3])) {
        fprintf(stderr, "check_summary: only %zu rows checked, expected at least %s\n", checked,
                argv[3]);
        return 1;
    }
    return 0;
}
