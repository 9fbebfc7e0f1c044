/* sim.c — the simulated GPU backend (gpu.h): N GPUs of one hardware profile
 * (physmodel.h), each optionally running a job of the reconstruction.
 *
 * The cap-to-power response model: after a cap change at t0 the SM clock
 * holds for an actuation delay (delay=, s), then moves from x0 towards the
 * model's operating clock x1 as x(t) = x1 + (x0 - x1) exp(-(t - t0 - delay)/tau)
 * (tau=, s); power, throughput and the DCGM metrics follow from the model at
 * x(t). Defaults: delay 0.05 s, tau 0.1 s (power within 2% of a 30% step
 * after 0.05 + 0.1 ln 15 = 0.32 s). They are an assumption, not a
 * measurement: NVIDIA's firmware enforces a new power limit within tens of
 * milliseconds to about a second depending on the product (no public
 * figure per model), and GridPilot reports 97 ms from a grid trigger to
 * target power on 3 GPUs, software included; a read-only check cannot
 * measure it (docs/agent.md, "The simulator"). A job's throughput is set by
 * its slowest GPU (synchronous training). A started job spends load= (15)
 * clock seconds loading (framebuffer filling, no kernels), then trains; while it
 * trains it appends its steps to its step log. Noise: relative Gaussian on
 * power and on each step's throughput. The clock is the pfi clock, so a sped
 * up test sees the same dynamics in less wall time. */
#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "clock.h"
#include "gpu_internal.h"
#include "pfi/steplog.h"
#include "recon.h"
#include "util.h"

#define SIM_MAX_GPUS 64
#define SIM_MAX_JOBS 16
#define STEP_S 2.0 /* step time at the maximum clock */

typedef struct sim_gpu {
    double cap_w;
    double oob_w;      /* a limit set out of band (the state file's enforced_w; 0: none) */
    double x0, x1, t0; /* clock lag: from x0 towards x1 since t0 */
    double energy_j, t_last;
    int job; /* index into jobs, -1 idle */
} sim_gpu;

typedef struct sim_job {
    char id[64];
    const pfi_recon_group *g;
    size_t a, b; /* GPUs a..b */
    int running;
    double t_start, t_logged, load_s;
    long step;
    char steplog[1024];
    FILE *log;
} sim_job;

typedef struct sim {
    const pfi_hw *hw;
    size_t n, nj;
    sim_gpu gpu[SIM_MAX_GPUS];
    sim_job job[SIM_MAX_JOBS];
    double tau, delay_s, noise, load_s; /* the response model: delay_s, then tau */
    gsl_rng *rng;
    char state[512], steplogs[400];
    unsigned name_hash;          /* name= (default: the host name), in every GPU's UUID */
    struct timespec state_mtime; /* another process may set caps on the same simulated hardware */
} sim;

static double clock_at(const sim *s, const sim_gpu *g, double t)
{
    double dt = t - g->t0 - s->delay_s;
    if (dt < 0) dt = 0;
    return g->x1 + (g->x0 - g->x1) * (s->tau > 0 ? exp(-dt / s->tau) : 0);
}

static int training(const sim_job *j, double t)
{
    return j->running && t - j->t_start >= j->load_s;
}

/* the limit the GPU obeys: the lower of its cap and one set out of band
   (NVML's enforced limit: nvmlDeviceGetEnforcedPowerLimit, "the minimum of
   various power limiters", NVML API Reference) */
static double limit_w(const sim_gpu *g)
{
    return g->oob_w > 0 && g->oob_w < g->cap_w ? g->oob_w : g->cap_w;
}

/* the clock the model's controller settles at for this GPU's limit */
static double target_x(const sim *s, size_t i)
{
    const sim_gpu *g = &s->gpu[i];
    if (g->job < 0 || !s->job[g->job].running) return 1.0;
    pfi_op op;
    pfi_phys_at_cap(s->hw, &s->job[g->job].g->job, limit_w(g), &op);
    return op.x;
}

