/* gpu_map.c — Slurm's GPU index -> the GPU, per the node's effective
 * AutoDetect (gpu_map.h says which order each mode follows and where in
 * Slurm's sources it comes from). What is read of gres.conf, after
 * gres.conf(5): one record per line, KEY=VALUE words (keys
 * case-insensitive), '#' starts a comment; host lists and device lists in
 * Slurm's bracket syntax ("node[01-04,07]", "/dev/nvidia[0-3]"). */
#include "gpu_map.h"

#include <ctype.h>
#include <dirent.h>
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

int gpu_map_mode_parse(const char *s, gpu_map_mode *mode)
{
    if (!strcasecmp(s, "off")) *mode = GPU_MAP_OFF;
    else if (!strcasecmp(s, "nvml") || !strcasecmp(s, "full")) *mode = GPU_MAP_NVML;
    else if (!strcasecmp(s, "nvidia")) *mode = GPU_MAP_NVIDIA;
    else return -1;
    return 0;
}

const char *gpu_map_mode_name(gpu_map_mode mode)
{
    return mode == GPU_MAP_NVML ? "nvml" : mode == GPU_MAP_NVIDIA ? "nvidia" : "off";
}

int gpu_map_version_parse(const char *s, long *version)
{
    int k = 0;
    unsigned ma, mi, mc = 0;
    if (sscanf(s, "%3u.%3u%n", &ma, &mi, &k) != 2) return -1;
    if (s[k] == '.') {
        int k2 = 0;
        if (sscanf(s + k + 1, "%3u%n", &mc, &k2) != 1) return -1;
        k += 1 + k2;
    }
    if (s[k] || ma > 255 || mi > 255 || mc > 255 || !isdigit((unsigned char)s[0])) return -1;
    *version = ((long)ma << 16) | ((long)mi << 8) | (long)mc;
    return 0;
}

int gpu_map_index_list(const char *s, long *idx, size_t max, size_t *n)
{
    *n = 0;
    for (const char *p = s; *p;) {
        if (!isdigit((unsigned char)*p)) return -1;
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (*end == '-') {
            if (!isdigit((unsigned char)end[1])) return -1;
            b = strtol(end + 1, &end, 10);
        }
        if (b < a || a > 4096 || b > 4096) return -1;
        for (long g = a; g <= b; g++) {
            if (*n == max) return -1;
            idx[(*n)++] = g;
        }
        if (*end == ',' && end[1]) p = end + 1;
        else if (*end) return -1;
        else p = end;
    }
    return 0;
}

/* ---- gres.conf ---------------------------------------------------------- */

/* one gpu record for this node: its line and device files */
typedef struct rec {
    int line, node_line; /* node_line: the line starts with NodeName= */
    char files[GPU_MAP_MAX][256];
    int nfiles;   /* devices it names (File=/Files= expanded; MultipleFiles: 1) */
    int count;    /* Count= (0 when absent) */
    int multiple; /* MultipleFiles= */
} rec;

typedef struct conf {
    rec r[GPU_MAP_MAX];
    int n;
    int autod_global, autod_node; /* a mode, or -2 when not set */
    int autod_global_line, autod_node_line;
} conf;

static const char *const gpu_keys[] = {"Name",     "Type",          "File",  "Files",
                                       "NodeName", "MultipleFiles", "Count", "Cores",
                                       "CPUs",     "Links",         "Flags", "AutoDetect"};

static int known_key(const char *k)
{
    for (size_t i = 0; i < sizeof gpu_keys / sizeof gpu_keys[0]; i++)
        if (!strcasecmp(k, gpu_keys[i])) return 1;
    return 0;
}

typedef struct words {
    char *key[32], *val[32];
    int n;
} words;

/* splits a line into KEY=VALUE words; -1 (why) on a word without '=' */
static int split(char *line, words *w, const char *path, int lineno, char *why, size_t why_n)
{
    char *save = NULL;
    w->n = 0;
    for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        char *eq = strchr(t, '=');
        if (!eq || w->n == 32) {
            snprintf(why, why_n, "%s:%d: field '%.64s': expected KEY=VALUE", path, lineno, t);
            return -1;
        }
        *eq = '\0';
        w->key[w->n] = t;
        w->val[w->n++] = eq + 1;
    }
    return 0;
}

