/* plot.c — PLplot figures (see plot.h). PLplot keeps global stream state:
 * one figure at a time in the process (plot_mu: the controller draws from
 * its HTTP threads), each rendered once per device. */
#include "plot.h"

#include <math.h>
#include <plplot.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const int palette[14][3] = {{255, 255, 255}, /* 0: background */
                                   {30, 30, 30},    /* 1: axes, text */
                                   {31, 119, 180},  {255, 127, 14},  {44, 160, 44},
                                   {214, 39, 40},   {148, 103, 189}, {140, 86, 75},
                                   {227, 119, 194}, {127, 127, 127}, {188, 189, 34},
                                   {23, 190, 207},  {200, 200, 200}, {0, 0, 0}};

static void range(const pfi_panel *p, double *x0, double *x1, double *y0, double *y1)
{
    double a = INFINITY, b = -INFINITY, c = INFINITY, d = -INFINITY;
    for (size_t s = 0; s < p->nseries; s++)
        for (size_t i = 0; i < p->series[s].n; i++) {
            double x = p->series[s].x[i], y = p->series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            if (x < a) a = x;
            if (x > b) b = x;
            if (y < c) c = y;
            if (y > d) d = y;
        }
    if (!isfinite(a)) a = 0, b = 1, c = 0, d = 1;
    if (b <= a) b = a + 1;
    if (d <= c) d = c + (c == 0 ? 1 : fabs(c) * 0.1);
    double mx = 0.04 * (b - a), my = 0.06 * (d - c);
    *x0 = isnan(p->xmin) ? a - mx : p->xmin;
    *x1 = isnan(p->xmax) ? b + mx : p->xmax;
    *y0 = isnan(p->ymin) ? c - my : p->ymin;
    *y1 = isnan(p->ymax) ? d + my : p->ymax;
    if (p->ncats) {
        *x0 = -0.6;
        *x1 = (double)p->ncats - 0.4;
    }
}

static void draw_panel(const pfi_panel *p)
{
    double x0, x1, y0, y1;
    range(p, &x0, &x1, &y0, &y1);
    pladv(0);
    plvsta();
    plsyax(7, 0); /* plain numbers up to 7 digits, no "(x10^6)" label */
    plsxax(7, 0);
    plwind(x0, x1, y0, y1);
    plcol0(12);
    plwidth(0.5);
    plbox("g", 0, 0, "g", 0, 0); /* light grid */
    plcol0(1);
    plwidth(1.2);
    if (p->ncats) {
        plbox("bc", 0, 0, "bcnstv", 0, 0);
        for (size_t k = 0; k < p->ncats; k++)
            plmtex("b", 1.6, ((double)k - x0) / (x1 - x0), 0.5, p->xcats[k]);
    } else {
        plbox("bcnst", 0, 0, "bcnstv", 0, 0);
    }
    pllab(p->ncats ? "" : (p->xlabel ? p->xlabel : ""), p->ylabel ? p->ylabel : "",
          p->title ? p->title : "");
    if (p->ncats && p->xlabel) plmtex("b", 3.2, 0.5, 0.5, p->xlabel);
    if (p->diagonal) {
        double lo = fmax(x0, y0), hi = fmin(x1, y1);
        PLFLT dx[2] = {lo, hi}, dy[2] = {lo, hi};
        plcol0(9);
        plwidth(1);
        pllsty(2);
        plline(2, dx, dy);
        pllsty(1);
    }
    for (size_t s = 0; s < p->nseries; s++) {
        const pfi_series *se = &p->series[s];
        if (se->n == 0) continue;
        plcol0(2 + se->color % 10);
        PLFLT xs[4096], ys[4096];
        size_t m = 0;
        for (size_t i = 0; i < se->n && m < 4096; i++)
            if (isfinite(se->x[i]) && isfinite(se->y[i])) {
                xs[m] = se->x[i];
                ys[m] = se->y[i];
                m++;
            }
        if (m == 0) continue;
        if (se->style & PFI_PLOT_LINE) {
            plwidth(1.8);
            plline((PLINT)m, xs, ys);
        }
        if (se->style & PFI_PLOT_POINTS) {
            plwidth(1);
            plssym(0, 0.9);
            plpoin((PLINT)m, xs, ys, 17);
        }
    }
    /* legend, drawn by hand in world coordinates */
    if (p->legend) {
        int nl = 0;
        for (size_t s = 0; s < p->nseries; s++) nl += p->series[s].label != NULL;
        double w = x1 - x0, h = y1 - y0, lx, ly, dy = h * 0.055;
        int right = p->legend == 2 || p->legend == 3, top = p->legend == 1 || p->legend == 2;
        lx = right ? x1 - 0.36 * w : x0 + 0.03 * w;
        ly = top ? y1 - 0.06 * h : y0 + 0.06 * h + dy * (nl - 1);
        for (size_t s = 0; s < p->nseries; s++) {
            const pfi_series *se = &p->series[s];
            if (!se->label) continue;
            plcol0(2 + se->color % 10);
            PLFLT xx[2] = {lx, lx + 0.05 * w}, yy[2] = {ly, ly};
            if (se->style & PFI_PLOT_LINE) {
                plwidth(2);
                plline(2, xx, yy);
            }
            if (se->style & PFI_PLOT_POINTS) {
                PLFLT px = lx + 0.025 * w, py = ly;
                plpoin(1, &px, &py, 17);
            }
            plcol0(1);
            plptex(lx + 0.065 * w, ly, 1, 0, 0, se->label);
            ly -= dy;
        }
    }
    if (p->note) {
        plcol0(1);
        plmtex("t", -1.5, 0.97, 1.0, p->note);
    }
}