static void retarget(sim *s, size_t i, double t)
{
    sim_gpu *g = &s->gpu[i];
    g->x0 = clock_at(s, g, t);
    g->t0 = t;
    g->x1 = target_x(s, i);
}

static double job_x(const sim *s, const sim_job *j, double t)
{
    double x = 1;
    for (size_t i = j->a; i <= j->b; i++) x = fmin(x, clock_at(s, &s->gpu[i], t));
    return x;
}

static pfi_status save_state(sim *s, pfi_error *err)
{
    if (!s->state[0]) return PFI_OK;
    json_t *a = json_array();
    for (size_t i = 0; i < s->n; i++) json_array_append_new(a, json_real(s->gpu[i].cap_w));
    json_t *o = json_pack("{s:i,s:o}", "gpus", (int)s->n, "caps_w", a);
    int oob = 0;
    for (size_t i = 0; i < s->n; i++) oob |= s->gpu[i].oob_w > 0;
    if (oob) { /* kept as the test wrote it */
        json_t *e = json_array();
        for (size_t i = 0; i < s->n; i++) json_array_append_new(e, json_real(s->gpu[i].oob_w));
        json_object_set_new(o, "enforced_w", e);
    }
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!txt) return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    pfi_status st = pfi_write_file_private(s->state, txt, strlen(txt), err);
    free(txt);
    struct stat sb;
    if (!st && stat(s->state, &sb) == 0) s->state_mtime = sb.st_mtim;
    return st;
}

static pfi_status load_state(sim *s, pfi_error *err)
{
    FILE *f = fopen(s->state, "r");
    if (!f)
        return errno == ENOENT ? PFI_OK
                               : pfi_errorf(err, PFI_EIO, "%s: %s", s->state, strerror(errno));
    json_error_t je;
    json_t *o = json_loadf(f, 0, &je);
    fclose(f);
    if (!o) return pfi_errorf(err, PFI_EPARSE, "%s:%d: %s", s->state, je.line, je.text);
    json_t *a = json_object_get(o, "caps_w");
    pfi_status st = PFI_OK;
    if (!json_is_array(a) || json_array_size(a) != s->n)
        st = pfi_errorf(err, PFI_EINVAL,
                        "%s: field 'caps_w': expected %zu caps (one per simulated GPU)", s->state,
                        s->n);
    for (size_t i = 0; !st && i < s->n; i++) {
        double c = json_number_value(json_array_get(a, i));
        if (!(c >= s->hw->min_cap_w && c <= s->hw->tdp_w))
            st = pfi_errorf(err, PFI_ERANGE, "%s: caps_w[%zu] = %g outside %g..%g W", s->state, i,
                            c, s->hw->min_cap_w, s->hw->tdp_w);
        else s->gpu[i].cap_w = c;
    }
    /* optional: a limit set out of band per GPU (0: none), as a BMC's */
    json_t *e = json_object_get(o, "enforced_w");
    if (!st && e && (!json_is_array(e) || json_array_size(e) != s->n))
        st = pfi_errorf(err, PFI_EINVAL,
                        "%s: field 'enforced_w': expected %zu limits (one per simulated GPU)",
                        s->state, s->n);
    for (size_t i = 0; !st && i < s->n; i++) {
        double c = e ? json_number_value(json_array_get(e, i)) : 0;
        if (c != 0 && !(c >= s->hw->min_cap_w && c <= s->hw->tdp_w))
            st = pfi_errorf(err, PFI_ERANGE, "%s: enforced_w[%zu] = %g outside %g..%g W (0: none)",
                            s->state, i, c, s->hw->min_cap_w, s->hw->tdp_w);
        else s->gpu[i].oob_w = c;
    }
    json_decref(o);
    return st;
}

static size_t s_count(void *st)
{
    return ((sim *)st)->n;
}

