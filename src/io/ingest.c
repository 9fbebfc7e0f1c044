/* ingest.c — reading run directories, trees of them and tar streams of
 * them into run summaries (see ingest.h). Each telemetry file's samples go
 * into the run's bins through one callback that keys GPUs (UUID, else
 * host:gpu) and checks that a series' timestamps never go backwards by more
 * than half an interval; the protocol itself is pfi_summarize_run. */
#include "pfi/ingest.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pfi/manifest.h"
#include "pfi/prom.h"
#include "pfi/steplog.h"
#include "tar.h"
#include "telemetry.h"
#include "vec.h"

struct pfi_ingest {
    pfi_ingest_opts o;
    pfi_log *log;
    pfi_run_summary **runs;
    size_t nruns, cap;
};

void pfi_ingest_opts_default(pfi_ingest_opts *o)
{
    memset(o, 0, sizeof *o);
    pfi_protocol_opts_default(&o->proto);
    /* an operator's runs: the loop's own rate (the paper's top 10% is kept
       by pfi reproduce, which asks for it) */
    o->proto.tput_agg = PFI_AGG_RATE;
    o->max_buffered_bytes = (size_t)1 << 30;
}

pfi_ingest *pfi_ingest_new(const pfi_ingest_opts *o, pfi_log *log)
{
    pfi_ingest *ing = calloc(1, sizeof *ing);
    if (!ing) return NULL;
    ing->o = *o;
    ing->log = log;
    return ing;
}

void pfi_ingest_free(pfi_ingest *ing)
{
    if (!ing) return;
    for (size_t i = 0; i < ing->nruns; i++) {
        pfi_run_summary_dispose(ing->runs[i]);
        free(ing->runs[i]);
    }
    free(ing->runs);
    free(ing);
}

size_t pfi_ingest_nruns(const pfi_ingest *ing)
{
    return ing->nruns;
}
const pfi_run_summary *pfi_ingest_run(const pfi_ingest *ing, size_t i)
{
    return ing->runs[i];
}

pfi_status pfi_ingest_table(const pfi_ingest *ing, pfi_table **out, pfi_error *err)
{
    if (ing->nruns == 0) return pfi_errorf(err, PFI_EINVAL, "no runs ingested");
    return pfi_summaries_table((const pfi_run_summary *const *)ing->runs, ing->nruns, out, err);
}

/* ---- one run being read ---- */

typedef struct run_state {
    pfi_ingest *ing;
    pfi_manifest m;
    char *name;
    pfi_protocol_opts proto;
    pfi_bins *bins;
    pfi_steplog steps;
    int have_steps;
    int *tel_done;
    /* per file being read */
    const char *file;
    const char *default_host;
    int64_t *last_t; /* [gpu][metric] latest timestamp in the current file */
    size_t nlast;
    int64_t half_iv_ms;
} run_state;

static void run_free(run_state *r)
{
    pfi_manifest_dispose(&r->m);
    free(r->name);
    pfi_bins_free(r->bins);
    pfi_steplog_dispose(&r->steps);
    free(r->tel_done);
    free(r->last_t);
    memset(r, 0, sizeof *r);
}

