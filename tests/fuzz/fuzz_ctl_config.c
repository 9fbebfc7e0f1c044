/* fuzz_ctl_config.c — libFuzzer target: pfi-controller's configuration file
 * (src/daemon/controller/ctl_config.c, compiled in; tests/fuzz/CMakeLists.txt).
 * Any input is refused with a one-line error naming the file, or accepted
 * within the documented bounds (docs/controller.md): 1 or more agents each
 * with a url and a token file, finite periods and a lease of at least two
 * periods, tiers -1..3, cuts 0..90 %. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static ctl_cfg cfg;

static void finite_in(double v, double lo, double hi)
{
    if (!isfinite(v) || v < lo || v > hi) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_error e;
    e.msg[0] = '\0';
    if (ctl_config_parse((const char *)data, size, "c.json", &cfg, &e)) {
        if (strncmp(e.msg, "c.json", 6) || strchr(e.msg, '\n') || cfg.tiers) abort();
        return 0;
    }
    if (cfg.nagents < 1 || !cfg.agents) abort();
    for (size_t i = 0; i < cfg.nagents; i++)
        if (strlen(cfg.agents[i].url) >= sizeof cfg.agents[i].url || !cfg.agents[i].name[0])
            abort();
    finite_in(cfg.period_s, 0.05, 3600);
    finite_in(cfg.lease_s, 2 * cfg.period_s, 86400);
    finite_in(cfg.tolerance_pct, 0, 50);
    finite_in(cfg.non_gpu_offset_kw, 0, 1e7);
    finite_in(cfg.ramp_s, 0, 86400);
    finite_in(cfg.ramp_down_s, 0, 86400);
    finite_in(cfg.baseline_window_s, 0.1, 86400);
    finite_in(cfg.openadr_poll_s, 1, 86400);
    if (cfg.openadr_version != PFI_OADR_V3_1 && cfg.openadr_version != PFI_OADR_V3_0_1) abort();
    if (cfg.openadr_nresources > CTL_OADR_MAX_RESOURCES) abort();
    for (size_t i = 0; i < cfg.openadr_nresources; i++)
        if (!cfg.openadr_resources[i][0]) abort();
    for (int i = 0; i < 4; i++) finite_in(cfg.level_cut_pct[i], 0, 90);
    if (cfg.default_tier < -1 || cfg.default_tier > 3) abort();
    if (cfg.tiers && !json_is_object(cfg.tiers)) abort();
    ctl_config_free(&cfg);
    return 0;
}
