/* bench_index.c — `pfi index` speed: (1) a generated 1,000,000-row sweep
 * table, no CIs (target < 1 s on one core): parse + group + index + CSV
 * output, timed by phase; (2) 1,000 groups with 10,000-resample CIs of Eq. 1
 * (target < 2 s). Prints its figures; asserts nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "pfi/groups.h"
#include "pfi/index.h"
#include "pfi/sweep.h"
#include "rows.h"

static void gen_table(const char *path, size_t rows)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "group,gpu_model,gpus,cap_w,tokens_per_s,power_w,tokens_per_s_sem,power_w_sem\n");
    const int caps[] = {200, 300, 400, 500, 600, 700};
    size_t groups = rows / 6;
    unsigned long long s = 1;
    for (size_t g = 0; g < groups; g++) {
        double elast = 0.4 + 0.5 * (double)(g % 97) / 97.0;
        for (int k = 0; k < 6; k++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            double noise = 1 + 0.002 * ((double)(s >> 40) / 16777216.0 - 0.5);
            double p = 8 * (150 + 0.8 * caps[k]) * noise;
            double t = 40000.0 * pow(p / 5680.0, elast);
            fprintf(f, "job-%zu,H200,8,%d,%.2f,%.1f,%.3f,%.2f\n", g, caps[k], t, p, t * 0.0005,
                    p * 0.0004);
        }
    }
    fclose(f);
}

static double run_index(pfi_table *t, int want_ci, size_t *ngroups, double *t_group,
                        double *t_index, double *t_out)
{
    double t0 = bench_now();
    pfi_groups gs;
    pfi_error err;
    if (pfi_groups_build(t, &gs, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    double t1 = bench_now();
    pfi_index_opts o;
    pfi_index_opts_default(&o);
    o.want_ci = want_ci;
    pfi_index_row *rows = calloc(gs.n, sizeof *rows);
    if (pfi_index_run(&gs, &o, rows, NULL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    double t2 = bench_now();
    const char *names[] = {"gpu_model", "group",      "pfi",    "pfi_ci_lo",
                           "pfi_ci_hi", "pfi_robust", "verdict"};
    pfi_celltype ty[] = {PFI_CELL_TEXT, PFI_CELL_TEXT, PFI_CELL_NUM, PFI_CELL_NUM,
                         PFI_CELL_NUM,  PFI_CELL_NUM,  PFI_CELL_TEXT};
    pfi_rows *r = pfi_rows_new(7, names, ty);
    for (size_t i = 0; i < gs.n; i++) {
        size_t k = pfi_rows_add(r);
        pfi_rows_text(r, k, 0, gs.g[i].gpu_model);
        pfi_rows_text(r, k, 1, gs.g[i].name);
        pfi_rows_num(r, k, 2, rows[i].eq1.pfi);
        pfi_rows_num(r, k, 3, rows[i].ci.lo);
        pfi_rows_num(r, k, 4, rows[i].ci.hi);
        pfi_rows_num(r, k, 5, rows[i].robust.pfi_robust);
        pfi_rows_text(r, k, 6, pfi_verdict_name(rows[i].robust.verdict));
    }
    FILE *devnull = fopen("/dev/null", "w");
    pfi_rows_write(r, PFI_FMT_CSV, devnull, &err);
    fclose(devnull);
    double t3 = bench_now();
    pfi_rows_free(r);
    *ngroups = gs.n;
    pfi_index_rows_dispose(rows, gs.n);
    free(rows);
    pfi_groups_dispose(&gs);
    *t_group = t1 - t0;
    *t_index = t2 - t1;
    *t_out = t3 - t2;
    return t3 - t0;
}

int main(int argc, char **argv)
{
    size_t nrows = argc > 1 ? (size_t)atol(argv[1]) : 1000000;
    char path[] = "/tmp/pfi-bench-index-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    gen_table(path, nrows);
    FILE *f = fopen(path, "r");
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fclose(f);

    double c0 = bench_cpu(), w0 = bench_now();
    pfi_table *t = pfi_table_new();
    pfi_error err;
    if (pfi_sweep_read(t, path, NULL, NULL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double w1 = bench_now();
    size_t ng;
    double tg, ti, to;
    double rest = run_index(t, 0, &ng, &tg, &ti, &to);
    double c1 = bench_cpu();
    printf("index on %zu rows (%.1f MB), %zu groups, no CI:\n", pfi_table_nrows(t), bytes / 1e6,
           ng);
    printf("  parse %.3f s, group %.3f s, index %.3f s, output %.3f s\n", w1 - w0, tg, ti, to);
    BENCH_RESULT("index_1M_rows_no_ci_wall_s", (w1 - w0) + rest, "s", "< 1 s");
    BENCH_RESULT("index_1M_rows_no_ci_cpu_s", c1 - c0, "s", "< 1 s");
    BENCH_RESULT("index_1M_rows_peak_rss", bench_peak_rss_mib(), "MiB", "-");
    pfi_table_free(t);
    const char *bin = getenv("PFI_BIN");
    if (bin) { /* the command itself, end to end, output to /dev/null */
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "'%s' index --no-ci --format csv '%s' >/dev/null", bin, path);
        double a = bench_now();
        int rc = system(cmd);
        double b = bench_now();
        if (rc == 0) BENCH_RESULT("pfi_index_cli_1M_rows_no_ci_wall_s", b - a, "s", "< 1 s");
    }
    unlink(path);

    /* 1,000 groups x 10,000 resamples */
    fd = mkstemp(path);
    close(fd);
    gen_table(path, 6000);
    t = pfi_table_new();
    if (pfi_sweep_read(t, path, NULL, NULL, &err)) return 1;
    c0 = bench_cpu();
    double wall = run_index(t, 1, &ng, &tg, &ti, &to);
    c1 = bench_cpu();
    printf("index with 10,000-resample CIs on %zu groups: index %.3f s\n", ng, ti);
    BENCH_RESULT("index_1000_groups_ci10k_wall_s", wall, "s", "< 2 s");
    BENCH_RESULT("index_1000_groups_ci10k_cpu_s", c1 - c0, "s", "< 2 s");
    pfi_table_free(t);
    unlink(path);
    return 0;
}
