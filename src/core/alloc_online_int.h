/* alloc_online_int.h — safe-online's state (alloc_online.c) and the parts
 * it is made of, shared by its files: a job's measured points and what is
 * read off them (alloc_online_points.c), the first targets planned from
 * what is known (alloc_online_plan.c). Internal to the core (issue 43:
 * alloc_online.c was 955 lines). */
#ifndef PFI_ALLOC_ONLINE_INT_H
#define PFI_ALLOC_ONLINE_INT_H

#include "alloc_internal.h"

#define MAXP 32 /* points per job: a profile, earlier events and this one */
/* standard errors of gain the plan needs to leave the reference
   (plan_gains): 3, one-sided p 0.0013. A job's several points are read at
   once, so 2 (the pessimism's z) let noise through: two identical jobs
   were split 17.3% / 1.4% in 1 seed of 5 (bench_adversary) */
#define PLAN_GAIN_SE 3.0
#define LOCAL_MAX (MAXP + 2) /* points of a local model (the plan's: every measured point) */

typedef struct opoint {
    double p, t, vp, vt; /* power, tokens/s (scaled), their variances */
} opoint;

typedef struct ojob {
    opoint pt[MAXP];
    size_t np;
    double P, Pprev;       /* target now, before the last move */
    double t_last, v_last; /* the last measurement (scaled) and its variance */
    double floor;
    double D; /* trust region now, x P_max: doubles while moves go one way (to 4 x trust_frac) */
    int moved, dir;
    int held; /* out of moves at P (pfi_online_hold: e.g. an unreachable job) */
} ojob;

struct pfi_online {
    size_t n;
    pfi_alloc_opts o;
    pfi_online_opts oo;
    pfi_alloc_job *jobs; /* copy: tiers, P_max, T_max */
    prepared pj;         /* equal weight: hi, lo, scale, tmax, weight */
    ojob *j;
    double budget;
    int moved_last;
    double *targets, *dlo, *dhi, *buf;
    double *t_before, *v_before; /* each job's measurement before the last move */
    jcurve *local;
};

/* alloc_online_points.c */
double online_merge_tol(const pfi_online *s, size_t i);
void online_add_point(pfi_online *s, size_t i, opoint m);
void online_neighbours(const pfi_online *s, size_t i, double p, const opoint **below,
                       const opoint **cur, const opoint **above);
double online_secant(const opoint *a, const opoint *b, double *se);
size_t online_points_below(const pfi_online *s, size_t i, const opoint *cur, const opoint **out);
const opoint *online_point_above(const pfi_online *s, size_t i, const opoint *x);
double online_growth_below(const pfi_online *s, size_t i, const opoint *low, const opoint *up,
                           const opoint *up2);
double online_loss_slope(const pfi_online *s, size_t i, const opoint *cur, double pt);
void online_add_known(pfi_online *s, size_t i, const pfi_alloc_job *job);
size_t online_pessimistic_points(const pfi_online *s, size_t i, opoint *x, double *pt, double *tt);

/* alloc_online_plan.c */
pfi_status online_plan_from_known(pfi_online *s, pfi_error *err);

#endif