static pfi_status s_info(void *st, size_t i, pfi_gpu_info *info, pfi_error *err)
{
    sim *s = st;
    memset(info, 0, sizeof *info);
    snprintf(info->uuid, sizeof info->uuid, "GPU-5151a000-%04x-4000-8000-%012zx", s->name_hash, i);
    snprintf(info->name, sizeof info->name, "NVIDIA %s (simulated)", s->hw->gpu_model);
    info->cap_min_w = s->hw->min_cap_w;
    info->cap_max_w = info->cap_default_w = s->hw->tdp_w;
    info->minor = (int)i; /* the simulated node's device files follow its indexes */
    snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "00000000:%02zX:00.0", 0x10 + i);
    info->mig = 0;
    return PFI_OK;
}

/* append the steps the job completed up to t to its step log */
static void write_steps(sim *s, sim_job *j, double t)
{
    if (!j->log || !training(j, t)) return;
    if (j->t_logged < j->t_start + j->load_s) j->t_logged = j->t_start + j->load_s;
    double tokens_per_step = j->g->job.tokens_per_s_ref * STEP_S;
    for (int k = 0; k < 10000; k++) {
        double tps = pfi_phys_tokens(&j->g->job, job_x(s, j, j->t_logged));
        double dt = tokens_per_step / tps;
        if (j->t_logged + dt > t) break;
        j->t_logged += dt;
        double noisy = tps * (1 + s->noise * gsl_ran_gaussian_ziggurat(s->rng, 1.0));
        char line[256];
        pfi_steplog_format(line, sizeof line, j->t_logged, noisy > 0 ? noisy : 0, NAN, NAN,
                           ++j->step);
        fputs(line, j->log); /* the line ends in a newline */
    }
    fflush(j->log);
}

/* the hardware state changed under us (another process set a cap): follow it */
static void follow_state(sim *s, double t)
{
    struct stat sb;
    if (!s->state[0] || stat(s->state, &sb) != 0) return;
    if (sb.st_mtim.tv_sec == s->state_mtime.tv_sec && sb.st_mtim.tv_nsec == s->state_mtime.tv_nsec)
        return;
    double old[SIM_MAX_GPUS];
    for (size_t i = 0; i < s->n; i++) old[i] = limit_w(&s->gpu[i]);
    if (load_state(s, NULL) != PFI_OK) return;
    s->state_mtime = sb.st_mtim;
    for (size_t i = 0; i < s->n; i++)
        if (limit_w(&s->gpu[i]) != old[i]) retarget(s, i, t);
}

