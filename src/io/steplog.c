/* steplog.c — JSON-lines step logs (see steplog.h). */
#include "pfi/steplog.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steplog_push.h"

/* number under key; 0 absent, 1 ok, -1 not a number */
static int num(json_t *o, const char *key, double *v)
{
    json_t *x = json_object_get(o, key);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_number(x)) return -1;
    *v = json_number_value(x);
    return 1;
}

/* one line, with its tokens and step number too (NaN when absent) */
static int parse_line(const char *line, size_t n, double *t_out, double *tps_out, double *mfu_out,
                      double *tflops_out, double *tokens_out, double *step_out,
                      const char **bad_out)
{
    static __thread char jmsg[200];
    *bad_out = NULL;
    size_t k = 0;
    while (k < n && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) k++;
    if (k == n) return 0;
    json_error_t je;
    json_t *o = json_loadb(line, n, 0, &je);
    if (!o || !json_is_object(o)) {
        snprintf(jmsg, sizeof jmsg, "%s", o ? "not a JSON object" : je.text);
        *bad_out = jmsg;
        json_decref(o);
        return -2;
    }
    double t = NAN, tps = NAN, tokens = NAN, st = NAN, mfu = NAN, tflops = NAN;
    const char *bad = NULL;
    int ht = num(o, "t_s", &t);
    int hp = num(o, "tokens_per_s", &tps);
    int hk = num(o, "tokens", &tokens), hs = num(o, "step_time_s", &st);
    int hm = num(o, "mfu", &mfu), hf = num(o, "tflops", &tflops);
    double step = NAN;
    if (num(o, "step", &step) != 1 || !(step >= 0 && step < 9e15)) step = NAN; /* optional */
    if (ht < 0) bad = "key 't_s': not a number";
    else if (ht == 0) bad = "key 't_s': missing";
    else if (!isfinite(t) || t < 0) bad = "key 't_s': not a non-negative number";
    else if (hp < 0) bad = "key 'tokens_per_s': not a number";
    else if (hp == 0 && (hk <= 0 || hs <= 0))
        bad = "no throughput: needs 'tokens_per_s' or 'tokens' and 'step_time_s'";
    else if (hp == 0 && !(st > 0)) bad = "key 'step_time_s': must be positive";
    else if (hp == 0 && !(tokens >= 0)) bad = "key 'tokens': negative";
    else if (hm < 0 || (hm == 1 && !(mfu >= 0 && mfu <= 1))) bad = "key 'mfu': not in 0..1";
    else if (hf < 0 || (hf == 1 && !(tflops >= 0 && tflops <= PFI_STEPLOG_MAX_TFLOPS)))
        bad = "key 'tflops': negative, not a number or above 1e7";
    if (!bad && hp == 0) tps = tokens / st;
    if (!bad && !(tps >= 0 && isfinite(tps))) bad = "key 'tokens_per_s': negative or not finite";
    if (!bad && tps > PFI_STEPLOG_MAX_TOKENS_PER_S)
        bad = "key 'tokens_per_s': above 1e10 tokens/s (not a throughput any job has)";
    json_decref(o);
    if (bad) {
        *bad_out = bad;
        return -1;
    }
    *t_out = t;
    *tps_out = tps;
    *mfu_out = mfu;
    *tflops_out = tflops;
    *tokens_out = hk == 1 ? tokens : NAN;
    *step_out = step;
    return 1;
}

int pfi_steplog_parse_line(const char *line, size_t n, double *t_out, double *tps_out,
                           double *mfu_out, double *tflops_out, const char **bad_out)
{
    double tokens, step;
    return parse_line(line, n, t_out, tps_out, mfu_out, tflops_out, &tokens, &step, bad_out);
}

pfi_status pfi_steplog_read(pfi_reader *r, pfi_steplog *out, pfi_log *log, pfi_error *err)
{
    memset(out, 0, sizeof *out);
    char *line;
    size_t n;
    int rc;
    double last_t = -INFINITY;
    while ((rc = pfi_reader_line(r, &line, &n, err)) == 1) {
        unsigned long long ln = (unsigned long long)pfi_reader_lineno(r);
        size_t k = 0;
        while (k < n && (line[k] == ' ' || line[k] == '\t')) k++;
        if (k == n) continue;
        double t, tps, mfu, tflops, tokens, step;
        const char *bad = NULL;
        int k2 = parse_line(line, n, &t, &tps, &mfu, &tflops, &tokens, &step, &bad);
        if (k2 == 0) continue;
        if (k2 == -2 && pfi_reader_truncated_last(r)) {
            pfi_warnf(log, "%s:%llu: truncated last line ignored", r->name, ln);
            break;
        }
        if (k2 < 0) {
            pfi_steplog_dispose(out);
            return pfi_errorf(err, k2 == -2 ? PFI_EPARSE : PFI_EINVAL, "%s:%llu: %s", r->name, ln,
                              bad);
        }
        if (t < last_t) {
            pfi_steplog_dispose(out);
            return pfi_errorf(err, PFI_EINVAL, "%s:%llu: key 't_s': goes backwards", r->name, ln);
        }
        last_t = t;
        pfi_status st = pfi_steplog_push(out, t, tps, mfu, tflops, tokens, step, err);
        if (st) {
            pfi_steplog_dispose(out);
            return st;
        }
    }
    if (rc < 0) {
        pfi_steplog_dispose(out);
        return err ? err->code : PFI_EPARSE;
    }
    return PFI_OK;
}

int pfi_steplog_format(char *buf, size_t n, double t_s, double tokens_per_s, double mfu,
                       double tflops, long step)
{
    int k = snprintf(buf, n, "{\"t_s\": %.3f, \"step\": %ld, \"tokens_per_s\": %.2f", t_s, step,
                     tokens_per_s);
    if (!isnan(mfu) && k > 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, ", \"mfu\": %.4f", mfu);
    if (!isnan(tflops) && k > 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, ", \"tflops\": %.1f", tflops);
    if (k > 0 && (size_t)k < n) k += snprintf(buf + k, n - (size_t)k, "}\n");
    return k;
}
