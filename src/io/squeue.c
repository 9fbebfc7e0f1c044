/* squeue.c — squeue's output read into jobs (squeue.h). Strict: seven
 * '|'-separated fields a line, each of the forms squeue(1) documents; a
 * line that is not is an error naming it and the field (a different
 * squeue, a changed format), never a job read half right. */
#include "squeue.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_id.h"
#include "vec.h"

#define LINE_MAX_BYTES 4096

static int all_digits(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s);
}

/* a Unix time, or unknown: NaN; -1 if neither */
static int time_of(const char *s, double *t)
{
    /* Slurm 22.05 prints NONE for a job without a time limit's end (seen:
       tests/data/squeue/), N/A or Unknown where it has no estimate */
    if (!strcmp(s, "N/A") || !strcmp(s, "Unknown") || !strcmp(s, "NONE") || !strcmp(s, "None") ||
        !strcmp(s, "0")) {
        *t = NAN;
        return 0;
    }
    if (!all_digits(s) || strlen(s) > 12) return -1;
    *t = strtod(s, NULL);
    return 0;
}

int pfi_squeue_limit(const char *s, double *limit_s)
{
    if (!strcmp(s, "UNLIMITED") || !strcmp(s, "INFINITE")) {
        *limit_s = INFINITY;
        return 0;
    }
    if (!strcmp(s, "NOT_SET") || !strcmp(s, "INVALID") || !strcmp(s, "N/A")) {
        *limit_s = NAN;
        return 0;
    }
    long days = 0, part[3];
    int np = 0;
    const char *p = s, *dash = strchr(s, '-');
    if (dash) {
        char *end;
        errno = 0;
        days = strtol(s, &end, 10);
        if (end != dash || end == s || errno || days < 0 || days > 36500 || *s == '-' || *s == '+')
            return -1;
        p = dash + 1;
    }
    for (;;) {
        char *end;
        if (*p < '0' || *p > '9' || np == 3) return -1;
        errno = 0;
        part[np++] = strtol(p, &end, 10);
        if (errno || end - p > 9) return -1;
        if (!*end) break;
        if (*end != ':') return -1;
        p = end + 1;
    }
    /* squeue: M, M:S, H:M:S; with days D-H, D-H:M, D-H:M:S */
    double h = 0, m = 0, sec = 0;
    if (dash) {
        h = part[0], m = np > 1 ? part[1] : 0, sec = np > 2 ? part[2] : 0;
    } else if (np == 1) m = part[0];
    else if (np == 2) m = part[0], sec = part[1];
    else h = part[0], m = part[1], sec = part[2];
    *limit_s = ((days * 24.0 + h) * 60 + m) * 60 + sec;
    return 0;
}

/* the GPUs per node in a gres list ("gres:gpu:2", "gres/gpu:a100:2",
   "gpu:2,gres:shard:4", "N/A"): the count of its gpu entry; -1 if malformed */
static int gres_gpus(const char *s, int *gpus)
{
    *gpus = 0;
    if (!strcmp(s, "N/A") || !strcmp(s, "(null)") || !*s) return 0;
    char buf[LINE_MAX_BYTES];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *e = strtok_r(buf, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        char *paren = strchr(e, '(');
        if (paren) *paren = '\0'; /* "gpu:2(IDX:0-1)" */
        if (!strncmp(e, "gres:", 5) || !strncmp(e, "gres/", 5)) e += 5;
        if (strncmp(e, "gpu", 3) || (e[3] != ':' && e[3] != '=' && e[3] != '\0')) continue;
        /* gpu, gpu:N, gpu=N, gpu:TYPE (one), gpu:TYPE:N */
        if (!e[3]) {
            *gpus += 1;
            continue;
        }
        const char *c = strrchr(e, e[3]) + 1;
        if (e[3] == ':' && !strchr(e + 4, ':') && *c && !all_digits(c)) {
            *gpus += 1; /* a type, no count */
            continue;
        }
        if (!all_digits(c) || strlen(c) > 6) return -1;
        *gpus += atoi(c);
    }
    return 0;
}