static pfi_status s_sample(void *st, size_t i, pfi_gpu_sample *out, pfi_error *err)
{
    sim *s = st;
    sim_gpu *g = &s->gpu[i];
    double t = pfi_clock_now();
    follow_state(s, t);
    memset(out, 0, sizeof *out);
    out->t_s = t;
    for (int m = 0; m < PFI_M_COUNT; m++) out->prof[m] = NAN;
    const sim_job *j = g->job >= 0 ? &s->job[g->job] : NULL;
    double d[PFI_M_COUNT];
    if (j && training(j, t)) {
        pfi_op op;
        pfi_phys_at_clock(s->hw, &j->g->job, clock_at(s, g, t), limit_w(g), &op);
        memcpy(d, op.dcgm, sizeof d);
        write_steps(s, &s->job[g->job], t);
    } else {
        for (int m = 0; m < PFI_M_COUNT; m++) d[m] = 0;
        d[PFI_M_POWER_USAGE] = s->hw->idle_w + (j && j->running ? 20 : 0);
        d[PFI_M_SM_CLOCK] = 345;
        d[PFI_M_MEM_CLOCK] = s->hw->mem_clock_mhz;
        d[PFI_M_GPU_TEMP] = 33;
        d[PFI_M_FB_USED] =
            j && j->running ? fmin(j->g->job.fb_mib, 600 + 700.0 * (t - j->t_start)) : 0;
    }
    double p = d[PFI_M_POWER_USAGE] * (1 + s->noise * gsl_ran_gaussian_ziggurat(s->rng, 1.0));
    if (g->t_last > 0 && t > g->t_last) g->energy_j += p * (t - g->t_last);
    g->t_last = t;
    out->power_w = out->power_instant_w = p;
    out->energy_j = g->energy_j;
    out->cap_w = g->cap_w;
    out->enforced_w = limit_w(g);
    out->sm_clock_mhz = d[PFI_M_SM_CLOCK];
    out->mem_clock_mhz = d[PFI_M_MEM_CLOCK];
    out->util_gpu_pct = d[PFI_M_GPU_UTIL];
    out->util_mem_pct = d[PFI_M_MEM_COPY_UTIL];
    out->fb_used_mib = d[PFI_M_FB_USED];
    out->temp_c = d[PFI_M_GPU_TEMP];
    /* NVML's SW_POWER_CAP clocks-event bit (0x4) while the cap holds the clock down */
    out->throttle_reasons = clock_at(s, g, t) < 0.999 ? 0x4 : 0;
    for (int m = PFI_M_GR_ENGINE_ACTIVE; m <= PFI_M_PCIE_RX_BYTES; m++) out->prof[m] = d[m];
    out->have = PFI_GS_POWER | PFI_GS_POWER_INSTANT | PFI_GS_ENERGY | PFI_GS_CAP | PFI_GS_ENFORCED |
                PFI_GS_CLOCKS | PFI_GS_UTIL | PFI_GS_THROTTLE | PFI_GS_MEM | PFI_GS_TEMP |
                PFI_GS_PROF;
    return PFI_OK;
}

static pfi_status s_set_cap(void *st, size_t i, double cap_w, pfi_error *err)
{
    sim *s = st;
    if (!(cap_w >= s->hw->min_cap_w && cap_w <= s->hw->tdp_w))
        return pfi_errorf(err, PFI_ERANGE, "GPU %zu: cap %g W outside the device's %g..%g W", i,
                          cap_w, s->hw->min_cap_w, s->hw->tdp_w);
    double t = pfi_clock_now();
    follow_state(s, t);
    s->gpu[i].cap_w = cap_w;
    retarget(s, i, t);
    return save_state(s, err);
}

static pfi_status s_procs(void *st, size_t i, pfi_gpu_proc *p, size_t max, size_t *n,
                          pfi_error *err)
{
    sim *s = st;
    *n = 0;
    int k = s->gpu[i].job;
    if (k < 0 || !s->job[k].running || max == 0) return PFI_OK;
    memset(p, 0, sizeof *p);
    p->pid = 900000u + (unsigned)k;
    p->used_mib = s->job[k].g->job.fb_mib;
    snprintf(p->job_id, sizeof p->job_id, "%s", s->job[k].id);
    snprintf(p->steplog, sizeof p->steplog, "%s", s->job[k].steplog);
    *n = 1;
    return PFI_OK;
}

static void s_close(void *st)
{
    sim *s = st;
    if (!s) return;
    for (size_t k = 0; k < s->nj; k++)
        if (s->job[k].log) fclose(s->job[k].log);
    if (s->rng) gsl_rng_free(s->rng);
    free(s);
}

/* every GPU always available; the limit read from a sample; per_device 0:
 * one model and clock for all GPUs */
static const pfi_gpu_ops sim_ops = {.name = "sim",
                                    .count = s_count,
                                    .info = s_info,
                                    .sample = s_sample,
                                    .set_cap = s_set_cap,
                                    .processes = s_procs,
                                    .close = s_close};

