/* bench_ingest.c — `pfi ingest` throughput on a generated dcgm-exporter
 * stream: one run directory as a tar stream on a pipe (run.json, a
 * Prometheus text file of BYTES (default 2 GB) — 8 GPUs, 5 s scrapes,
 * 15 metrics per GPU with dcgm-exporter's HELP/TYPE lines and full label
 * sets — and a step log), piped into `$PFI_BIN ingest -`. The figures are
 * the pfi process's own CPU time and peak RSS (getrusage of the child), so
 * the generator running beside it does not count; MB/s = input bytes / pfi
 * CPU seconds (one core). Target: >= 300 MB/s; memory bounded by one run's
 * samples. Nothing is written to disk. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "tar.h"

static const char *const metrics[] = {
    "DCGM_FI_DEV_SM_CLOCK",          "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_GPU_TEMP",          "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_UTIL",          "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_FB_USED",           "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_OCCUPANCY",     "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",      "DCGM_FI_PROF_NVLINK_TX_BYTES",
    "DCGM_FI_PROF_NVLINK_RX_BYTES"};
enum { NM = 15, NG = 8, VALW = 12 };

/* one scrape's text with fixed-width values, so every scrape has the same size */
static size_t scrape_text(char *buf, long long t_ms, long k)
{
    size_t n = (size_t)sprintf(buf, "# pfi-scrape-time %013lld\n", t_ms);
    for (int m = 0; m < NM; m++) {
        n += (size_t)sprintf(buf + n, "# HELP %s DCGM field %d.\n# TYPE %s gauge\n", metrics[m], m,
                             metrics[m]);
        for (int g = 0; g < NG; g++) {
            double v;
            switch (m) {
            case 0: v = 1700 + (k % 29); break;
            case 1: v = 2619; break;
            case 2: v = 55 + g; break;
            case 3: v = 600 + (k % 37) + g; break;
            case 4: v = k < 10 ? 0 : 95; break;
            case 5: v = 40 + (k % 11); break;
            case 6: v = k < 5 ? 2000 : 81000; break;
            case 7: v = 700; break;
            case 13:
            case 14: v = 1.5e10 + (double)(k % 97) * 1e7; break;
            default: v = 0.3 + 0.01 * (double)(k % 7); break;
            }
            n += (size_t)sprintf(buf + n,
                                 "%s{gpu=\"%d\",UUID=\"GPU-8f3a1b2c-4d5e-6f70-8192-a3b4c5d6e7f%d\","
                                 "pci_bus_id=\"00000000:%02X:00.0\","
                                 "device=\"nvidia%d\",modelName=\"NVIDIA "
                                 "H200\",Hostname=\"a3-ultragpu-8g-node-0001\","
                                 "DCGM_FI_DRIVER_VERSION=\"550.90.07\",container=\"\",namespace="
                                 "\"\",pod=\"\"} %*.4f\n",
                                 metrics[m], g, g, 0x18 + g, g, VALW, v);
        }
    }
    return n;
}

static void put_header(FILE *f, const char *name, unsigned long long size)
{
    unsigned char h[512];
    memset(h, 0, sizeof h);
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 108, 8, "%07o", 0);
    snprintf((char *)h + 116, 8, "%07o", 0);
    snprintf((char *)h + 124, 12, "%011llo", size);
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = '0';
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
    fwrite(h, 1, 512, f);
}

static void pad(FILE *f, unsigned long long n)
{
    static const char z[512];
    fwrite(z, 1, (512 - n % 512) % 512, f);
}

int main(int argc, char **argv)
{
    const char *bin = getenv("PFI_BIN");
    if (!bin) {
        fprintf(stderr, "bench_ingest: set PFI_BIN to the pfi binary\n");
        return 1;
    }
    double target = argc > 1 ? atof(argv[1]) : 2e9;
    static char scrape[1 << 20];
    long long T0 = 1767225600000LL;
    size_t per = scrape_text(scrape, T0, 0);
    long nscr = (long)(target / (double)per);
    unsigned long long bytes = (unsigned long long)per * (unsigned long long)nscr;
    int fds[2];
    if (pipe(fds)) return 1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[0], 0);
        close(fds[0]);
        close(fds[1]);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        execl(bin, bin, "ingest", "-", (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    FILE *f = fdopen(fds[1], "w");
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    char json[512];
    int jl =
        snprintf(json, sizeof json,
                 "{\"group\": \"bench\", \"gpu_model\": \"H200\", \"gpus\": 8, \"cap_w\": 700,\n"
                 " \"telemetry\": [{\"path\": \"dcgm.prom\", \"format\": \"prometheus\"}],\n"
                 " \"steplog\": \"steps.jsonl\"}\n");
    double w0 = bench_now();
    put_header(f, "run/run.json", (unsigned long long)jl);
    fwrite(json, 1, (size_t)jl, f);
    pad(f, (unsigned long long)jl);
    put_header(f, "run/dcgm.prom", bytes);
    for (long k = 0; k < nscr; k++) {
        size_t n = scrape_text(scrape, T0 + (long long)k * 5000, k);
        if (fwrite(scrape, 1, n, f) != n) break;
    }
    pad(f, bytes);
    /* step log: one step every 10 s */
    char *steps = malloc((size_t)nscr * 64 + 64);
    size_t sl = 0;
    for (long k = 0; k < nscr / 2; k++)
        sl += (size_t)sprintf(steps + sl, "{\"t_s\": %.1f, \"tokens_per_s\": %d}\n",
                              (double)(T0 + (long long)k * 10000) / 1000.0, 30000 + (int)(k % 13));
    put_header(f, "run/steps.jsonl", sl);
    fwrite(steps, 1, sl, f);
    pad(f, sl);
    static const char z[1024];
    fwrite(z, 1, sizeof z, f);
    fclose(f);
    free(steps);
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    double wall = bench_now() - w0;
    double cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                 (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_ingest: pfi ingest failed (status %d)\n", status);
        return 1;
    }
    printf("ingest of %.2f GB dcgm-exporter text (%ld scrapes x 8 GPUs x %d metrics, %.1f "
           "kB/scrape) through a tar pipe:\n",
           (double)bytes / 1e9, nscr, NM, (double)per / 1e3);
    printf("  pfi CPU %.2f s (user %.2f), wall %.2f s with the generator on the other core\n", cpu,
           (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec, wall);
    BENCH_RESULT("ingest_dcgm_text_MBps_per_core", (double)bytes / 1e6 / cpu, "MB/s",
                 ">= 300 MB/s");
    BENCH_RESULT("ingest_peak_rss", (double)ru.ru_maxrss / 1024.0, "MiB", "bounded by one run");
    return 0;
}
