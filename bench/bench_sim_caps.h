/* bench_sim_caps.h — every simulated GPU's cap, as the sim backend keeps
 * it in its hardware state file (sim:...,state=DIR/hwI.json: rewritten,
 * atomically, inside each cap write, before the agent answers the
 * controller): what the OpenADR and VTN-page benchmarks time a cap by. */
#ifndef PFI_BENCH_SIM_CAPS_H
#define PFI_BENCH_SIM_CAPS_H

#include <jansson.h>
#include <stdio.h>

/* caps[i * gpus + g]: agent i's GPU g, from dir/hwI.json for nag agents;
   0 when a file cannot be read or lists another number of GPUs */
static inline int bench_read_sim_caps(const char *dir, int nag, int gpus, double *caps)
{
    for (int i = 0; i < nag; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/hw%d.json", dir, i);
        json_t *h = json_load_file(path, 0, NULL);
        json_t *a = json_object_get(h, "caps_w");
        int ok = json_array_size(a) == (size_t)gpus;
        for (int g = 0; ok && g < gpus; g++)
            caps[i * gpus + g] = json_number_value(json_array_get(a, g));
        json_decref(h);
        if (!ok) return 0;
    }
    return 1;
}

#endif
