/* ctl_baseline.c — each job's baseline: its uncapped, steady training draw
 * and throughput (docs/controller.md, "Baselines"). Pure: no I/O, no clock.
 *
 * The rule, after the meter-before/meter-after baselines of demand-response
 * measurement and verification (NAESB WEQ M&V; a day-matching baseline does
 * not fit a job that runs for hours):
 *   - a sample counts only when no event runs, the job is reachable, we do
 *     not cap it (its cap at its ceiling), it has been so for at least
 *     baseline_settle_s (the recovery from an earlier event and a job's
 *     first seconds are left out), and — for a job that reports throughput —
 *     it is training (tokens/s > 0: loading and evaluation are left out);
 *   - over the last baseline_window_s of such samples, the plateau: the
 *     mean of the samples at or above 0.9 x their median (checkpoint and
 *     evaluation dips left out), throughput over the same samples;
 *   - the plateau is the job's steady baseline when its samples span at
 *     least half the window (and number at least 3); the last steady
 *     baseline is kept (it is what an event uses, so the steps of one
 *     event and back-to-back events share it: no cut compounds);
 *   - a job with no steady baseline yet: the plateau of its last window of
 *     samples, up to the newest ("short window": the steps of one event
 *     take the same), else an estimate, its GPUs at 0.97 of their ceiling
 *     ("estimate"; training jobs draw close to their limit). A profile at
 *     job start (ctl_profile.c) starts from the steady baseline; its
 *     capped samples are not the job's baseline (capped: left out).
 *
 * An event's baseline of a job (ctl_baseline_event; issue 41: a job that
 * drew more while uncapped, or once it saw the event announced on the open
 * GET /v1/events, kept that power through the event and had the waste
 * counted as shed): the steady windows are kept, one plateau per
 * baseline_window_s; the event takes the lowest of the last 3 that ended
 * at or before its announcement (a trigger's is its start), so raising
 * one's draw after an event is announced gains nothing. Where the job's
 * measured points (its profile, earlier events) show a knee — the least
 * power at which its throughput reaches its uncapped plateau — below that,
 * the baseline is at most the knee's draw: power beyond the knee buys no
 * throughput, it is waste, and waste is neither kept nor counted as shed.
 * Each period the jobs keep, for every scheduled event already announced,
 * the baseline it will take (a snapshot: an event announced hours ahead
 * would find the windows before its announcement gone from the ring by
 * its start). The knee is the lowest draw measured at the plateau (a capped point
 * whose throughput is within 1%, or 2 standard errors, of the plateau),
 * lowered where a power law through the points below it reaches the
 * plateau sooner even at its upper bound (2 relative standard errors /
 * the exponent): an honest job's own draw is never cut by the estimate.
 * With no window before the announcement, the estimate. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define PLATEAU_FLOOR 0.9 /* samples under 0.9 x the median are dips */
#define STEADY_SPAN 0.5   /* a steady window spans half baseline_window_s */
#define STEADY_MIN_N 3
#define ESTIMATE_RATIO 0.97 /* a training job's draw / its GPUs' ceiling */
#define KNEE_TOL 0.01       /* a point at its plateau: throughput within 1% (or 2 SE) */

static const char *const src_names[] = {"none", "steady", "short window", "estimate", "late"};

const char *ctl_base_src_name(ctl_base_src s)
{
    return (unsigned)s < sizeof src_names / sizeof *src_names ? src_names[s] : "none";
}

int ctl_base_src_parse(const char *name, ctl_base_src *s)
{
    for (size_t i = 0; name && i < sizeof src_names / sizeof *src_names; i++)
        if (!strcmp(name, src_names[i])) {
            *s = (ctl_base_src)i;
            return 0;
        }
    *s = CTL_BASE_NONE;
    return -1;
}

static int capped(const ctl_job *j)
{
    return isfinite(j->cap_w) && j->cap_w < j->cap_max_w - 0.5;
}

/* the k-th smallest of v[0..n) (reorders v) */
static double select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[(lo + hi) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j], v[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return v[k];
    }
    return v[k];
}

/* the plateau of the samples of the last window_s: 0 and *w, *tok, *span_s,
 * *n; -1 when there are none */
static int plateau(const ctl_job *j, double now, double window_s, double *w, double *tok, double *x,
                   double *span_s, size_t *n)
{
    double p[CTL_HIST];
    size_t m = 0;
    double oldest = now;
    for (size_t k = 0; k < j->hist_n; k++) {
        size_t i = (j->hist_head + CTL_HIST - 1 - k) % CTL_HIST;
        if (now - j->hist_t[i] > window_s) break;
        p[m++] = j->hist_w[i];
        oldest = j->hist_t[i];
    }
    if (!m) return -1;
    double med = select_kth(p, m, m / 2);
    double sw = 0, st = 0, sx = 0;
    size_t nw = 0, nt = 0, nx = 0;
    for (size_t k = 0; k < m; k++) {
        size_t i = (j->hist_head + CTL_HIST - 1 - k) % CTL_HIST;
        if (j->hist_w[i] < PLATEAU_FLOOR * med) continue;
        sw += j->hist_w[i], nw++;
        if (isfinite(j->hist_tok[i])) st += j->hist_tok[i], nt++;
        if (j->hist_x[i] > 0) sx += j->hist_x[i], nx++;
    }
    *w = sw / (double)nw;
    *tok = nt ? st / (double)nt : NAN;
    *x = nx == nw ? sx / (double)nx : NAN; /* the telemetry of every sample, or none */
    *span_s = now - oldest;
    *n = nw;
    return 0;
}

