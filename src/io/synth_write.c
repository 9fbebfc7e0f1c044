/* synth_write.c — run directories and tar streams of synthetic runs (see
 * synth_write.h). Lines are assembled from a precomputed label prefix per
 * (GPU, metric) and a fixed-decimal number formatter, so the ~3 GB of the
 * full set is produced at memory speed rather than printf speed. */
#include "synth_write.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic.h"
#include "buf.h"
#include "pfi/steplog.h"
#include "tar.h"

typedef pfi_buf buf;

static void put(buf *b, const char *s, size_t n)
{
    pfi_buf_add(b, s, n);
}

/* non-negative v with d decimals, exactly as printf("%.*f", d, v) */
static void put_fixed(buf *b, double v, int d)
{
    static const long long p10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    char tmp[40];
    int neg = v < 0;
    long long k = llround(fabs(v) * (double)p10[d]);
    long long ip = k / p10[d], fp = k % p10[d];
    int n = 0;
    char digits[24];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + ip % 10);
        ip /= 10;
    } while (ip);
    if (neg && k) tmp[n++] = '-';
    while (nd) tmp[n++] = digits[--nd];
    if (d) {
        tmp[n++] = '.';
        for (int i = d - 1; i >= 0; i--) {
            tmp[n + i] = (char)('0' + fp % 10);
            fp /= 10;
        }
        n += d;
    }
    put(b, tmp, (size_t)n);
}

typedef struct host_text {
    buf text;
    char **prefix; /* [gpu * PFI_M_COUNT + m] "NAME{labels} " */
    size_t *plen;
} host_text;

typedef struct wctx {
    const pfi_recon_group *g;
    int hosts, gph;
    host_text *h;
    buf steps;
} wctx;

static pfi_status w_scrape(void *ud, int host, int64_t t_ms, const double *v, int ngpus,
                           pfi_error *err)
{
    wctx *c = ud;
    host_text *h = &c->h[host];
    char line[64];
    int n = snprintf(line, sizeof line, "# pfi-scrape-time %lld\n", (long long)t_ms);
    put(&h->text, line, (size_t)n);
    for (int mi = 0; mi < pfi_synth_nmetrics; mi++) {
        pfi_metric m = pfi_synth_metrics[mi];
        if (isnan(v[m])) continue; /* metric not generated */
        const char *name = pfi_metric_get(m)->name;
        put(&h->text, "# HELP ", 7);
        put(&h->text, name, strlen(name));
        put(&h->text, " DCGM field.\n# TYPE ", 20);
        put(&h->text, name, strlen(name));
        put(&h->text, " gauge\n", 7);
        for (int gl = 0; gl < ngpus; gl++) {
            double x = v[(size_t)gl * PFI_M_COUNT + m];
            if (isnan(x)) continue;
            size_t k = (size_t)gl * PFI_M_COUNT + m;
            put(&h->text, h->prefix[k], h->plen[k]);
            put_fixed(&h->text, x, pfi_synth_decimals(m));
            put(&h->text, "\n", 1);
        }
    }
    return h->text.st ? pfi_errorf(err, PFI_ENOMEM, "out of memory") : PFI_OK;
}

static pfi_status w_step(void *ud, double t_s, double tps, double mfu, double tflops, long step,
                         pfi_error *err)
{
    wctx *c = ud;
    char line[256];
    int n = pfi_steplog_format(line, sizeof line, t_s, tps, mfu, tflops, step);
    put(&c->steps, line, (size_t)n);
    return c->steps.st ? pfi_errorf(err, PFI_ENOMEM, "out of memory") : PFI_OK;
}

void pfi_synth_run_dir(const pfi_recon_group *g, int run, char *b, size_t n)
{
    snprintf(b, n, "%s/%s/%gW", g->gpu_model, g->group, g->caps_w[run]);
}

static char *manifest_json(const pfi_manifest *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "format_version", json_integer(1));
    json_object_set_new(o, "generator",
                        json_string("pfi synth: "
                                    "reconstruction calibrated to published tables"));
    json_object_set_new(o, "group", json_string(m->group));
    json_object_set_new(o, "gpu_model", json_string(m->gpu_model));
    json_object_set_new(o, "gpus", json_integer(m->gpus));
    json_object_set_new(o, "cap_w", json_real(m->cap_w));
    if (m->arch) json_object_set_new(o, "arch", json_string(m->arch));
    if (m->task) json_object_set_new(o, "task", json_string(m->task));
    if (m->model) json_object_set_new(o, "model", json_string(m->model));
    if (m->split) json_object_set_new(o, "split", json_string(m->split));
    json_object_set_new(o, "interval_s", json_real(m->interval_s));
    json_t *hosts = json_array();
    for (size_t i = 0; i < m->nhosts; i++) json_array_append_new(hosts, json_string(m->hosts[i]));
    json_object_set_new(o, "hosts", hosts);
    json_t *md = json_object();
    for (size_t i = 0; i < m->nmeta; i++)
        json_object_set_new(md, m->meta[i].key, json_string(m->meta[i].value));
    json_object_set_new(o, "metadata", md);
    json_t *tel = json_array();
    for (size_t i = 0; i < m->ntel; i++) {
        json_t *t = json_object();
        json_object_set_new(t, "path", json_string(m->tel[i].path));
        json_object_set_new(t, "format", json_string(pfi_tel_format_name(m->tel[i].format)));
        if (m->tel[i].host) json_object_set_new(t, "host", json_string(m->tel[i].host));
        json_array_append_new(tel, t);
    }
    json_object_set_new(o, "telemetry", tel);
    json_object_set_new(o, "steplog", json_string(m->steplog));
    char *s = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(o);
    return s;
}

