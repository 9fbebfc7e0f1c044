/* run_input.c — releasing a run's manifest and step log (run_input.h),
 * appending to a step log (steplog_push.h). */
#include "pfi/run_input.h"

#include <stdlib.h>
#include <string.h>

#include "steplog_push.h"
#include "vec.h"

void pfi_manifest_dispose(pfi_manifest *m)
{
    free(m->group);
    free(m->gpu_model);
    free(m->arch);
    free(m->task);
    free(m->model);
    free(m->split);
    for (size_t i = 0; i < m->nhosts; i++) free(m->hosts[i]);
    free(m->hosts);
    for (size_t i = 0; i < m->nmeta; i++) {
        free(m->meta[i].key);
        free(m->meta[i].value);
    }
    free(m->meta);
    for (size_t i = 0; i < m->ntel; i++) {
        free(m->tel[i].path);
        free(m->tel[i].host);
    }
    free(m->tel);
    free(m->steplog);
    memset(m, 0, sizeof *m);
}

const char *pfi_tel_format_name(pfi_tel_format f)
{
    switch (f) {
    case PFI_TEL_PROMETHEUS: return "prometheus";
    case PFI_TEL_QUERY_RANGE: return "query_range";
    case PFI_TEL_NVSMI: return "nvidia-smi";
    }
    return "?";
}

void pfi_steplog_dispose(pfi_steplog *s)
{
    free(s->t_s);
    free(s->tokens_per_s);
    free(s->mfu);
    free(s->tflops);
    free(s->tokens);
    free(s->step);
    memset(s, 0, sizeof *s);
}

pfi_status pfi_steplog_push(pfi_steplog *s, double t_s, double tokens_per_s, double mfu,
                            double tflops, double tokens, double step, pfi_error *err)
{
    if (s->n == s->cap) { /* six parallel arrays: one capacity */
        size_t nc = 0;
        if (pfi_vec_next_cap(s->cap, s->n + 1, sizeof(double), &nc, NULL) ||
            PFI_VEC_RESIZE(s->t_s, nc, NULL) || PFI_VEC_RESIZE(s->tokens_per_s, nc, NULL) ||
            PFI_VEC_RESIZE(s->mfu, nc, NULL) || PFI_VEC_RESIZE(s->tflops, nc, NULL) ||
            PFI_VEC_RESIZE(s->tokens, nc, NULL) || PFI_VEC_RESIZE(s->step, nc, NULL))
            return pfi_errorf(err, PFI_ENOMEM, "out of memory");
        s->cap = nc;
    }
    s->t_s[s->n] = t_s;
    s->tokens_per_s[s->n] = tokens_per_s;
    s->mfu[s->n] = mfu;
    s->tflops[s->n] = tflops;
    s->tokens[s->n] = tokens;
    s->step[s->n] = step;
    s->n++;
    return PFI_OK;
}