/* a steady plateau becomes the job's newest window once a whole window
   has passed since the last one (windows do not overlap) */
static void window_keep(const ctl_cfg *cfg, ctl_job *j, double now, double w, double tok, double x)
{
    size_t last = (j->win_head + CTL_WIN_MAX - 1) % CTL_WIN_MAX;
    if (j->win_n && now - j->win_end[last] < cfg->baseline_window_s) return;
    size_t h = j->win_head;
    j->win_w[h] = w, j->win_tok[h] = tok, j->win_x[h] = x, j->win_end[h] = now;
    j->win_head = (h + 1) % CTL_WIN_MAX;
    if (j->win_n < CTL_WIN_MAX) j->win_n++;
}

void ctl_baseline_observe(const ctl_cfg *cfg, ctl_job *j, double now, int event_running)
{
    if (!j->reachable) return;
    if (event_running || capped(j)) { /* the settle starts again after */
        j->uncapped_since = NAN;
        return;
    }
    if (!isfinite(j->uncapped_since)) j->uncapped_since = now;
    if (isfinite(j->tokens_per_s)) j->has_tokens = 1;
    if (now - j->uncapped_since < cfg->baseline_settle_s) return;
    if (j->has_tokens && !(j->tokens_per_s > 0)) return; /* loading, evaluating */
    if (!(j->measured_w > 0)) return;
    size_t h = j->hist_head;
    j->hist_w[h] = j->measured_w;
    j->hist_tok[h] = j->tokens_per_s;
    j->hist_x[h] = ctl_job_tel_x(j);
    j->hist_t[h] = now;
    j->hist_head = (h + 1) % CTL_HIST;
    if (j->hist_n < CTL_HIST) j->hist_n++;
    /* the steady estimate, refreshed every tenth of a window (a median of
       up to CTL_HIST samples per job is not free at 12,500 agents) */
    if (isfinite(j->steady_eval_t) && now - j->steady_eval_t < cfg->baseline_window_s / 10) return;
    j->steady_eval_t = now;
    double w, tok, x, span;
    size_t n;
    if (plateau(j, now, cfg->baseline_window_s, &w, &tok, &x, &span, &n) == 0 &&
        span >= STEADY_SPAN * cfg->baseline_window_s && n >= STEADY_MIN_N) {
        j->steady_w = w;
        j->steady_tokens = tok;
        j->steady_t = now;
        window_keep(cfg, j, now, w, tok, x);
    }
}

ctl_base_src ctl_baseline_now(const ctl_cfg *cfg, const ctl_job *j, double *w, double *tok)
{
    if (isfinite(j->steady_t)) {
        *w = j->steady_w;
        *tok = j->steady_tokens;
        return CTL_BASE_STEADY;
    }
    /* the last window of uncapped samples, up to the newest: an event's
       later steps and an event soon after another take the same */
    double span;
    size_t n;
    if (j->hist_n) {
        double newest = j->hist_t[(j->hist_head + CTL_HIST - 1) % CTL_HIST];
        double x;
        if (plateau(j, newest, cfg->baseline_window_s, w, tok, &x, &span, &n) == 0)
            return CTL_BASE_SHORT;
    }
    *w = j->gpus * j->cap_max_w * ESTIMATE_RATIO;
    *tok = j->tokens_per_s > 0 && !capped(j) ? j->tokens_per_s : NAN;
    if (!isfinite(*w)) *w = j->measured_w;
    return CTL_BASE_ESTIMATE;
}

static int by_power_desc(const void *a, const void *b)
{
    double x = ((const pfi_online_point *)a)->power_w, y = ((const pfi_online_point *)b)->power_w;
    return (x < y) - (x > y);
}

/* where a power law through the points below the plateau (least squares
   of ln tokens on ln power) reaches top_tokens, at its upper bound (2 x
   the points' relative error / the exponent above it); NaN when it cannot
   say (fewer than 2 points, a flat or falling fit) */
static double fit_reach(const pfi_online_point *p, size_t n, double top_tokens)
{
    if (n < 2) return NAN;
    double sx = 0, sy = 0, sxx = 0, sxy = 0, rel = 0;
    for (size_t k = 0; k < n; k++) {
        if (!(p[k].power_w > 0) || !(p[k].tokens_per_s > 0)) return NAN;
        double x = log(p[k].power_w), y = log(p[k].tokens_per_s);
        sx += x, sy += y, sxx += x * x, sxy += x * y;
        rel = fmax(rel, p[k].tokens_se / p[k].tokens_per_s);
    }
    double d = n * sxx - sx * sx;
    if (!(d > 0)) return NAN;
    double b = (n * sxy - sx * sy) / d, a = (sy - b * sx) / n;
    if (!(b > 0.02)) return NAN;
    return exp((log(top_tokens) - a) / b) * (1 + 2 * fmax(rel, KNEE_TOL) / b);
}

