/* gres_devices.c — a node's GPU device files in Slurm's order, from
 * gres.conf (gres_devices.h). What is read, after gres.conf(5): one record
 * per line, KEY=VALUE words (keys case-insensitive), '#' starts a comment;
 * a record names the GRES with Name=, may be limited to nodes with
 * NodeName= (a host list: "a,b", "node[01-04,07]"), and lists devices with
 * File= in the same host-list syntax ("/dev/nvidia[0-3]",
 * "/dev/nvidia0,/dev/nvidia2"). Slurm keeps the devices in the file's
 * order, each File= expanded in place (measured on Slurm 22.05: slurmd
 * logs "gpu device number 2(/dev/nvidia2)" first for a gres.conf that
 * lists nvidia2 first, and that device is the job's GPU index 0). Lines
 * that are not gpu records (other GRES, AutoDetect=, Count= alone) add no
 * device; AutoDetect= other than off is noted. */
#include "gres_devices.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* Expands one host-list expression into out[] (at most max entries of 256
 * bytes); returns the count, or -1 when malformed or too many. */
static int expand(const char *expr, char out[][256], int max)
{
    int n = 0;
    const char *p = expr;
    while (*p) {
        /* one element: up to a ',' outside brackets */
        const char *e = p;
        int depth = 0;
        while (*e && (depth || *e != ',')) {
            if (*e == '[') depth++;
            else if (*e == ']' && --depth < 0) return -1;
            e++;
        }
        if (depth) return -1;
        const char *lb = memchr(p, '[', (size_t)(e - p));
        if (!lb) {
            if (n == max || e - p >= 256) return -1;
            snprintf(out[n++], 256, "%.*s", (int)(e - p), p);
        } else {
            const char *rb = memchr(lb, ']', (size_t)(e - lb));
            if (!rb || memchr(rb + 1, '[', (size_t)(e - rb - 1))) return -1; /* one group */
            /* ranges inside: "0-3,7" */
            const char *r = lb + 1;
            while (r < rb) {
                const char *s = r;
                while (r < rb && isdigit((unsigned char)*r)) r++;
                if (r == s) return -1;
                int width = (int)(r - s);
                long a = strtol(s, NULL, 10), b = a;
                if (*r == '-') {
                    const char *t = ++r;
                    while (r < rb && isdigit((unsigned char)*r)) r++;
                    if (r == t) return -1;
                    b = strtol(t, NULL, 10);
                }
                if (b < a || b - a > 1024) return -1;
                for (long v = a; v <= b; v++) {
                    if (n == max) return -1;
                    int k = snprintf(out[n], 256, "%.*s%0*ld%.*s", (int)(lb - p), p, width, v,
                                     (int)(e - rb - 1), rb + 1);
                    if (k < 0 || k >= 256) return -1;
                    n++;
                }
                if (r < rb && *r != ',') return -1;
                if (r < rb) r++;
            }
        }
        p = *e ? e + 1 : e;
    }
    return n;
}

/* host matches the host list (or its short name does) */
static int host_in(const char *list, const char *host)
{
    static char names[1024][256];
    int n = expand(list, names, 1024);
    size_t hl = strcspn(host, ".");
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], host) || (strlen(names[i]) == hl && !strncmp(names[i], host, hl)))
            return 1;
    return 0;
}

int gres_devices_load(const char *path, const char *host, gres_devices *d, char *why, size_t why_n)
{
    memset(d, 0, sizeof *d);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, why_n, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[4096];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *name = NULL, *node = NULL, *file = NULL, *autod = NULL, *save = NULL;
        for (char *w = strtok_r(line, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
            char *eq = strchr(w, '=');
            if (!eq) continue;
            *eq = '\0';
            if (!strcasecmp(w, "Name")) name = eq + 1;
            else if (!strcasecmp(w, "NodeName")) node = eq + 1;
            else if (!strcasecmp(w, "File")) file = eq + 1;
            else if (!strcasecmp(w, "AutoDetect")) autod = eq + 1;
        }
        if (node && !host_in(node, host)) continue;
        if (autod && strcasecmp(autod, "off")) d->auto_detect = 1;
        if (!name || strcasecmp(name, "gpu") || !file) continue;
        char(*paths)[256] = d->path + d->n;
        int k = expand(file, paths, GRES_DEVICES_MAX - (int)d->n);
        if (k < 0) {
            snprintf(why, why_n, "%s:%d: field 'File': cannot expand '%.200s' (at most %d devices)",
                     path, lineno, file, GRES_DEVICES_MAX);
            rc = -1;
            break;
        }
        d->n += (size_t)k;
    }
    fclose(f);
    return rc;
}

int gres_device_minor(const char *p, char *why, size_t why_n)
{
    struct stat st;
    if (stat(p, &st) != 0) {
        snprintf(why, why_n, "%s: %s", p, strerror(errno));
        return -1;
    }
    if (!S_ISCHR(st.st_mode)) {
        snprintf(why, why_n, "%s is not a character device", p);
        return -1;
    }
    return (int)minor(st.st_rdev);
}