pfi_status pfi_sim_job_start(void *st, size_t k, const char *steplog, pfi_error *err)
{
    sim *s = st;
    if (k >= s->nj)
        return pfi_errorf(err, PFI_ENOTFOUND, "simulated job %zu: no such job (%zu jobs)", k,
                          s->nj);
    sim_job *j = &s->job[k];
    if (j->log) fclose(j->log), j->log = NULL;
    if (steplog && steplog != j->steplog) snprintf(j->steplog, sizeof j->steplog, "%s", steplog);
    else if (s->steplogs[0]) {
        char tmp[sizeof j->steplog];
        snprintf(tmp, sizeof tmp, "%s/%s.jsonl", s->steplogs, j->id);
        memcpy(j->steplog, tmp, sizeof tmp);
    } else j->steplog[0] = '\0';
    if (j->steplog[0] && !(j->log = fopen(j->steplog, "a")))
        return pfi_errorf(err, PFI_EIO, "%s: cannot open the step log: %s", j->steplog,
                          strerror(errno));
    double t = pfi_clock_now();
    j->running = 1;
    j->t_start = j->t_logged = t;
    j->step = 0;
    for (size_t i = j->a; i <= j->b; i++) {
        s->gpu[i].x0 = s->gpu[i].x1 = 1.0;
        s->gpu[i].t0 = t;
        retarget(s, i, t);
        s->gpu[i].x0 = s->gpu[i].x1; /* a job starts at its settled clock */
    }
    return PFI_OK;
}

pfi_status pfi_sim_job_stop(void *st, size_t k, pfi_error *err)
{
    sim *s = st;
    if (k >= s->nj) return pfi_errorf(err, PFI_ENOTFOUND, "simulated job %zu: no such job", k);
    sim_job *j = &s->job[k];
    if (j->log) fclose(j->log), j->log = NULL;
    j->running = 0;
    double t = pfi_clock_now();
    for (size_t i = j->a; i <= j->b; i++) retarget(s, i, t);
    return PFI_OK;
}

size_t pfi_sim_jobs(void *st)
{
    return ((sim *)st)->nj;
}

pfi_status pfi_sim_job_info(void *st, size_t k, size_t *first, size_t *last, const char **id,
                            const char **group, pfi_error *err)
{
    sim *s = st;
    if (k >= s->nj)
        return pfi_errorf(err, PFI_ENOTFOUND,
                          "simulated job %zu: no such job (%zu jobs; add job=ID:GROUP@A-B)", k,
                          s->nj);
    *first = s->job[k].a;
    *last = s->job[k].b;
    *id = s->job[k].id;
    *group = s->job[k].g->group;
    return PFI_OK;
}

double pfi_sim_tokens_now(void *st, size_t k)
{
    sim *s = st;
    if (k >= s->nj) return NAN;
    double t = pfi_clock_now();
    if (!training(&s->job[k], t)) return NAN;
    return pfi_phys_tokens(&s->job[k].g->job, job_x(s, &s->job[k], t));
}

static int parse_uint(const char *v, size_t lo, size_t hi, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

static int parse_num(const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi)) return -1;
    *out = x;
    return 0;
}

/* the backend's options as given (gpus=, model=, job=, ...), before they
   are applied to the simulated node */
typedef struct sim_args {
    size_t seed;
    int idle;
    char model[16], name[256];
    struct {
        char id[64], group[96];
        size_t a, b;
    } job[SIM_MAX_JOBS];
    size_t nj;
} sim_args;

/* job=ID:GROUP@FIRST-LAST into A */
static pfi_status parse_job(const char *v, sim_args *A, pfi_error *err)
{
    const char *colon = strchr(v, ':'), *at = strrchr(v, '@');
    unsigned long a, b;
    int used = 0;
    if (A->nj == SIM_MAX_JOBS)
        return pfi_errorf(err, PFI_ERANGE, "sim: at most %d jobs", SIM_MAX_JOBS);
    if (!colon || !at || at < colon || colon == v || at == colon + 1 ||
        sscanf(at + 1, "%lu-%lu%n", &a, &b, &used) != 2 || at[1 + used] != '\0' || a > b)
        return pfi_errorf(err, PFI_EINVAL,
                          "sim option job=%s: expected ID:GROUP@FIRST-LAST (e.g. "
                          "17:moe-ft-qwen30ba3b-x8@0-7)",
                          v);
    int li = (int)(colon - v), lg = (int)(at - colon - 1);
    if (li > 63) li = 63;
    if (lg > 95) lg = 95;
    snprintf(A->job[A->nj].id, sizeof A->job[0].id, "%.*s", li, v);
    snprintf(A->job[A->nj].group, sizeof A->job[0].group, "%.*s", lg, colon + 1);
    A->job[A->nj].a = a;
    A->job[A->nj].b = b;
    A->nj++;
    return PFI_OK;
}