double ctl_job_knee_w(const ctl_job *j, double top_w, double top_tokens)
{
    if (!(top_tokens > 0) || !(top_w > 0) || !j->nknown) return NAN;
    pfi_online_point p[CTL_KNOWN_MAX];
    size_t n = 0;
    for (size_t k = 0; k < j->nknown; k++)
        if (j->known[k].power_w < top_w && j->known[k].tokens_per_s >= 0) p[n++] = j->known[k];
    if (!n) return NAN;
    qsort(p, n, sizeof *p, by_power_desc);
    /* the points (from the top) still at the plateau, within their noise:
       the lowest of them drew what the job needs, measured */
    size_t i = 0;
    while (i < n &&
           p[i].tokens_per_s >= top_tokens * (1 - fmax(KNEE_TOL, 2 * p[i].tokens_se / top_tokens)))
        i++;
    double above = i ? p[i - 1].power_w : top_w;
    if (i == n) return above;
    /* below them, the curve the points show, extended up to the plateau at
       its upper bound: the knee is no higher */
    double est = fit_reach(p + i, n - i, top_tokens);
    return isfinite(est) ? fmin(above, fmax(p[i].power_w, est)) : above;
}

ctl_base_src ctl_baseline_event(const ctl_cfg *cfg, const ctl_job *j, double announced_t, double *w,
                                double *tok, ctl_base_how *how)
{
    memset(how, 0, sizeof *how);
    how->announced_t = announced_t;
    how->plateau_w = how->knee_w = NAN;
    double x = NAN;
    for (size_t k = 0; k < j->win_n && how->nwin < CTL_BASE_WINDOWS; k++) {
        size_t i = (j->win_head + CTL_WIN_MAX - 1 - k) % CTL_WIN_MAX;
        if (j->win_end[i] > announced_t) continue; /* after the announcement: not looked at */
        how->win_w[how->nwin] = j->win_w[i];
        how->win_end[how->nwin++] = j->win_end[i];
        if (!(j->win_w[i] >= how->plateau_w)) {
            how->plateau_w = j->win_w[i];
            *tok = j->win_tok[i];
            x = j->win_x[i];
        }
    }
    ctl_base_src src = CTL_BASE_STEADY;
    if (how->nwin) *w = how->plateau_w;
    else { /* the estimate; its throughput what it reports now, uncapped (the
              allocator then has one; a claim, checked as any: ctl_claims.c) */
        *w = j->gpus * j->cap_max_w * ESTIMATE_RATIO;
        *tok = j->tokens_per_s > 0 && !capped(j) ? j->tokens_per_s : NAN;
        if (!isfinite(*w)) *w = j->measured_w;
        src = CTL_BASE_ESTIMATE;
    }
    (void)cfg;
    how->knee_w = ctl_job_knee_w(j, *w, *tok);
    if (how->knee_w > 0 && *w > how->knee_w) {
        *w = how->knee_w;
        how->knee_capped = 1;
    }
    how->base_x = x;
    return src;
}

ctl_base_src ctl_baseline_for(const ctl_cfg *cfg, const ctl_job *j, double announced_t, double *w,
                              double *tok, ctl_base_how *how)
{
    for (size_t k = 0; k < j->nsnap; k++)
        if (j->snap[k].announced_t == announced_t) {
            *w = j->snap[k].w, *tok = j->snap[k].tok, *how = j->snap[k].how;
            return j->snap[k].src;
        }
    return ctl_baseline_event(cfg, j, announced_t, w, tok, how);
}

/* is a in the list? */
static int listed(const double *v, size_t n, double a)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == a) return 1;
    return 0;
}

void ctl_baseline_snapshots(const ctl_cfg *cfg, ctl_state *s, double now)
{
    double ann[CTL_SNAP_MAX];
    size_t na = 0;
    for (size_t i = 0; i < s->nevents && na < CTL_SNAP_MAX; i++) {
        const ctl_event *e = &s->event[i];
        if (e->status == CTL_EV_SCHEDULED && e->announced_t <= now &&
            !listed(ann, na, e->announced_t))
            ann[na++] = e->announced_t;
    }
    for (size_t k = 0; k < s->njobs; k++) {
        ctl_job *j = &s->job[k];
        size_t keep = 0; /* those still pending, in order */
        for (size_t q = 0; q < j->nsnap; q++)
            if (listed(ann, na, j->snap[q].announced_t)) j->snap[keep++] = j->snap[q];
        j->nsnap = keep;
        for (size_t a = 0; a < na; a++) {
            int have = 0;
            for (size_t q = 0; q < j->nsnap; q++) have |= j->snap[q].announced_t == ann[a];
            if (have || j->nsnap == CTL_SNAP_MAX) continue;
            struct ctl_base_snap *x = &j->snap[j->nsnap++];
            x->announced_t = ann[a];
            x->src = ctl_baseline_event(cfg, j, ann[a], &x->w, &x->tok, &x->how);
        }
    }
}
