/* plot.h — figures for the report, drawn with PLplot's cairo drivers: each
 * figure is written as BASE.png and BASE.svg (or one of them). A figure is a grid of panels;
 * a panel has axes (labels with units, optional categories on x, an
 * optional y = x diagonal) and series (lines and/or points, a legend entry
 * each). Axis ranges default to the data's. */
#ifndef PFI_REPORT_PLOT_H
#define PFI_REPORT_PLOT_H

#include <stddef.h>

#include "pfi/status.h"

enum { PFI_PLOT_LINE = 1, PFI_PLOT_POINTS = 2 };

typedef struct pfi_series {
    const double *x, *y;
    size_t n;
    const char *label; /* legend entry, or NULL */
    int color;         /* 0..11 */
    int style;         /* PFI_PLOT_LINE | PFI_PLOT_POINTS */
} pfi_series;

typedef struct pfi_panel {
    const char *title, *xlabel, *ylabel;
    double xmin, xmax, ymin, ymax; /* NaN: from the data */
    int legend;               /* 0 none, 1 upper left, 2 upper right, 3 lower right, 4 lower left */
    const char *const *xcats; /* category labels at x = 0..ncats-1 */
    size_t ncats;
    int diagonal; /* draw y = x */
    const pfi_series *series;
    size_t nseries;
    const char *note; /* a line of text in the panel (e.g. rho = 0.59) */
} pfi_panel;

/* nx x ny panels on a width x height pixel page; writes base.png and base.svg */
pfi_status pfi_plot(const char *base, int width, int height, int nx, int ny,
                    const pfi_panel *panels, size_t npanels, pfi_error *err);
/* the same, only the formats asked for (PFI_PLOT_PNG | PFI_PLOT_SVG). Both
 * are thread-safe: one figure is drawn at a time in the process (PLplot's
 * state is global), the others wait. */
enum { PFI_PLOT_PNG = 1, PFI_PLOT_SVG = 2 };
pfi_status pfi_plot_formats(const char *base, int width, int height, int nx, int ny,
                            const pfi_panel *panels, size_t npanels, int formats, pfi_error *err);

#endif