/* one option KEY=VALUE (eq: whether it had "="), into s or A */
static pfi_status parse_opt(sim *s, sim_args *A, const char *kv, const char *v, int eq,
                            pfi_error *err)
{
    if (!strcmp(kv, "gpus")) {
        if (parse_uint(v, 1, SIM_MAX_GPUS, &s->n))
            return pfi_errorf(err, PFI_EINVAL, "sim option gpus=%s: expected 1..%d", v,
                              SIM_MAX_GPUS);
    } else if (!strcmp(kv, "model")) {
        snprintf(A->model, sizeof A->model, "%s", v);
    } else if (!strcmp(kv, "tau")) {
        if (parse_num(v, 0, 3600, &s->tau))
            return pfi_errorf(err, PFI_EINVAL, "sim option tau=%s: expected 0..3600 s", v);
    } else if (!strcmp(kv, "delay")) {
        if (parse_num(v, 0, 60, &s->delay_s))
            return pfi_errorf(err, PFI_EINVAL, "sim option delay=%s: expected 0..60 s", v);
    } else if (!strcmp(kv, "load")) {
        if (parse_num(v, 0, 3600, &s->load_s))
            return pfi_errorf(err, PFI_EINVAL, "sim option load=%s: expected 0..3600 s", v);
    } else if (!strcmp(kv, "noise")) {
        if (parse_num(v, 0, 0.5, &s->noise))
            return pfi_errorf(err, PFI_EINVAL, "sim option noise=%s: expected 0..0.5", v);
    } else if (!strcmp(kv, "seed")) {
        if (parse_uint(v, 0, (size_t)1 << 62, &A->seed))
            return pfi_errorf(err, PFI_EINVAL, "sim option seed=%s: not a number", v);
    } else if (!strcmp(kv, "state")) {
        snprintf(s->state, sizeof s->state, "%s", v);
    } else if (!strcmp(kv, "name")) {
        if (!*v || strlen(v) > 255)
            return pfi_errorf(err, PFI_EINVAL, "sim option name=%s: expected 1..255 characters", v);
        snprintf(A->name, sizeof A->name, "%s", v);
    } else if (!strcmp(kv, "steplogs")) {
        snprintf(s->steplogs, sizeof s->steplogs, "%s", v);
    } else if (!strcmp(kv, "idle") && !eq) {
        A->idle = 1;
    } else if (!strcmp(kv, "job")) {
        return parse_job(v, A, err);
    } else {
        return pfi_errorf(err, PFI_EINVAL,
                          "unknown sim option '%s' (gpus, model, job, tau, delay, load, noise, "
                          "seed, state, steplogs, idle, name)",
                          kv);
    }
    return PFI_OK;
}

/* each simulated node's GPUs have UUIDs of their own (so several agents
   join apart in Prometheus): the node's name (A->name, else the host's),
   FNV-1a hashed to 16 bits, in the UUID's second group */
static void hash_name(sim *s, sim_args *A)
{
    char *name = A->name;
    if (!name[0] && (gethostname(name, sizeof A->name) != 0 || !name[0]))
        snprintf(name, sizeof A->name, "localhost");
    name[sizeof A->name - 1] = '\0';
    unsigned h = 2166136261u;
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    s->name_hash = ((h >> 16) ^ h) & 0xffffu;
}

