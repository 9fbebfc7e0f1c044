/* mktrace.c — test fixture: writes one run directory with a hand-designed
 * trace whose protocol answers are known, and prints them.
 *
 *   mktrace DIR [--format prometheus|query_range|nvidia-smi] [--hosts H]
 *           [--gpus-per-host G] [--cap W] [--enforced W] [--no-dips]
 *           [--fault NAME] [--timestamps]
 *
 * Trace (5 s scrapes): warmup 6 (framebuffer 1000 MiB, util 0), startup 4
 * (40000 MiB, util 0), training 360 (util 97; an evaluation dip at scrapes
 * 120-128 with util 40 and low power, a checkpoint dip at 240-245 with util
 * 0), tail 8. Host h scrapes at k*5000 + 200 + 4600*h/hosts ms (out of phase,
 * same bins). GPU power in training = 500 + 10*(i % 10) + gpu W, so the top
 * 10% of the 360 training scrapes are exactly those with i % 10 = 9.
 * Step log every 2 s from 20 s before training to 20 s after; tokens/s =
 * 20100 on every 5th step, else 20000 + step % 5, a 3000 tokens/s step
 * during the checkpoint, none during the evaluation: the top 10% are all
 * 20100 with or without the dips.
 *
 * Printed: expect_power_w, expect_tokens_per_s, expect_sm_clock,
 * expect_dram_copy_product, computed directly from the design (sort the
 * job-level training values, mean of the top ceil(10%)), not through pfi.
 * Faults: backwards (a scrape earlier than the previous), notrain (util
 * never above 50), vanish (one GPU stops reporting halfway: those bins are
 * dropped), overlap (step log outside training), truncate (last line cut),
 * nots (no timestamps at all), gpus (manifest claims one GPU more), nan
 * (NaN in the step log). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WARM = 6, START = 4, TRAIN = 360, TAIL = 8 };
#define NS (WARM + START + TRAIN + TAIL)
static const long long T0 = 1767225600000LL; /* 2026-01-01T00:00:00Z */

typedef struct vals {
    double util, fb, power, sm, mem, temp, gr, smact, occ, tens, dram, copy, limit;
} vals;

static int dips = 1;
static double cap = 700, enforced = NAN;

static int is_train(int k)
{
    return k >= WARM + START && k < WARM + START + TRAIN;
}

static vals at(int k, int g, int ngpu, const char *fault)
{
    vals v;
    memset(&v, 0, sizeof v);
    v.limit = isnan(enforced) ? cap : enforced;
    v.mem = 2619;
    v.temp = 40;
    if (k < WARM) {
        v.fb = 1000, v.power = 90, v.sm = 345;
    } else if (k < WARM + START) {
        v.fb = 40000, v.power = 120, v.sm = 1980;
    } else if (is_train(k)) {
        int i = k - WARM - START;
        v.fb = 60000, v.util = 97, v.power = 500 + 10 * (i % 10) + g, v.sm = 1700 + (i % 10) * 10;
        v.temp = 60, v.gr = 0.9, v.smact = 0.8, v.occ = 0.4, v.tens = 0.5,
        v.dram = 0.3 + 0.01 * (i % 10);
        v.copy = 40 + (i % 10);
        /* the dips avoid i % 10 == 9, the scrapes that make up the top 10%:
         * with or without them the top-10% answers are the same */
        if (dips && i >= 120 && i < 129)
            v.util = 40, v.power = 300, v.sm = 1400, v.dram = 0.1, v.copy = 10;
        if (dips && i >= 240 && i < 246)
            v.util = 0, v.power = 150, v.sm = 1980, v.dram = 0.0, v.copy = 0;
        if (fault && strcmp(fault, "notrain") == 0) v.util = 45;
    } else {
        v.fb = 60000, v.power = 100, v.sm = 1980;
    }
    (void)ngpu;
    return v;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static double top10(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_desc);
    int k = (int)ceil(0.1 * n - 1e-9);
    double s = 0;
    for (int i = 0; i < k; i++) s += x[i];
    return s / k;
}

static const char *names[] = {"DCGM_FI_DEV_GPU_UTIL",
                              "DCGM_FI_DEV_FB_USED",
                              "DCGM_FI_DEV_POWER_USAGE",
                              "DCGM_FI_DEV_SM_CLOCK",
                              "DCGM_FI_DEV_MEM_CLOCK",
                              "DCGM_FI_DEV_GPU_TEMP",
                              "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                              "DCGM_FI_PROF_SM_ACTIVE",
                              "DCGM_FI_PROF_SM_OCCUPANCY",
                              "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                              "DCGM_FI_PROF_DRAM_ACTIVE",
                              "DCGM_FI_DEV_MEM_COPY_UTIL",
                              "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"};
