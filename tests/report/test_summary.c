/* test_summary.c — the paper-vs-pfi summary as data (src/report/summary*.c):
 * every row of the bundled data/report/summary_rows.csv resolves its paper
 * cell to a number in data/paper; a broken reference is a one-line error
 * naming the row table's file, line and field; and on a small fixture (a
 * data dir and a run's data/ written here) the rows, lookups, computations,
 * notes and the saved CSV are what they should be. */
#include "../testutil.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csvtable.h"
#include "report.h"

static char root[64];
static char datadir[128], outdir[128];

static void put(const char *dir, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char rows_header[] = "section,item,kind,paper,pfi,compute,note,series\n";

static int setup(void **s)
{
    (void)s;
    snprintf(root, sizeof root, "/tmp/pfi-summary-XXXXXX");
    assert_non_null(mkdtemp(root));
    snprintf(datadir, sizeof datadir, "%s/data", root);
    snprintf(outdir, sizeof outdir, "%s/out", root);
    char d[256];
    static const char *const dirs[] = {"data",        "data/paper", "data/reconstruction",
                                       "data/report", "out",        "out/data"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(d, sizeof d, "%s/%s", root, dirs[i]);
        assert_int_equal(mkdir(d, 0700), 0);
    }
    put(datadir, "paper/table6_h200_pfi.csv", "group_id,pfi\ng1,1.10\ng2,1.50\n");
    put(datadir, "paper/table9_grid_sensitivity.csv",
        "group_id,pfi_6caps,delta\ng1,1.10,0.25\ng2,1.50,0.05\ng3,2.00,0.50\n");
    put(datadir, "paper/text_values.csv",
        "quantity,value,unit,where,text\ngap,0.63,fraction,a section,63%\n");
    put(datadir, "reconstruction/spec.csv",
        "group_id,split\ng1,h100\ng2,headline\ng3,h100\ng4,h100\n");
    put(outdir, "data/recon_index.csv",
        "group,gpu_model,pfi\ng1,H200,1.2\ng1,H100,1.1\ng2,H200,1.4\ng3,H200,2.2\ng3,H100,2.0\ng4,"
        "H200,2.5\ng4,H100,1.7\n");
    put(outdir, "data/recon_index_4caps.csv",
        "group,gpu_model,pfi\ng1,H200,1.5\ng2,H200,1.45\ng3,H200,2.6\n");
    put(outdir, "data/recon_simulate.csv",
        "scenario,strategy,cut,total_tokens_per_s,gap_closed\n"
        "production,equal,0.1,100,0\nproduction,pfi-aware,0.1,110,0.5\n"
        "production,equal,0.3,90,0\nproduction,pfi-aware,0.3,80,0.25\n"
        "random,equal,0.3,50,0\nrandom,pfi-aware,0.3,60,0.7\n");
    put(outdir, "data/zeus_index.csv",
        "gpu_model,group,verdict,pfi,pfi_robust\nA40,z1,ok,1.5,1.2\nA40,z2,noisy,-2,1.4\n"
        "A40,z3,not-power-bound,,\nV100,z4,ok,3,2\n");
    put(outdir, "data/recon_curve_fit.csv",
        "evaluation,cap_w,tokens_frac_rmse\nloco,300,0.02\nloco,400,0.04\nin,300,0.5\n");
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* the bundled row table against the bundled paper data */
static void bundled_paper_cells_resolve(void **s)
{
    (void)s;
    char data[512], rows[600];
    snprintf(data, sizeof data, "%s/data", PFI_SOURCE_DIR);
    snprintf(rows, sizeof rows, "%s/report/summary_rows.csv", data);
    pfi_summary sum;
    pfi_error e;
    if (pfi_report_summary_paper(data, &sum, &e) != PFI_OK) fail_msg("%s", e.msg);
    pfi_table *t = NULL;
    assert_int_equal(pfi_csv_load(rows, &t, NULL), PFI_OK);
    assert_int_equal(sum.n, pfi_table_nrows(t));
    long cp = pfi_table_col(t, "paper");
    assert_true(cp >= 0);
    size_t with_paper = 0;
    for (size_t i = 0; i < sum.n; i++) {
        int has_ref = pfi_table_text(t, (size_t)cp, i)[0] != '\0';
        if (has_ref != isfinite(sum.r[i].paper))
            fail_msg("row %zu (%s): paper %g", i + 2, sum.r[i].item, sum.r[i].paper);
        with_paper += has_ref;
        assert_true(isnan(sum.r[i].pfi)); /* no run */
        if (!strcmp(sum.r[i].kind, "beyond")) assert_false(has_ref);
    }
    print_message("%zu summary rows, %zu with a paper value\n", sum.n, with_paper);
    assert_true(with_paper >= 100);
    /* a few, one of each kind of cell: a table, a sum of two cells, the text */
    struct {
        const char *section, *item;
        double paper;
    } want[] = {
        {"table 6", "dense-ft-llama70b-x16", 1.10},
        {"table 8", "H100 val-dense-pt-mistral24b-x8", 1.26},
        {"table 9", "moe-ft-gptoss20b-x8-seq4096-bs8", 2.67 + 0.646}, /* pfi_6caps + delta */
        {"tables 10-13", "Kruskal-Wallis H", 12.37},
        {"tables 10-13", "Kruskal-Wallis p (target < 0.01)", 0.0021},
        {"tables 10-13", "rho after dropping the 3 highest-leverage groups", 0.321},
        {"table 3", "all_dcgm_metrics+job_metadata: loco_r2", -104},
        {"allocation", "cuts where pfi-aware is below equal weight (both scenarios)", 0},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        size_t i = 0;
        while (i < sum.n &&
               (strcmp(sum.r[i].section, want[k].section) || strcmp(sum.r[i].item, want[k].item)))
            i++;
        if (i == sum.n) fail_msg("no row '%s' in '%s'", want[k].item, want[k].section);
        if (sum.r[i].paper != want[k].paper)
            fail_msg("%s: paper %.17g, want %.17g", want[k].item, sum.r[i].paper, want[k].paper);
    }
    pfi_table_free(t);
    pfi_summary_dispose(&sum);
}

static const char fixture_rows[] =
    "table "
    "6,g1,target,table6_h200_pfi.csv|group_id=g1|pfi,recon_index.csv|group=g1&gpu_model=H200|pfi,,,"
    "\n"
    "table "
    "9,g3,target,table9_grid_sensitivity.csv|group_id=g3|pfi_6caps+delta,recon_index_4caps.csv|"
    "group=g3&gpu_model=H200|pfi,,a note,\n"
    "table "
    "8,rank,outcome,,\"recon_index.csv|gpu_model=H100,H200|pfi\",rank_corr_h100_h200,Spearman,\n"
    "table 9,median,outcome,,\"recon_index_4caps.csv,recon_index.csv|8-GPU "
    "groups|pfi\",grid_median_increase,,\n"
    "table 9,rho,outcome,,\"recon_index_4caps.csv,recon_index.csv|8-GPU "
    "groups|pfi\",grid_rank_corr,,\n"
    "allocation,gap,outcome,text_values.csv|quantity=gap|value,recon_simulate.csv|scenario="
    "production&strategy=pfi-aware&cut=0.3|gap_closed,,,\n"
    "allocation,below,outcome,,\"recon_simulate.csv|strategy=pfi-aware,equal|count(total_tokens_"
    "per_s below equal)\",count_below_equal,,\n"
    "Zeus (real),A40,beyond,,\"zeus_index.csv|gpu_model=A40|count(verdict in "
    "ok,noisy)\",count_ok_noisy,,\n"
    "beyond the "
    "paper,curve,beyond,,recon_curve_fit.csv|evaluation=loco|mean(tokens_frac_rmse),mean_and_max,,"
    "\n"
    "beyond the "
    "paper,missing,beyond,,recon_simulate.csv|scenario=production&strategy=oracle&cut=0.3|gap_"
    "closed,,,s1\n";

static void fixture(void **s)
{
    (void)s;
    char rows[4096];
    snprintf(rows, sizeof rows, "%s%s", rows_header, fixture_rows);
    put(datadir, "report/summary_rows.csv", rows);
    pfi_summary sum;
    pfi_error e;
    if (pfi_report_summary(outdir, datadir, &sum, &e) != PFI_OK) fail_msg("%s", e.msg);
    assert_int_equal(sum.n, 10);
    const pfi_srow *r = sum.r;
    assert_string_equal(r[0].section, "table 6");
    assert_true(r[0].paper == 1.10 && r[0].pfi == 1.2);
    assert_string_equal(r[0].kind, "target");
    assert_true(r[1].paper == 2.00 + 0.50 && r[1].pfi == 2.6);
    assert_string_equal(r[1].note, "a note");
    assert_near(r[2].pfi, 0.5, 1e-12); /* ranks H100 1,3,2 vs H200 1,2,3 over g1, g3, g4 */
    assert_string_equal(r[2].note, "Spearman");
    assert_near(r[3].pfi, 0.3, 1e-12); /* 4 - 6 caps: 0.3, 0.05, 0.4 */
    assert_near(r[4].pfi, 0.5, 1e-12);
    assert_true(r[5].paper == 0.63 && r[5].pfi == 0.25);
    assert_true(r[6].pfi == 1);
    assert_string_equal(r[6].note, "of 3 scenario-cut cells");
    assert_true(r[7].pfi == 2);
    assert_string_equal(
        r[7].note,
        "2 of 3 groups ok/noisy, 1 not power-bound; Eq. 1 spans -2.00..1.50, robust 1.20..1.40");
    assert_near(r[8].pfi, 0.03, 1e-15);
    assert_string_equal(r[8].note, "largest 0.040");
    assert_true(isnan(r[9].pfi) && isnan(r[9].paper)); /* the run has no such row */
    assert_string_equal(r[9].series, "s1");
    for (size_t i = 2; i < sum.n; i++)
        if (i != 5) assert_true(isnan(r[i].paper));
    char path[256];
    snprintf(path, sizeof path, "%s/summary.csv", outdir);
    assert_int_equal(pfi_summary_save(&sum, path, NULL), PFI_OK);
    pfi_summary_dispose(&sum);
    FILE *f = fopen(path, "r");
    char line[512];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "section,item,paper,pfi,difference,kind,source,note\n");
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(
        line, "table 6,g1,1.1,1.2,0.1,target,recon_index.csv|group=g1&gpu_model=H200|pfi,\n");
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(
        line,
        "table 9,g3,2.5,2.6,0.1,target,recon_index_4caps.csv|group=g3&gpu_model=H200|pfi,a note\n");
    fclose(f);
    /* without a run: the same rows, paper values only */
    assert_int_equal(pfi_report_summary_paper(datadir, &sum, NULL), PFI_OK);
    assert_int_equal(sum.n, 10);
    assert_true(sum.r[1].paper == 2.5 && isnan(sum.r[1].pfi) && isnan(sum.r[2].pfi));
    pfi_summary_dispose(&sum);
}

/* line 3 of the row table replaced by bad; the error must be expect (a prefix when prefix) */
static void broken(const char *bad, const char *expect, int prefix)
{
    char rows[2048], want[1024];
    snprintf(rows, sizeof rows, "%s%.*s%s\n", rows_header,
             (int)(strchr(fixture_rows, '\n') - fixture_rows + 1), fixture_rows, bad);
    put(datadir, "report/summary_rows.csv", rows);
    snprintf(want, sizeof want, "%s/report/summary_rows.csv:3: %s", datadir, expect);
    pfi_summary sum;
    pfi_error e;
    assert_int_not_equal(pfi_report_summary(outdir, datadir, &sum, &e), PFI_OK);
    assert_null(strchr(e.msg, '\n'));
    if (prefix ? strncmp(e.msg, want, strlen(want)) : strcmp(e.msg, want))
        fail_msg("got '%s', want '%s'", e.msg, want);
    assert_int_equal(sum.n, 0);
    assert_null(sum.r);
}

static void broken_references(void **s)
{
    (void)s;
    static const char pfi_ok[] = "recon_index.csv|group=g1&gpu_model=H200|pfi";
    char row[512], path[256];
#define ROW(kind, paper, pfi, compute)                                                             \
    (snprintf(row, sizeof row, "t,i,%s,%s,%s,%s,,", kind, paper, pfi, compute), row)
    broken(ROW("target", "table6_h200_pfi.csv|group_id=nope|pfi", pfi_ok, ""),
           "paper: table6_h200_pfi.csv has no row group_id=nope", 0);
    broken(ROW("target", "table6_h200_pfi.csv|group_id=g1|pfx", pfi_ok, ""),
           "paper: table6_h200_pfi.csv has no column 'pfx'", 0);
    broken(ROW("target", "table6_h200_pfi.csv|gruop_id=g1|pfi", pfi_ok, ""),
           "paper: table6_h200_pfi.csv has no column 'gruop_id'", 0);
    snprintf(path, sizeof path, "paper: %s/paper/table5.csv: cannot open", datadir);
    broken(ROW("target", "table5.csv|group_id=g1|pfi", pfi_ok, ""), path, 1);
    broken(ROW("target", "table6_h200_pfi.csv|group_id=g1", pfi_ok, ""),
           "paper: 'table6_h200_pfi.csv|group_id=g1' is not FILE|KEY=VALUE[&KEY=VALUE...]|COLUMN",
           0);
    broken(ROW("target", "table6_h200_pfi.csv|g1|pfi", pfi_ok, ""),
           "paper: 'table6_h200_pfi.csv|g1|pfi': 'g1' is not KEY=VALUE[&KEY=VALUE...]", 0);
    broken(ROW("target", "../table6_h200_pfi.csv|group_id=g1|pfi", pfi_ok, ""),
           "paper: '../table6_h200_pfi.csv' is not a file name", 0);
    broken(ROW("target", "", pfi_ok, "nosuch"),
           "compute: no computation called 'nosuch' (summary_compute.c)", 0);
    broken(ROW("maybe", "", pfi_ok, ""), "kind: 'maybe' is not target, outcome or beyond", 0);
    broken(ROW("beyond", "", "", ""), "pfi: empty: every row names its source", 0);
    broken(ROW("beyond", "", "recon_index.csv|group=g1&gpu_model=H200|pfx", ""),
           "pfi: recon_index.csv has no column 'pfx'", 0);
    broken(ROW("beyond", "", "recon_index.csv|group=g1|pfi", ""),
           "pfi: recon_index.csv: group=g1 matches 2 rows", 0);
    snprintf(path, sizeof path, "pfi: %s/data/recon_nothing.csv: cannot open", outdir);
    broken(ROW("beyond", "", "recon_nothing.csv|group=g1|pfi", ""), path, 1);
    broken(ROW("beyond", "", "zeus_index.csv|A40|count(x)", "count_ok_noisy"),
           "pfi: 'zeus_index.csv|A40|count(x)': expected FILE|gpu_model=X|count(...)", 0);
    broken("t,i,beyond,,x.csv|a=b|c,,", "row: expected 8 fields, found 7", 0);
#undef ROW
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bundled_paper_cells_resolve),
        cmocka_unit_test(fixture),
        cmocka_unit_test(broken_references),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
