/* report.h — the `pfi reproduce` report: the "paper vs pfi" summary built
 * from the run's CSV outputs and data/paper by the row table
 * data/report/summary_rows.csv (summary.c), the figures (figures.c) and the
 * HTML / Markdown pages (html.c). Every number comes from a file: the
 * paper's from data/paper, pfi's from a file the run wrote; each summary row
 * names its source (file|key=value[&key=value]|column, or an aggregate such
 * as file|key=value|mean(column) for derived values) so tests can check it. */
#ifndef PFI_REPORT_H
#define PFI_REPORT_H

#include <stdio.h>

#include "pfi/status.h"

typedef struct pfi_srow {
    char section[40]; /* "table 6", "table 3", "allocation", "beyond the paper", ... */
    char item[160];
    double paper, pfi; /* paper NaN for beyond-the-paper rows */
    char kind[12];     /* target (calibrated to), outcome (not tuned), beyond */
    char source[300];
    char note[200];
    char series[80]; /* rows sharing a series print as one terminal line */
} pfi_srow;

typedef struct pfi_summary {
    pfi_srow *r;
    size_t n, cap;
} pfi_summary;

/* the rows of datadir/report/summary_rows.csv, with the paper's values
 * from datadir/paper and pfi's from the CSVs under outdir/data. Errors
 * name the row table's file, line and field. */
pfi_status pfi_report_summary(const char *outdir, const char *datadir, pfi_summary *s,
                              pfi_error *err);
/* the same rows with the paper's values only (pfi NaN): checks the row table
 * and data/paper without a run */
pfi_status pfi_report_summary_paper(const char *datadir, pfi_summary *s, pfi_error *err);
void pfi_summary_dispose(pfi_summary *s);
pfi_status pfi_summary_save(const pfi_summary *s, const char *path, pfi_error *err);
void pfi_summary_print(const pfi_summary *s, FILE *f);

/* the figures into outdir/ (PNG + SVG each) */
pfi_status pfi_report_figures(const char *outdir, pfi_error *err);

/* outdir/index.html and outdir/report.md */
pfi_status pfi_report_pages(const char *outdir, const pfi_summary *s, const char *argv_line,
                            double seconds, int workloads, pfi_error *err);

#endif