enum { NM = 13 };
static double get(const vals *v, int m)
{
    const double a[NM] = {v->util,  v->fb,  v->power, v->sm,   v->mem,  v->temp, v->gr,
                          v->smact, v->occ, v->tens,  v->dram, v->copy, v->limit};
    return a[m];
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: mktrace DIR [options]\n");
        return 2;
    }
    const char *dir = argv[1], *format = "prometheus", *fault = NULL;
    int hosts = 2, gph = 4, stamps = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--format")) format = argv[++i];
        else if (!strcmp(argv[i], "--hosts")) hosts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gpus-per-host")) gph = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cap")) cap = atof(argv[++i]);
        else if (!strcmp(argv[i], "--enforced")) enforced = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-dips")) dips = 0;
        else if (!strcmp(argv[i], "--fault")) fault = argv[++i];
        else if (!strcmp(argv[i], "--timestamps")) stamps = 1;
        else {
            fprintf(stderr, "mktrace: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    int ngpu = hosts * gph;
    char path[4096];
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    if (system(path) != 0) return 1;
    /* manifest */
    snprintf(path, sizeof path, "%s/run.json", dir);
    FILE *f = fopen(path, "w");
    const char *ext = !strcmp(format, "prometheus")    ? "prom"
                      : !strcmp(format, "query_range") ? "json"
                                                       : "csv";
    fprintf(f,
            "{\"group\": \"test-group\", \"gpu_model\": \"H200\", \"gpus\": %d, \"cap_w\": %g,\n"
            " \"arch\": \"moe\", \"task\": \"ft\", \"model\": \"test-model\", \"split\": "
            "\"headline\",\n"
            " \"metadata\": {\"seq_len\": 4096, \"note\": \"mktrace\"},\n \"telemetry\": [",
            fault && !strcmp(fault, "gpus") ? ngpu + 1 : ngpu, cap);
    for (int h = 0; h < hosts; h++)
        fprintf(f, "%s{\"path\": \"tel-%d.%s\", \"format\": \"%s\", \"host\": \"node-%d\"}",
                h ? ", " : "", h, ext, format, h);
    fprintf(f, "],\n \"steplog\": \"steps.jsonl\"}\n");
    fclose(f);
    /* telemetry, one file per host */
    for (int h = 0; h < hosts; h++) {
        snprintf(path, sizeof path, "%s/tel-%d.%s", dir, h, ext);
        f = fopen(path, "w");
        if (!strcmp(format, "nvidia-smi"))
            fprintf(f, "timestamp, index, uuid, power.draw [W], enforced.power.limit [W], "
                       "clocks.sm [MHz], "
                       "clocks.mem [MHz], utilization.gpu [%%], utilization.memory [%%], "
                       "memory.used [MiB]\n");
        if (!strcmp(format, "query_range"))
            fprintf(f, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
        int first_series = 1;
        int nloops = !strcmp(format, "query_range") ? NM * gph : NS;
        for (int L = 0; L < nloops; L++) {
            if (!strcmp(format, "query_range")) {
                int m = L / gph, gl = L % gph, g = h * gph + gl;
                fprintf(f,
                        "%s{\"metric\":{\"__name__\":\"%s\",\"gpu\":\"%d\",\"UUID\":\"GPU-%04d\","
                        "\"Hostname\":\"node-%d\"},\"values\":[",
                        first_series ? "" : ",", names[m], gl, g, h);
                first_series = 0;
                for (int k = 0; k < NS; k++) {
                    if (fault && !strcmp(fault, "vanish") && g == 1 && k > NS / 2) break;
                    vals v = at(k, g, ngpu, fault);
                    long long t = T0 + (long long)k * 5000 + 200 + 4600LL * h / hosts;
                    fprintf(f, "%s[%.3f,\"%.10g\"]", k ? "," : "", t / 1000.0, get(&v, m));
                }
                fprintf(f, "]}");
                continue;
            }
            int k = L;
            long long t = T0 + (long long)k * 5000 + 200 + 4600LL * h / hosts;
            if (fault && !strcmp(fault, "backwards") && k == 200) t -= 60000;
            if (!strcmp(format, "prometheus")) {
                if (!stamps && !(fault && !strcmp(fault, "nots")))
                    fprintf(f, "# pfi-scrape-time %lld\n", t);
                for (int m = 0; m < NM; m++) {
                    fprintf(f, "# HELP %s test\n# TYPE %s gauge\n", names[m], names[m]);
                    for (int gl = 0; gl < gph; gl++) {
                        int g = h * gph + gl;
                        if (fault && !strcmp(fault, "vanish") && g == 1 && k > NS / 2) continue;
                        vals v = at(k, g, ngpu, fault);
                        fprintf(f,
                                "%s{gpu=\"%d\",UUID=\"GPU-%04d\",pci_bus_id=\"00000000:%02X:00.0\","
                                "device=\"nvidia%d\","
                                "modelName=\"NVIDIA "
                                "H200\",Hostname=\"node-%d\",DCGM_FI_DRIVER_VERSION=\"550.54.15\","
                                "container=\"\",namespace=\"\",pod=\"\"} %.10g",
                                names[m], gl, g, 0x18 + gl, gl, h, get(&v, m));
                        if (stamps) fprintf(f, " %lld", t);
                        fputc('\n', f);
                    }
                }
                /* an unknown metric, to be ignored */
                fprintf(f, "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",Hostname=\"node-%d\"} 0\n", h);
            } else { /* nvidia-smi */
                for (int gl = 0; gl < gph; gl++) {
                    int g = h * gph + gl;
                    if (fault && !strcmp(fault, "vanish") && g == 1 && k > NS / 2) continue;
                    vals v = at(k, g, ngpu, fault);
                    time_t sec = (time_t)(t / 1000);
                    struct tm tm;
                    gmtime_r(&sec, &tm);
                    fprintf(f,
                            "%04d/%02d/%02d %02d:%02d:%02d.%03d, %d, GPU-%04d, %.2f, %.2f, %.0f, "
                            "%.0f, %.0f, %.0f, %.0f\n",
                            tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                            tm.tm_sec, (int)(t % 1000), gl, g, v.power, v.limit, v.sm, v.mem,
                            v.util, v.copy, v.fb);
                }
            }
        }
        if (!strcmp(format, "query_range")) fprintf(f, "]}}\n");
        fclose(f);
        if (fault && !strcmp(fault, "truncate") && h == 0) { /* cut the last line in half */
            f = fopen(path, "r+");
            fseek(f, 0, SEEK_END);
            long n = ftell(f);
            if (ftruncate(fileno(f), n - 100) != 0) return 1; /* into the last known-metric line */
            fclose(f);
        }
    }
    /* step log */
    snprintf(path, sizeof path, "%s/steps.jsonl", dir);
    f = fopen(path, "w");
    double ts0 = (double)(T0 + (long long)(WARM + START) * 5000) / 1000.0;
    double ts1 = (double)(T0 + (long long)(WARM + START + TRAIN) * 5000) / 1000.0;
    double shift = fault && !strcmp(fault, "overlap") ? 1e6 : 0;
    double *tps = malloc(10000 * sizeof *tps);
    int nt = 0;
    long step = 0;
    for (double t = ts0 - 20; t < ts1 + 20; t += 2, step++) {
        double i = (t - ts0) / 5.0;
        if (dips && i >= 120 && i < 129) continue; /* evaluation: no training steps */
        double v = step % 5 == 0 ? 20100 : 20000 + (double)(step % 5);
        if (dips && i >= 240 && i < 246) v = 3000;
        if (fault && !strcmp(fault, "nan") && step == 50)
            fprintf(f, "{\"t_s\": %.3f, \"tokens_per_s\": NaN}\n", t + shift);
        else
            fprintf(f,
                    "{\"t_s\": %.3f, \"step\": %ld, \"tokens_per_s\": %.1f, \"mfu\": 0.41, "
                    "\"loss\": 2.0}\n",
                    t + shift, step, v);
        if (t >= ts0 && t < ts1) tps[nt++] = v;
    }
    fclose(f);
    /* the expected answers, straight from the design */
    double pw[TRAIN], sm[TRAIN], dcp[TRAIN];
    for (int i = 0; i < TRAIN; i++) {
        int k = WARM + START + i;
        pw[i] = sm[i] = dcp[i] = 0;
        double dram = 0, copy = 0;
        for (int g = 0; g < ngpu; g++) {
            vals v = at(k, g, ngpu, fault);
            pw[i] += v.power;
            sm[i] += v.sm / ngpu;
            dram += v.dram / ngpu;
            copy += v.copy / ngpu;
        }
        dcp[i] = dram * copy / 100;
    }
    printf("expect_power_w=%.10g\n", top10(pw, TRAIN));
    printf("expect_tokens_per_s=%.10g\n", top10(tps, nt));
    printf("expect_sm_clock=%.10g\n", top10(sm, TRAIN));
    printf("expect_dram_copy_product=%.10g\n", top10(dcp, TRAIN));
    printf("expect_n_samples=%d\n", TRAIN);
    free(tps);
    return 0;
}