static pthread_mutex_t plot_mu = PTHREAD_MUTEX_INITIALIZER;

/* one figure on PLplot's one stream (plot_mu held) */
static pfi_status plot_locked(const char *base, int width, int height, int nx, int ny,
                              const pfi_panel *panels, size_t npanels, int formats, pfi_error *err)
{
    static const char *const dev[2] = {"pngcairo", "svgcairo"}, *ext[2] = {"png", "svg"};
    for (int d = 0; d < 2; d++) {
        if (!(formats & (d ? PFI_PLOT_SVG : PFI_PLOT_PNG))) continue;
        char path[4096], tmp[4200];
        snprintf(path, sizeof path, "%s.%s", base, ext[d]);
        snprintf(tmp, sizeof tmp, "%s.%s.tmp", base, ext[d]); /* renamed when complete */
        plsdev(dev[d]);
        plsfnam(tmp);
        plspage(0, 0, width, height, 0, 0);
        plscmap0n(16);
        for (int k = 0; k < 14; k++) plscol0(k, palette[k][0], palette[k][1], palette[k][2]);
        plssub(nx, ny);
        plinit();
        plschr(0, nx * ny > 2 ? 0.75 : 0.9);
        for (size_t i = 0; i < npanels; i++) draw_panel(&panels[i]);
        plend();
        FILE *f = fopen(tmp, "rb");
        if (!f)
            return pfi_errorf(err, PFI_EIO,
                              "%s: PLplot did not write the figure (cairo driver missing?)", path);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fclose(f);
        if (size <= 0 || rename(tmp, path) != 0) {
            unlink(tmp);
            return pfi_errorf(err, PFI_EIO, "%s: PLplot wrote an empty figure", path);
        }
    }
    return PFI_OK;
}

pfi_status pfi_plot_formats(const char *base, int width, int height, int nx, int ny,
                            const pfi_panel *panels, size_t npanels, int formats, pfi_error *err)
{
    pthread_mutex_lock(&plot_mu);
    pfi_status st = plot_locked(base, width, height, nx, ny, panels, npanels, formats, err);
    pthread_mutex_unlock(&plot_mu);
    return st;
}

pfi_status pfi_plot(const char *base, int width, int height, int nx, int ny,
                    const pfi_panel *panels, size_t npanels, pfi_error *err)
{
    return pfi_plot_formats(base, width, height, nx, ny, panels, npanels,
                            PFI_PLOT_PNG | PFI_PLOT_SVG, err);
}
