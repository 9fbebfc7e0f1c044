/* html.c — the report pages: OUT/index.html (self-contained: inline CSS,
 * relative image paths, no external URL; a small inline script records on
 * <body> whether every image loaded, for the browser test) and OUT/report.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

typedef struct fig {
    const char *name, *title, *caption;
    int recon;
    int sim; /* built from simulated workloads: say how many */
} fig;

static const fig figs[] = {
    {"fig3_curves", "Power-throughput curves (paper fig. 3)",
     "The 25 headline groups' measured points per GPU (left) and normalized by the uncapped run "
     "(right); the dashed "
     "line is throughput proportional to power.",
     1, 0},
    {"fig4_pfi_by_family", "PFI by architecture and task (paper fig. 4)",
     "Eq. 1 per group, with each family's median.", 1, 0},
    {"fig5_pfi_vs_features", "PFI vs telemetry of the uncapped run (paper fig. 5)",
     "Each headline group's PFI against four features of its uncapped run, with Spearman's rho.", 1,
     0},
    {"fig7_predicted_vs_measured", "Predicted vs measured PFI (paper fig. 7)",
     "OLS on dram_copy_product fitted on the 25 headline groups, applied to them and to the "
     "held-out validation and "
     "H100 groups.",
     1, 0},
    {"fig8_deficit", "Throughput deficit vs the oracle (paper fig. 8)",
     "Mean over the workloads of 100 jobs of the oracle's total minus each strategy's, per job, by "
     "cluster cut, in "
     "both scenarios.",
     1, 1},
    {"fig_closed_loop", "Closed loop (beyond the paper)",
     "Share of the equal-to-oracle gap closed at a 30% cut, after each control round of observe, "
     "update, re-optimize.",
     1, 1},
    {"fig_sla_violations", "SLA violations (beyond the paper)",
     "Jobs over their allowed throughput loss with a Flex 0/1/2/3 mix of 10/30/30/30%, by strategy "
     "and cut.",
     1, 1},
    {"fig_zeus_pfi", "Eq. 1 vs robust PFI on real traces (beyond the paper)",
     "The Zeus power-limit sweeps (real measurements, one run per point): Eq. 1 explodes or goes "
     "negative where "
     "losses are noise; the robust PFI stays finite for power-bound groups.",
     0, 0},
    {"fig_zeus_deficit", "Allocation on held-out real traces (beyond the paper)",
     "Zeus P100 and RTX 6000 jobs (held out), predictor fitted on A40 + V100, normalized objective "
     "(each job's throughput as a share of its uncapped "
     "throughput), cuts up to 30%.",
     0, 1},
};

static void html_esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

static void num(FILE *f, double v)
{
    if (isnan(v)) fputs("-", f);
    else fprintf(f, "%.4g", v);
}

static void fig_tail(FILE *f, const fig *g, int workloads)
{
    if (g->sim) fprintf(f, " %d workloads.", workloads);
    fputs(g->recon ? " <i>Reconstruction calibrated to published tables, not measured data.</i>"
                   : " <i>Real measurements.</i>",
          f);
}

static void row_html(FILE *f, const pfi_srow *r)
{
    fputs("<tr><td>", f);
    html_esc(f, r->section);
    fputs("</td><td>", f);
    html_esc(f, r->item);
    fputs("</td><td class=\"n\">", f);
    num(f, r->paper);
    fputs("</td><td class=\"n\">", f);
    num(f, r->pfi);
    fputs("</td><td class=\"n\">", f);
    num(f, isfinite(r->paper) ? r->pfi - r->paper : NAN);
    fprintf(f, "</td><td class=\"kind-%s\">%s</td><td>", r->kind, r->kind);
    html_esc(f, r->note);
    fputs("</td></tr>\n", f);
}

/* the rows a reader wants first: the allocation headline and what goes beyond it */
static int highlight(const pfi_srow *r)
{
    return !strcmp(r->section, "allocation") || !strncmp(r->item, "curve-aware:", 12) ||
           !strncmp(r->item, "closed-loop:", 12) || strstr(r->item, "Kruskal-Wallis H") ||
           strstr(r->item, "rho(dram_copy_product, PFI), all") ||
           !strcmp(r->item, "dram_copy_product: r2_in") ||
           !strcmp(r->item, "dram_copy_product: loco_r2");
}

/* what the two pages show */
typedef struct page_args {
    const pfi_summary *s;
    const char *argv_line;
    double seconds;
    int workloads;
} page_args;