static pfi_status mkdirs(const char *path, pfi_error *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return pfi_errorf(err, PFI_EIO, "%s: cannot create directory: %s", tmp,
                                  strerror(errno));
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return pfi_errorf(err, PFI_EIO, "%s: cannot create directory: %s", tmp, strerror(errno));
    return PFI_OK;
}

static pfi_status emit(const char *outdir, FILE *tar, const char *rel, const char *file,
                       const void *data, size_t len, pfi_error *err)
{
    char path[4096];
    if (tar) {
        snprintf(path, sizeof path, "%s/%s", rel, file);
        return pfi_tar_write(tar, path, data, len, err);
    }
    snprintf(path, sizeof path, "%s/%s/%s", outdir, rel, file);
    return pfi_write_file_atomic(path, data, len, err);
}

pfi_status pfi_synth_write_run(const pfi_recon_group *g, int run, const pfi_synth_opts *o,
                               const char *outdir, FILE *tar, size_t *bytes, pfi_error *err)
{
    wctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.hosts = pfi_synth_hosts(g);
    c.gph = pfi_synth_gpus_per_host(g);
    c.h = calloc((size_t)c.hosts, sizeof *c.h);
    pfi_manifest m;
    memset(&m, 0, sizeof m);
    char *json = NULL;
    pfi_status st = c.h ? PFI_OK : pfi_errorf(err, PFI_ENOMEM, "out of memory");
    const char *model_name =
        !strcmp(g->gpu_model, "H100") ? "NVIDIA H100 80GB HBM3" : "NVIDIA H200";
    for (int h = 0; h < c.hosts && !st; h++) {
        host_text *ht = &c.h[h];
        ht->prefix = calloc((size_t)c.gph * PFI_M_COUNT, sizeof *ht->prefix);
        ht->plen = calloc((size_t)c.gph * PFI_M_COUNT, sizeof *ht->plen);
        if (!ht->prefix || !ht->plen) {
            st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
            break;
        }
        char host[64];
        pfi_synth_host_name(g, h, host, sizeof host);
        for (int gl = 0; gl < c.gph && !st; gl++) {
            char uuid[64];
            pfi_synth_gpu_uuid(g, h, gl, uuid, sizeof uuid);
            for (int mi = 0; mi < pfi_synth_nmetrics; mi++) {
                pfi_metric mm = pfi_synth_metrics[mi];
                char line[512];
                int n = snprintf(
                    line, sizeof line,
                    "%s{gpu=\"%d\",UUID=\"%s\",pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%"
                    "d\","
                    "modelName=\"%s\",Hostname=\"%s\",DCGM_FI_DRIVER_VERSION=\"550.90.07\","
                    "container=\"\",namespace=\"\",pod=\"\"} ",
                    pfi_metric_get(mm)->name, gl, uuid, 0x18 + 0x10 * gl, gl, model_name, host);
                size_t k = (size_t)gl * PFI_M_COUNT + mm;
                ht->prefix[k] = strdup(line);
                ht->plen[k] = (size_t)n;
                if (!ht->prefix[k]) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
            }
        }
    }
    for (int h = 0; h < c.hosts && !st; h++) {
        static const char banner[] =
            "# reconstruction calibrated to published tables (arXiv:2609.11542); "
            "generated by pfi synth, not measured\n";
        put(&c.h[h].text, banner, sizeof banner - 1);
    }
    if (!st) {
        pfi_synth_sink sink = {w_scrape, w_step, &c};
        st = pfi_synth_run(g, run, o, &sink, err);
    }
    if (!st) st = pfi_synth_manifest(g, run, o, &m, err);
    if (!st && !(json = manifest_json(&m))) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    char rel[512];
    pfi_synth_run_dir(g, run, rel, sizeof rel);
    if (!st && !tar) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", outdir, rel);
        st = mkdirs(dir, err);
    }
    if (!st) st = emit(outdir, tar, rel, "run.json", json, strlen(json), err);
    size_t total = 0;
    for (int h = 0; h < c.hosts && !st; h++) {
        st = emit(outdir, tar, rel, m.tel[h].path, c.h[h].text.p, c.h[h].text.n, err);
        total += c.h[h].text.n;
    }
    if (!st) st = emit(outdir, tar, rel, "steps.jsonl", c.steps.p, c.steps.n, err);
    total += c.steps.n;
    if (bytes) *bytes = total;
    free(json);
    pfi_manifest_dispose(&m);
    for (int h = 0; c.h && h < c.hosts; h++) {
        if (c.h[h].prefix)
            for (int k = 0; k < c.gph * PFI_M_COUNT; k++) free(c.h[h].prefix[k]);
        free(c.h[h].prefix);
        free(c.h[h].plen);
        free(c.h[h].text.p);
    }
    free(c.h);
    free(c.steps.p);
    return st;
}