static const char *get(const words *w, const char *key)
{
    for (int i = 0; i < w->n; i++)
        if (!strcasecmp(w->key[i], key)) return w->val[i];
    return NULL;
}

/* AutoDetect=VALUE of a line for this node -> c (global or node-specific) */
static int note_autodetect(conf *c, const words *w, int lineno, const char *path, char *why,
                           size_t why_n)
{
    const char *v = get(w, "AutoDetect");
    if (!v) return 0;
    gpu_map_mode m;
    if (gpu_map_mode_parse(v, &m)) {
        snprintf(why, why_n,
                 "%s:%d: field 'AutoDetect': '%.32s' is not a detection of NVIDIA GPUs pfi can "
                 "follow (off, nvml or nvidia)",
                 path, lineno, v);
        return -1;
    }
    if (get(w, "NodeName")) c->autod_node = (int)m, c->autod_node_line = lineno;
    else c->autod_global = (int)m, c->autod_global_line = lineno;
    return 0;
}

/* a gpu record for this node -> c */
static int add_record(conf *c, const words *w, int lineno, const char *path, char *why,
                      size_t why_n)
{
    for (int i = 0; i < w->n; i++)
        if (!known_key(w->key[i])) {
            snprintf(why, why_n,
                     "%s:%d: field '%.64s': not a gpu key pfi knows (Name, Type, File, Files, "
                     "MultipleFiles, NodeName, Count, Cores, CPUs, Links, Flags, AutoDetect): "
                     "Slurm's GPU order cannot be known for sure",
                     path, lineno, w->key[i]);
            return -1;
        }
    if (c->n == GPU_MAP_MAX) {
        snprintf(why, why_n, "%s:%d: more than %d gpu records", path, lineno, GPU_MAP_MAX);
        return -1;
    }
    rec *r = &c->r[c->n];
    memset(r, 0, sizeof *r);
    r->line = lineno;
    r->node_line = !strcasecmp(w->key[0], "NodeName");
    const char *f = get(w, "File"), *fs = get(w, "Files"), *mf = get(w, "MultipleFiles");
    const char *cnt = get(w, "Count");
    if (cnt) r->count = atoi(cnt);
    const char *field = f ? "File" : fs ? "Files" : "MultipleFiles", *v = f ? f : fs ? fs : mf;
    if (v) {
        int k = expand(v, r->files, GPU_MAP_MAX);
        if (k <= 0) {
            snprintf(why, why_n, "%s:%d: field '%s': cannot expand '%.200s' (at most %d devices)",
                     path, lineno, field, v, GPU_MAP_MAX);
            return -1;
        }
        r->multiple = !f && !fs;
        if (r->multiple && k < 2) { /* slurmd 22.05: "fatal: MultipleFiles does not contain
                                       multiple files. Use File instead" */
            snprintf(why, why_n,
                     "%s:%d: field 'MultipleFiles': one file (Slurm refuses it: use File=)", path,
                     lineno);
            return -1;
        }
        r->nfiles = r->multiple ? 1 : k; /* MultipleFiles: one GPU, its first file */
    }
    c->n++;
    return 0;
}

static int read_conf(const char *path, const char *node, conf *c, char *why, size_t why_n)
{
    memset(c, 0, sizeof *c);
    c->autod_global = c->autod_node = -2;
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
        char *first = line + strspn(line, " \t\r\n");
        if (!strncasecmp(first, "Include", 7) && (first[7] == ' ' || first[7] == '\t')) {
            snprintf(why, why_n,
                     "%s:%d: field 'Include': included files are not followed: Slurm's GPU order "
                     "cannot be known for sure",
                     path, lineno);
            rc = -1;
            break;
        }
        words w;
        if ((rc = split(line, &w, path, lineno, why, why_n)) || w.n == 0) continue;
        const char *nn = get(&w, "NodeName"), *name = get(&w, "Name");
        if (nn && !host_in(nn, node)) continue;
        if ((rc = note_autodetect(c, &w, lineno, path, why, why_n))) break;
        if (name && !strcasecmp(name, "gpu")) rc = add_record(c, &w, lineno, path, why, why_n);
    }
    fclose(f);
    return rc;
}

/* ---- the driver's directory --------------------------------------------- */

typedef struct gpu {
    int minor;
    char bus_id[64];
    unsigned long long key; /* domain, bus, device, function packed in that order */
} gpu;