/* index.html: the honesty note, the highlights, the figures, the table */
static void html_page(FILE *f, const page_args *A)
{
    const pfi_summary *s = A->s;
    const char *argv_line = A->argv_line;
    double seconds = A->seconds;
    int workloads = A->workloads;
    fputs(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<title>pfi reproduce: Power Flexibility Index (arXiv:2609.11542)</title>\n<style>\n"
        "body{font-family:-apple-system,Segoe "
        "UI,Helvetica,Arial,sans-serif;max-width:1180px;margin:2em auto;padding:0 1em;color:#222}\n"
        "h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\n"
        ".warn{background:#fff4e5;border-left:4px solid #f0a020;padding:.6em 1em}\n"
        "table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border-bottom:1px "
        "solid #e4e4e4;padding:.25em .6em;text-align:left}\n"
        "td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}\n"
        ".kind-target{color:#1f6f1f}.kind-outcome{color:#8a5a00}.kind-beyond{color:#1f4f9f}\n"
        "figure{margin:1.5em 0}figure img{max-width:100%;border:1px solid "
        "#ddd}figcaption{font-size:.9em;color:#444}\n"
        ".small{font-size:.85em;color:#555}\n</style></head>\n<body>\n",
        f);
    fputs("<h1>pfi reproduce: power elasticity of AI training jobs</h1>\n", f);
    fputs("<p class=\"warn\"><b>Honesty note.</b> Every H100/H200 number and figure below comes "
          "from a "
          "<b>reconstruction calibrated to published tables</b> of arXiv:2609.11542 (the paper's "
          "raw data is not public): a "
          "physical model whose per-group parameters were fitted to tables 6-9 (docs/model.md). "
          "Rows marked "
          "<span class=\"kind-target\">target</span> were calibrated to; rows marked <span "
          "class=\"kind-outcome\">outcome</span> "
          "were never tuned. The Zeus traces are <b>real measurements</b> (NSDI'23, "
          "Apache-2.0).</p>\n",
          f);
    fprintf(f, "<p class=\"small\">Command: <code>");
    html_esc(f, argv_line);
    fprintf(f,
            "</code> &middot; %.0f s &middot; every number here was computed in this run and is in "
            "<code>data/</code>.</p>\n",
            seconds);
    static const char thead[] = "<table><tr><th>section</th><th>item</th><th>paper</th><th>pfi</"
                                "th><th>diff</th><th>kind</th>"
                                "<th>note</th></tr>\n";
    fprintf(f, "<h2>Highlights</h2>\n%s", thead);
    for (size_t i = 0; i < s->n; i++)
        if (highlight(&s->r[i])) row_html(f, &s->r[i]);
    fputs(
        "</table>\n<p class=\"small\">The full table is below the figures.</p>\n<h2>Figures</h2>\n",
        f);
    for (size_t i = 0; i < sizeof figs / sizeof *figs; i++) {
        fprintf(f, "<figure><img src=\"%s.png\" alt=\"%s\"><figcaption><b>%s.</b> %s", figs[i].name,
                figs[i].title, figs[i].title, figs[i].caption);
        fig_tail(f, &figs[i], workloads);
        fprintf(f, " (<a href=\"%s.svg\">SVG</a>)</figcaption></figure>\n", figs[i].name);
    }
    fprintf(f, "<h2>Paper vs pfi</h2>\n%s", thead);
    for (size_t i = 0; i < s->n; i++) row_html(f, &s->r[i]);
    fputs("</table>\n<h2>Files</h2>\n<p class=\"small\">CSV outputs: <a href=\"data/\">data/</a>; "
          "the summary as CSV: "
          "<a href=\"summary.csv\">summary.csv</a>; this report as Markdown: <a "
          "href=\"report.md\">report.md</a>.</p>\n",
          f);
    fputs("<script>\nwindow.addEventListener('load', function () {\n  var imgs = document.images, "
          "ok = 0;\n"
          "  for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > "
          "0) ok++;\n"
          "  document.body.setAttribute('data-images', imgs.length);\n  "
          "document.body.setAttribute('data-images-loaded', ok);\n"
          "});\n</script>\n</body></html>\n",
          f);
}

/* report.md: the same as Markdown */
static void md_page(FILE *f, const page_args *A)
{
    const pfi_summary *s = A->s;
    const char *argv_line = A->argv_line;
    double seconds = A->seconds;
    int workloads = A->workloads;
    fprintf(f,
            "# pfi reproduce\n\n> Every H100/H200 number and figure here comes from a "
            "**reconstruction calibrated to "
            "published tables** of arXiv:2609.11542 (the raw data is not public). `target` rows "
            "were calibrated to; "
            "`outcome` rows were never tuned. The Zeus traces are **real measurements**.\n\n"
            "Command: `%s` (%.0f s)\n\n## Figures\n\n",
            argv_line, seconds);
    for (size_t i = 0; i < sizeof figs / sizeof *figs; i++) {
        fprintf(f, "![%s](%s.png)\n\n*%s.* %s", figs[i].title, figs[i].name, figs[i].title,
                figs[i].caption);
        if (figs[i].sim) fprintf(f, " %d workloads.", workloads);
        fputs(figs[i].recon
                  ? " Reconstruction calibrated to published tables, not measured data.\n\n"
                  : " Real measurements.\n\n",
              f);
    }
    fprintf(f, "## Paper vs pfi\n\n| section | item | paper | pfi | diff | kind | note "
               "|\n|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < s->n; i++) {
        const pfi_srow *r = &s->r[i];
        char a[32] = "-", b[32] = "-", d[32] = "-";
        if (isfinite(r->paper)) snprintf(a, sizeof a, "%.4g", r->paper);
        if (isfinite(r->pfi)) snprintf(b, sizeof b, "%.4g", r->pfi);
        if (isfinite(r->paper) && isfinite(r->pfi))
            snprintf(d, sizeof d, "%+.3g", r->pfi - r->paper);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s |\n", r->section, r->item, a, b, d, r->kind,
                r->note);
    }
}

/* OUTDIR/NAME written whole (NAME.tmp, then renamed) by page */
static pfi_status write_page(const char *outdir, const char *name,
                             void (*page)(FILE *, const page_args *), const page_args *A,
                             pfi_error *err)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return pfi_errorf(err, PFI_EIO, "%s: cannot create", path);
    page(f, A);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return pfi_errorf(err, PFI_EIO, "%s: write failed", path);
    return PFI_OK;
}

pfi_status pfi_report_pages(const char *outdir, const pfi_summary *s, const char *argv_line,
                            double seconds, int workloads, pfi_error *err)
{
    page_args A = {s, argv_line, seconds, workloads};
    pfi_status st = write_page(outdir, "index.html", html_page, &A, err);
    return st ? st : write_page(outdir, "report.md", md_page, &A, err);
}