/* the jobs of A on s's GPUs, each a group of the reconstruction */
static pfi_status place_jobs(sim *s, pfi_recon *recon, const sim_args *A, pfi_error *err)
{
    for (size_t k = 0; k < A->nj; k++) {
        if (!recon)
            return pfi_errorf(err, PFI_EINVAL,
                              "sim option job=: the reconstruction's groups were not loaded");
        const pfi_recon_group *g = pfi_recon_find(recon, A->job[k].group, s->hw->gpu_model);
        if (!g)
            return pfi_errorf(err, PFI_ENOTFOUND,
                              "sim option job=%s:%s: no %s group of that name in the "
                              "reconstruction",
                              A->job[k].id, A->job[k].group, s->hw->gpu_model);
        if (A->job[k].b >= s->n)
            return pfi_errorf(err, PFI_ERANGE, "sim option job=%s: GPUs %zu-%zu, but there are %zu",
                              A->job[k].id, A->job[k].a, A->job[k].b, s->n);
        for (size_t i = A->job[k].a; i <= A->job[k].b; i++)
            if (s->gpu[i].job >= 0)
                return pfi_errorf(err, PFI_EINVAL, "sim: GPU %zu is in two jobs", i);
        sim_job *j = &s->job[k];
        memcpy(j->id, A->job[k].id, sizeof j->id);
        j->id[sizeof j->id - 1] = '\0';
        j->g = g;
        j->load_s = s->load_s;
        j->a = A->job[k].a;
        j->b = A->job[k].b;
        for (size_t i = j->a; i <= j->b; i++) s->gpu[i].job = (int)k;
        s->nj++;
    }
    return PFI_OK;
}

pfi_status pfi_gpu_sim_open(const char *opts, const struct pfi_recon *recon_c,
                            const pfi_gpu_ops **ops, void **out, pfi_error *err)
{
    pfi_recon *recon = (pfi_recon *)recon_c;
    sim *s = calloc(1, sizeof *s);
    sim_args *A = calloc(1, sizeof *A);
    if (!s || !A) {
        free(s), free(A);
        return pfi_errorf(err, PFI_ENOMEM, "out of memory");
    }
    s->n = 8;
    s->tau = 0.1;
    s->delay_s = 0.05;
    s->noise = 0.01;
    s->load_s = 15;
    A->seed = 1;
    snprintf(A->model, sizeof A->model, "H200");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", opts ? opts : "");
    pfi_status st = PFI_OK;
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv && !st; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (eq) *eq = '\0';
        st = parse_opt(s, A, kv, eq ? eq + 1 : "", eq != NULL, err);
    }
    hash_name(s, A);
    if (!st && !(s->hw = pfi_hw_get(A->model)))
        st = pfi_errorf(err, PFI_EINVAL, "sim option model=%s: expected H200 or H100", A->model);
    for (size_t i = 0; !st && i < s->n; i++) {
        s->gpu[i].cap_w = s->hw->tdp_w;
        s->gpu[i].x0 = s->gpu[i].x1 = 1;
        s->gpu[i].job = -1;
    }
    if (!st) st = place_jobs(s, recon, A, err);
    if (!st && s->state[0]) st = load_state(s, err);
    if (!st) {
        s->rng = gsl_rng_alloc(gsl_rng_taus2);
        if (!s->rng) st = pfi_errorf(err, PFI_ENOMEM, "out of memory");
        else gsl_rng_set(s->rng, (unsigned long)pfi_mix64(A->seed));
    }
    for (size_t k = 0; !st && !A->idle && k < s->nj; k++) st = pfi_sim_job_start(s, k, NULL, err);
    if (!st && s->state[0]) st = save_state(s, err);
    free(A);
    if (st) {
        s_close(s);
        return st;
    }
    *ops = &sim_ops;
    *out = s;
    return PFI_OK;
}