/* "0000:3b:00.0" -> a number ordered as Slurm orders bus ids; -1 malformed */
static int bus_key(const char *id, unsigned long long *key)
{
    unsigned dom, bus, dev, fn;
    int k = 0;
    if (sscanf(id, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &k) != 4 || id[k] || bus > 0xff ||
        dev > 0x1f || fn > 7)
        return -1;
    *key = ((unsigned long long)dom << 16) | (bus << 8) | (dev << 3) | fn;
    return 0;
}

/* one GPU's information file -> its minor; -1 (why) when it names none */
static int read_minor(const char *dir, const char *bus, int *minor, char *why, size_t why_n)
{
    char p[1024], line[512];
    snprintf(p, sizeof p, "%s/%s/information", dir, bus);
    FILE *f = fopen(p, "r");
    if (!f) {
        snprintf(why, why_n, "%s: %s", p, strerror(errno));
        return -1;
    }
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *end;
        if (strncmp(line, "Device Minor:", 13)) continue;
        long v = strtol(line + 13, &end, 10);
        found = end != line + 13 && v >= 0 && v < 1 << 20 && (*end == '\n' || !*end);
        *minor = (int)v;
    }
    fclose(f);
    if (!found) snprintf(why, why_n, "%s: field 'Device Minor': missing or malformed", p);
    return found ? 0 : -1;
}

static int read_driver(const char *dir, gpu *g, int *n, char *why, size_t why_n)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) {
        snprintf(why, why_n, "%s: %s (the NVIDIA driver's GPU list)", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (*n == GPU_MAP_MAX || strlen(e->d_name) >= sizeof g->bus_id ||
            bus_key(e->d_name, &g[*n].key)) {
            snprintf(why, why_n, "%s/%.64s: not a PCI bus id (DDDD:BB:DD.F), or over %d GPUs", dir,
                     e->d_name, GPU_MAP_MAX);
            rc = -1;
            break;
        }
        snprintf(g[*n].bus_id, sizeof g->bus_id, "%.63s", e->d_name); /* checked: < 64 */
        if ((rc = read_minor(dir, e->d_name, &g[*n].minor, why, why_n)) == 0) (*n)++;
    }
    closedir(d);
    if (rc == 0 && *n == 0) {
        snprintf(why, why_n, "%s: no GPUs (is the NVIDIA driver loaded?)", dir);
        rc = -1;
    }
    return rc;
}

/* ---- the modes ---------------------------------------------------------- */

static int minor_of(const char *p, int *minor, char *why, size_t why_n)
{
    struct stat st;
    if (stat(p, &st) != 0) return snprintf(why, why_n, "%s: %s", p, strerror(errno)), -1;
    if (!S_ISCHR(st.st_mode)) return snprintf(why, why_n, "%s is not a character device", p), -1;
    *minor = (int)minor(st.st_rdev);
    return 0;
}

/* the configured devices in Slurm's off order: Name= lines, then NodeName=
 * lines; strict: a record without devices is an error (off), else skipped
 * (autodetected modes, where such a record is filled in by detection) */
static int conf_devices(const conf *c, const char *path, int strict, gpu_map *m, char *why,
                        size_t why_n)
{
    m->n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < c->n; i++) {
            const rec *r = &c->r[i];
            if (r->node_line != pass) continue;
            if (!r->nfiles && !strict) continue;
            if (!r->nfiles) {
                snprintf(why, why_n,
                         "%s:%d: field 'File': a gpu record without File=, Files= or "
                         "MultipleFiles= under AutoDetect=off: Slurm names no device",
                         path, r->line);
                return -1;
            }
            for (int k = 0; k < r->nfiles; k++) {
                if (m->n == GPU_MAP_MAX)
                    return snprintf(why, why_n, "over %d GPUs", GPU_MAP_MAX), -1;
                gpu_map_dev *d = &m->dev[m->n++];
                snprintf(d->path, sizeof d->path, "%s", r->files[k]);
                d->bus_id[0] = '\0';
                if (minor_of(d->path, &d->minor, why, why_n)) return -1;
            }
        }
    return 0;
}

static int cmp_bus(const void *a, const void *b)
{
    unsigned long long x = ((const gpu *)a)->key, y = ((const gpu *)b)->key;
    return x < y ? -1 : x > y;
}

