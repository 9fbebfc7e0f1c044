/* job_id.c — job id validation and a process's Slurm job id from its cgroup
 * (see job_id.h). */
#include "job_id.h"

#include <stdlib.h>
#include <string.h>

int pfi_job_id_valid(const char *id)
{
    if (!id) return 0;
    size_t n = strlen(id);
    if (n < 1 || n > PFI_JOB_ID_MAX || !strcmp(id, ".") || !strcmp(id, "..")) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* path component k (0-based) of the absolute path [p, e): its start and length; -1 if none */
static int component(const char *p, const char *e, int k, const char **c, size_t *cn)
{
    if (p == e || *p != '/') return -1;
    for (int i = 0; p < e; i++) {
        p++; /* the '/' */
        const char *s = p;
        while (p < e && *p != '/') p++;
        if (i == k) {
            *c = s, *cn = (size_t)(p - s);
            return *cn ? 0 : -1;
        }
    }
    return -1;
}

static int is(const char *c, size_t cn, const char *lit)
{
    return cn == strlen(lit) && !memcmp(c, lit, cn);
}

/* PREFIX followed by 1..max digits: the digits' start and length */
static int prefixed_digits(const char *c, size_t cn, const char *prefix, size_t max, const char **d,
                           size_t *dn)
{
    size_t pl = strlen(prefix);
    if (cn <= pl || cn - pl > max || memcmp(c, prefix, pl)) return -1;
    for (size_t i = pl; i < cn; i++)
        if (c[i] < '0' || c[i] > '9') return -1;
    *d = c + pl, *dn = cn - pl;
    return 0;
}

/* one line's path [p, e) on a v1 (v1 = 1) or the v2 hierarchy: 0 and the job id */
static int match(const char *p, const char *e, int v1, char *out, size_t n, long *uid)
{
    const char *c0, *c1, *c2, *d;
    size_t n0, n1, n2, dn;
    int k = 0; /* v2: the scope's component */
    if (!v1) {
        /* systemd slices from the root, then the scope: Slurm's default
           /system.slice/, or any CgroupSlice= (Slurm 25.11: slurm.slice,
           a nested a.slice/b.slice). Only slices: a user's delegated
           cgroups lie under a user@UID.service, which breaks the chain, and
           the shallowest scope is Slurm's (a job can only nest below it). */
        while (!component(p, e, k, &c0, &n0) && n0 > 6 && !memcmp(c0 + n0 - 6, ".slice", 6)) k++;
        if (k == 0) return -1;
    }
    if (component(p, e, v1 ? 0 : k - 1, &c0, &n0) || component(p, e, v1 ? 1 : k, &c1, &n1) ||
        component(p, e, v1 ? 2 : k + 1, &c2, &n2))
        return -1;
    if (v1) {
        const char *u;
        size_t un;
        if (!(is(c0, n0, "slurm") || (n0 > 6 && !memcmp(c0, "slurm_", 6)))) return -1;
        if (prefixed_digits(c1, n1, "uid_", 10, &u, &un)) return -1;
        char ub[16];
        memcpy(ub, u, un);
        ub[un] = '\0';
        *uid = strtol(ub, NULL, 10);
    } else {
        static const char scope[] = "slurmstepd.scope";
        size_t sl = sizeof scope - 1;
        if (!(is(c1, n1, scope) ||
              (n1 > sl + 1 && !memcmp(c1 + n1 - sl, scope, sl) && c1[n1 - sl - 1] == '_')))
            return -1;
        *uid = -1;
    }
    if (prefixed_digits(c2, n2, "job_", PFI_JOB_ID_MAX, &d, &dn) || dn + 1 > n) return -1;
    memcpy(out, d, dn);
    out[dn] = '\0';
    return 0;
}

int pfi_job_id_from_cgroup(const char *text, size_t len, char *out, size_t n, long *uid)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
        /* HIER:CONTROLLERS:PATH; v2 is "0::PATH" */
        const char *a = memchr(p, ':', (size_t)(e - p)),
                   *b = a ? memchr(a + 1, ':', (size_t)(e - a - 1)) : NULL;
        if (b) {
            int v2 = a - p == 1 && *p == '0' && b == a + 1, v1 = b > a + 1;
            if ((v1 || v2) && !match(b + 1, e, v1, out, n, uid)) return 0;
        }
        if (!nl) break;
        p = nl + 1;
    }
    return -1;
}