/* one line into *j; 1 kept, 0 skipped (another state), -1 with *field set */
static int parse_line(char *line, pfi_squeue_job *j, const char **field)
{
    static const char *const names[7] = {"job id",     "state", "start time", "end time",
                                         "time limit", "nodes", "gres"};
    char *f[7];
    int nf = 0;
    for (char *p = line; nf < 7; nf++) {
        f[nf] = p;
        char *bar = strchr(p, '|');
        if (nf == 6) break;
        if (!bar) {
            *field = names[nf + 1];
            return -1;
        }
        *bar = '\0';
        p = bar + 1;
    }
    memset(j, 0, sizeof *j);
    double end_t, nodes_d;
    *field = names[0];
    if (!all_digits(f[0]) || strlen(f[0]) >= sizeof j->id || !pfi_job_id_valid(f[0])) return -1;
    snprintf(j->id, sizeof j->id, "%s", f[0]);
    *field = names[1];
    if (!*f[1] || strspn(f[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != strlen(f[1])) return -1;
    int keep = !strcmp(f[1], "RUNNING") || !strcmp(f[1], "PENDING");
    j->running = !strcmp(f[1], "RUNNING");
    *field = names[2];
    if (time_of(f[2], &j->start_t)) return -1;
    *field = names[3];
    if (time_of(f[3], &end_t)) return -1;
    *field = names[4];
    if (pfi_squeue_limit(f[4], &j->limit_s)) return -1;
    *field = names[5];
    if (!all_digits(f[5]) || strlen(f[5]) > 6) return -1;
    nodes_d = atoi(f[5]);
    *field = names[6];
    int per_node;
    if (gres_gpus(f[6], &per_node)) return -1;
    double g = per_node * (nodes_d > 0 ? nodes_d : 1);
    j->gpus = g > 1e6 ? 1000000 : (int)g;
    /* its end: squeue's, else its start and its limit */
    j->end_t = isfinite(end_t)                                ? end_t
               : isfinite(j->start_t) && isfinite(j->limit_s) ? j->start_t + j->limit_s
                                                              : NAN;
    if (j->limit_s == INFINITY) j->end_t = NAN;
    return keep;
}

pfi_status pfi_squeue_parse(const char *text, size_t len, const char *name, pfi_squeue_job **jobs,
                            size_t *n, pfi_error *err)
{
    *jobs = NULL;
    *n = 0;
    size_t cap = 0, lineno = 0;
    char line[LINE_MAX_BYTES + 1];
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t ll = nl ? (size_t)(nl - (text + at)) : len - at;
        lineno++;
        if (ll > LINE_MAX_BYTES) {
            free(*jobs), *jobs = NULL, *n = 0;
            return pfi_errorf(err, PFI_EPARSE, "%s:%zu: a line over %d bytes", name, lineno,
                              LINE_MAX_BYTES);
        }
        memcpy(line, text + at, ll);
        line[ll] = '\0';
        at += ll + (nl != NULL);
        if (ll && line[ll - 1] == '\r') line[--ll] = '\0';
        if (!ll) continue;
        if (memchr(line, '\0', ll)) {
            free(*jobs), *jobs = NULL, *n = 0;
            return pfi_errorf(err, PFI_EPARSE, "%s:%zu: a NUL byte", name, lineno);
        }
        pfi_squeue_job j;
        const char *field = "";
        int k = parse_line(line, &j, &field);
        if (k < 0) {
            free(*jobs), *jobs = NULL, *n = 0;
            return pfi_errorf(err, PFI_EPARSE, "%s:%zu: field '%s': not squeue's -o '%s' form",
                              name, lineno, field, PFI_SQUEUE_FORMAT);
        }
        if (!k) continue;
        if (*n == PFI_SQUEUE_MAX_JOBS) {
            free(*jobs), *jobs = NULL, *n = 0;
            return pfi_errorf(err, PFI_ERANGE, "%s:%zu: more than %d jobs", name, lineno,
                              PFI_SQUEUE_MAX_JOBS);
        }
        if (PFI_VEC_RESERVE(*jobs, cap, *n + 1, NULL)) {
            free(*jobs), *jobs = NULL, *n = 0;
            return pfi_errorf(err, PFI_ENOMEM, "%s: out of memory", name);
        }
        (*jobs)[(*n)++] = j;
    }
    return PFI_OK;
}