static int cmp_path(const void *a, const void *b)
{
    char pa[32], pb[32];
    snprintf(pa, sizeof pa, "/dev/nvidia%d", ((const gpu *)a)->minor);
    snprintf(pb, sizeof pb, "/dev/nvidia%d", ((const gpu *)b)->minor);
    return strcmp(pa, pb);
}

/* autodetected modes: the driver's GPUs (only the configured ones where
 * gres.conf lists File= devices), sorted as the mode sorts them */
static int detected(const conf *c, const gpu_map_opts *o, gpu_map *m, char *why, size_t why_n)
{
    static gpu g[GPU_MAP_MAX];
    int n;
    const char *dir = o->driver_dir ? o->driver_dir : GPU_MAP_DRIVER_DIR;
    if (read_driver(dir, g, &n, why, why_n)) return -1;
    static gpu_map conf_m;
    int listed = 0;
    for (int i = 0; i < c->n; i++) listed |= c->r[i].nfiles > 0;
    if (listed && conf_devices(c, o->gres_conf, 0, &conf_m, why, why_n)) return -1;
    qsort(g, (size_t)n, sizeof *g, m->mode == GPU_MAP_NVML ? cmp_bus : cmp_path);
    m->n = 0;
    for (int i = 0; i < n; i++) {
        int want = !listed;
        for (size_t k = 0; listed && k < conf_m.n; k++) want |= conf_m.dev[k].minor == g[i].minor;
        if (!want) continue;
        gpu_map_dev *d = &m->dev[m->n++];
        snprintf(d->path, sizeof d->path, "/dev/nvidia%d", g[i].minor);
        d->minor = g[i].minor;
        snprintf(d->bus_id, sizeof d->bus_id, "%s", g[i].bus_id);
    }
    if (m->n == 0) return snprintf(why, why_n, "%s: none of gres.conf's devices", dir), -1;
    return 0;
}

/* bus ids for the off mode, where the driver directory can be read */
static void add_bus_ids(const gpu_map_opts *o, gpu_map *m)
{
    static gpu g[GPU_MAP_MAX];
    int n;
    char why[512];
    if (read_driver(o->driver_dir ? o->driver_dir : GPU_MAP_DRIVER_DIR, g, &n, why, sizeof why))
        return;
    for (size_t k = 0; k < m->n; k++)
        for (int i = 0; i < n; i++)
            if (g[i].minor == m->dev[k].minor)
                snprintf(m->dev[k].bus_id, sizeof m->dev[k].bus_id, "%s", g[i].bus_id);
}

#define SLURM_V(a, b, c) (((long)(a) << 16) | ((long)(b) << 8) | (c))

int gpu_map_load(const gpu_map_opts *o, gpu_map *m, char *why, size_t why_n)
{
    static conf c;
    memset(m, 0, sizeof *m);
    if (read_conf(o->gres_conf, o->node, &c, why, why_n)) return -1;
    int eff = c.autod_node != -2 ? c.autod_node : c.autod_global != -2 ? c.autod_global : 0;
    m->mode = o->force != GPU_MAP_FROM_CONF ? o->force : (gpu_map_mode)eff;
    if (m->mode == GPU_MAP_NVIDIA &&
        (o->slurm_version < SLURM_V(24, 11, 0) || o->slurm_version >= SLURM_V(25, 11, 0))) {
        if (!o->slurm_version)
            snprintf(why, why_n,
                     "%s: AutoDetect=nvidia orders GPUs by Slurm version, which was not given",
                     o->gres_conf);
        else
            snprintf(why, why_n,
                     "%s: AutoDetect=nvidia with Slurm %ld.%02ld: pfi knows its GPU order only for "
                     "24.11.0 to 25.05.x",
                     o->gres_conf, o->slurm_version >> 16, (o->slurm_version >> 8) & 0xff);
        return -1;
    }
    if (m->mode == GPU_MAP_OFF) {
        if (conf_devices(&c, o->gres_conf, 1, m, why, why_n)) return -1;
        if (m->n == 0) {
            snprintf(why, why_n, "%s: no gpu record with File= for node %s (and AutoDetect is off)",
                     o->gres_conf, o->node);
            return -1;
        }
        add_bus_ids(o, m);
        return 0;
    }
    return detected(&c, o, m, why, why_n);
}