static pfi_status run_begin(pfi_ingest *ing, run_state *r, const char *json, size_t len,
                            const char *name, pfi_error *err)
{
    memset(r, 0, sizeof *r);
    r->ing = ing;
    char mname[4200];
    snprintf(mname, sizeof mname, "%s/run.json", name);
    pfi_status st = pfi_manifest_parse(json, len, mname, &r->m, ing->log, err);
    if (st) return st;
    r->name = strdup(name);
    r->proto = ing->o.proto;
    if (r->m.interval_s > 0) r->proto.interval_s = r->m.interval_s;
    r->half_iv_ms = (int64_t)(r->proto.interval_s * 500.0);
    r->bins = pfi_bins_new(&r->proto);
    r->tel_done = calloc(r->m.ntel, sizeof *r->tel_done);
    if (!r->name || !r->bins || !r->tel_done) {
        run_free(r);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    return PFI_OK;
}

static pfi_status on_sample(void *ud, const pfi_sample *s, pfi_error *err)
{
    run_state *r = ud;
    pfi_str host = s->host;
    if (!host.n && r->default_host) {
        host.p = r->default_host;
        host.n = strlen(r->default_host);
    }
    int g;
    if (s->uuid.n) {
        g = pfi_bins_gpu(r->bins, s->uuid.p, s->uuid.n);
    } else if (s->gpu.n) {
        char key[256];
        int n = snprintf(key, sizeof key, "%.*s:%.*s", (int)host.n, host.p ? host.p : "",
                         (int)s->gpu.n, s->gpu.p);
        if (n < 0 || (size_t)n >= sizeof key)
            return pfi_errorf(err, PFI_EINVAL, "%s:%llu: host/gpu label too long", r->file,
                              (unsigned long long)s->line);
        g = pfi_bins_gpu(r->bins, key, (size_t)n);
    } else {
        return pfi_errorf(err, PFI_EINVAL, "%s:%llu: sample has neither a UUID nor a gpu label",
                          r->file, (unsigned long long)s->line);
    }
    if (g < 0)
        return pfi_errorf(err, PFI_ENOMEM, "%s:%llu: more than %zu GPUs in one run", r->file,
                          (unsigned long long)s->line, r->proto.max_gpus);
    /* a series (GPU, metric) never goes backwards in time within a file,
     * beyond half an interval of jitter */
    if ((size_t)g >= r->nlast) { /* one element per GPU: PFI_M_COUNT timestamps */
        size_t old = r->nlast;
        if (pfi_vec_reserve(&r->last_t, &r->nlast, (size_t)g + 1, PFI_M_COUNT * sizeof *r->last_t,
                            NULL))
            return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        for (size_t i = old * PFI_M_COUNT; i < r->nlast * PFI_M_COUNT; i++)
            r->last_t[i] = INT64_MIN;
    }
    int64_t *last = &r->last_t[(size_t)g * PFI_M_COUNT + s->metric];
    if (*last != INT64_MIN && s->t_ms < *last - r->half_iv_ms)
        return pfi_errorf(
            err, PFI_EINVAL,
            "%s:%llu: timestamps go backwards (%lld ms after %lld ms for %s of GPU '%.*s')",
            r->file, (unsigned long long)s->line, (long long)s->t_ms, (long long)*last,
            pfi_metric_get(s->metric)->name, (int)(s->uuid.n ? s->uuid.n : s->gpu.n),
            s->uuid.n ? s->uuid.p : s->gpu.p);
    if (s->t_ms > *last) *last = s->t_ms;
    pfi_status st = pfi_bins_add(r->bins, g, s->metric, s->t_ms, s->value, err);
    if (st) pfi_error_prefix(err, "%s:%llu", r->file, (unsigned long long)s->line);
    return st;
}

/* feed one file of the run (relpath relative to the run directory) */
static pfi_status run_file(run_state *r, const char *relpath, pfi_reader *rd, pfi_error *err)
{
    if (r->m.steplog && strcmp(relpath, r->m.steplog) == 0) {
        if (r->have_steps) return PFI_OK;
        pfi_status st = pfi_steplog_read(rd, &r->steps, r->ing->log, err);
        if (!st) r->have_steps = 1;
        return st;
    }
    for (size_t i = 0; i < r->m.ntel; i++) {
        const pfi_tel_ref *t = &r->m.tel[i];
        if (strcmp(relpath, t->path) != 0 || r->tel_done[i]) continue;
        r->tel_done[i] = 1;
        r->file = rd->name;
        r->default_host = t->host ? t->host : (r->m.nhosts == 1 ? r->m.hosts[0] : NULL);
        for (size_t k = 0; k < r->nlast * PFI_M_COUNT; k++) r->last_t[k] = INT64_MIN;
        switch (t->format) {
        case PFI_TEL_PROMETHEUS: return pfi_prom_read(rd, on_sample, r, NULL, r->ing->log, err);
        case PFI_TEL_QUERY_RANGE:
            return pfi_query_range_read(rd, r->ing->o.max_query_range_bytes, on_sample, r,
                                        r->ing->log, err);
        case PFI_TEL_NVSMI:
            return pfi_nvsmi_read(rd, r->default_host, r->ing->o.tz_offset_min, on_sample, r,
                                  r->ing->log, err);
        }
    }
    return PFI_OK; /* a file the manifest does not list: ignored */
}

static pfi_status run_end(run_state *r, pfi_error *err)
{
    for (size_t i = 0; i < r->m.ntel; i++)
        if (!r->tel_done[i]) {
            pfi_status st = pfi_errorf(err, PFI_ENOTFOUND,
                                       "run %s: telemetry file '%s' listed in run.json is missing",
                                       r->name, r->m.tel[i].path);
            run_free(r);
            return st;
        }
    if (!r->m.steplog || !r->have_steps) {
        pfi_status st =
            r->m.steplog
                ? pfi_errorf(err, PFI_ENOTFOUND,
                             "run %s: step log '%s' listed in run.json is missing", r->name,
                             r->m.steplog)
                : pfi_errorf(err, PFI_EINVAL,
                             "run %s: run.json names no steplog: throughput unknown", r->name);
        run_free(r);
        return st;
    }
    pfi_run_summary *s = calloc(1, sizeof *s);
    pfi_ingest *ing = r->ing;
    if (!s) {
        run_free(r);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    s->m = r->m;
    memset(&r->m, 0, sizeof r->m);
    s->name = r->name;
    r->name = NULL;
    pfi_status st = pfi_summarize_run(r->bins, &r->steps, &r->proto, s, ing->log, err);
    run_free(r);
    if (!st && PFI_VEC_RESERVE(ing->runs, ing->cap, ing->nruns + 1, NULL))
        st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    if (st) {
        pfi_run_summary_dispose(s);
        free(s);
        return st;
    }
    ing->runs[ing->nruns++] = s;
    return PFI_OK;
}

/* ---- directories ---- */

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}

static pfi_status slurp_path(const char *path, size_t max, char **data, size_t *len, pfi_error *err)
{
    pfi_reader rd;
    pfi_status st = pfi_reader_open(&rd, path, 0, err);
    if (st) return st;
    st = pfi_reader_slurp(&rd, max, data, len, err);
    pfi_reader_close(&rd);
    return st;
}

pfi_status pfi_ingest_dir(pfi_ingest *ing, const char *dir, pfi_error *err)
{
    char *mp = join(dir, "run.json");
    if (!mp) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    char *json;
    size_t len;
    pfi_status st = slurp_path(mp, 16u << 20, &json, &len, err);
    free(mp);
    if (st) return st;
    run_state r;
    st = run_begin(ing, &r, json, len, dir, err);
    free(json);
    if (st) return st;
    size_t nfiles = r.m.ntel + 1;
    for (size_t i = 0; i < nfiles && !st; i++) {
        const char *rel = i < r.m.ntel ? r.m.tel[i].path : r.m.steplog;
        if (!rel) continue;
        char *p = join(dir, rel);
        if (!p) {
            st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
            break;
        }
        pfi_reader rd;
        st = pfi_reader_open(&rd, p, ing->o.max_line, err);
        free(p);
        if (st) break;
        st = run_file(&r, rel, &rd, err);
        pfi_reader_close(&rd);
    }
    if (st) {
        run_free(&r);
        return st;
    }
    return run_end(&r, err);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct strlist {
    char **v;
    size_t n, cap;
} strlist;

static int sl_push(strlist *l, char *s)
{
    if (PFI_VEC_RESERVE(l->v, l->cap, l->n + 1, NULL)) return -1;
    l->v[l->n++] = s;
    return 0;
}

static pfi_status find_runs(const char *dir, strlist *out, int depth, pfi_error *err)
{
    if (depth > 64) return pfi_errorf(err, PFI_EINVAL, "%s: directories nested too deep", dir);
    DIR *d = opendir(dir);
    if (!d) return pfi_errorf(err, PFI_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
    strlist subs = {0};
    int is_run = 0;
    struct dirent *e;
    pfi_status st = PFI_OK;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *p = join(dir, e->d_name);
        if (!p) {
            st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
            break;
        }
        struct stat sb;
        if (lstat(p, &sb) != 0) {
            free(p);
            continue;
        }
        if (S_ISREG(sb.st_mode) && strcmp(e->d_name, "run.json") == 0) is_run = 1;
        if (S_ISDIR(sb.st_mode)) {
            if (sl_push(&subs, p)) {
                free(p);
                st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
                break;
            }
        } else {
            free(p);
        }
    }
    closedir(d);
    if (!st && is_run) {
        char *c = strdup(dir);
        if (!c || sl_push(out, c)) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
    } else if (!st) {
        if (subs.n) qsort(subs.v, subs.n, sizeof *subs.v, cmp_str);
        for (size_t i = 0; i < subs.n && !st; i++) st = find_runs(subs.v[i], out, depth + 1, err);
    }
    for (size_t i = 0; i < subs.n; i++) free(subs.v[i]);
    free(subs.v);
    return st;
}

pfi_status pfi_ingest_root(pfi_ingest *ing, const char *root, pfi_error *err)
{
    strlist runs = {0};
    pfi_status st = find_runs(root, &runs, 0, err);
    if (!st && runs.n == 0)
        st = pfi_errorf(err, PFI_ENOTFOUND, "%s: no run directory (run.json) below it", root);
    for (size_t i = 0; i < runs.n && !st; i++) st = pfi_ingest_dir(ing, runs.v[i], err);
    for (size_t i = 0; i < runs.n; i++) free(runs.v[i]);
    free(runs.v);
    return st;
}

/* ---- tar streams ---- */

typedef struct buffered {
    char *path;
    char *data;
    size_t len;
} buffered;

static void dirname_of(const char *path, char *out, size_t n)
{
    const char *s = strrchr(path, '/');
    if (!s) snprintf(out, n, ".");
    else snprintf(out, n, "%.*s", (int)(s - path), path);
}

/* relative path of p under dir ("." = top), or NULL */
static const char *under(const char *p, const char *dir)
{
    if (strcmp(dir, ".") == 0) return p;
    size_t n = strlen(dir);
    if (strncmp(p, dir, n) == 0 && p[n] == '/') return p + n + 1;
    return NULL;
}

/* the files of a run that came before its run.json (buffered), read into
 * it now; those of no run directory warned about; every buffer freed */
static pfi_status run_buffered(pfi_ingest *ing, run_state *r, buffered *buf, size_t nbuf,
                               const char *run_dir, pfi_error *err)
{
    pfi_status st = PFI_OK;
    for (size_t i = 0; i < nbuf; i++) {
        const char *brel = under(buf[i].path, run_dir);
        if (brel && !st) {
            pfi_reader br;
            pfi_reader_init_mem(&br, buf[i].data, buf[i].len, buf[i].path, ing->o.max_line);
            st = run_file(r, brel, &br, err);
            pfi_reader_close(&br);
        } else if (!brel) {
            pfi_warnf(ing->log, "%s: not in a run directory; ignored", buf[i].path);
        }
        free(buf[i].path);
        free(buf[i].data);
    }
    return st;
}

pfi_status pfi_ingest_tar(pfi_ingest *ing, pfi_reader *in, pfi_error *err)
{
    pfi_tar t;
    pfi_tar_init(&t, in);
    run_state r;
    int have_run = 0;
    char run_dir[4096] = "";
    buffered *buf = NULL;
    size_t nbuf = 0, bcap = 0, bbytes = 0;
    pfi_status st = PFI_OK;
    size_t nruns0 = ing->nruns;
    int rc;
    while ((rc = pfi_tar_next(&t, err)) == 1) {
        if (t.is_dir) continue;
        const char *base = strrchr(t.path, '/');
        base = base ? base + 1 : t.path;
        const char *rel = have_run ? under(t.path, run_dir) : NULL;
        if (have_run && !rel) { /* left the current run's directory */
            have_run = 0;
            if ((st = run_end(&r, err))) break;
        }
        if (!have_run && strcmp(base, "run.json") == 0) {
            char *json;
            size_t len;
            pfi_reader *mr = pfi_tar_member(&t, 0);
            if ((st = pfi_reader_slurp(mr, 16u << 20, &json, &len, err))) break;
            dirname_of(t.path, run_dir, sizeof run_dir);
            st = run_begin(ing, &r, json, len, run_dir, err);
            free(json);
            if (st) break;
            have_run = 1;
            st = run_buffered(ing, &r, buf, nbuf, run_dir, err);
            nbuf = 0;
            bbytes = 0;
            if (st) break;
            continue;
        }
        if (have_run) {
            pfi_reader *mr = pfi_tar_member(&t, ing->o.max_line);
            if ((st = run_file(&r, rel, mr, err))) break;
            continue;
        }
        /* no run.json yet for this file: buffer it (bounded) */
        if (bbytes + t.size > ing->o.max_buffered_bytes) {
            st = pfi_errorf(err, PFI_ENOMEM,
                            "%s: more than %zu bytes of files before their run.json (is run.json "
                            "missing?)",
                            t.path, ing->o.max_buffered_bytes);
            break;
        }
        if (PFI_VEC_RESERVE(buf, bcap, nbuf + 1, NULL)) {
            st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
            break;
        }
        char *data;
        size_t len;
        pfi_reader *mr = pfi_tar_member(&t, 0);
        if ((st = pfi_reader_slurp(mr, (size_t)t.size, &data, &len, err))) break;
        buf[nbuf].path = strdup(t.path);
        if (!buf[nbuf].path) {
            free(data);
            st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
            break;
        }
        buf[nbuf].data = data;
        buf[nbuf].len = len;
        nbuf++;
        bbytes += len;
    }
    if (!st && rc < 0) st = err ? err->code : PFI_EPARSE;
    if (!st && have_run) {
        have_run = 0;
        st = run_end(&r, err);
    }
    if (have_run) run_free(&r);
    for (size_t i = 0; i < nbuf; i++) {
        if (!st) pfi_warnf(ing->log, "%s: no run.json for this file; ignored", buf[i].path);
        free(buf[i].path);
        free(buf[i].data);
    }
    free(buf);
    pfi_tar_dispose(&t);
    if (!st && ing->nruns == nruns0)
        st = pfi_errorf(err, PFI_ENOTFOUND, "%s: no run directory (run.json) in the archive",
                        in->name);
    return st;
}
