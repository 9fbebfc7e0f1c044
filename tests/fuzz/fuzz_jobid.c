/* fuzz_jobid.c — libFuzzer target: the text of /proc/PID/cgroup (a user can
 * shape their cgroup paths) and any label value. A job id read from a
 * cgroup is digits and a valid job id; an escaped label value has no raw
 * newline, no unescaped quote and no control byte, and is valid UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "job_id.h"
#include "pfi/prom.h"

/* 1 if s is valid UTF-8 (no control bytes below 0x20 or 0x7f) */
static int clean_utf8(const unsigned char *s)
{
    while (*s) {
        if (*s < 0x20 || *s == 0x7f) return 0;
        size_t n = *s < 0x80             ? 1
                   : (*s & 0xE0) == 0xC0 ? 2
                   : (*s & 0xF0) == 0xE0 ? 3
                   : (*s & 0xF8) == 0xF0 ? 4
                                         : 0;
        if (!n || (n > 1 && *s < 0xC2)) return 0;
        for (size_t k = 1; k < n; k++)
            if ((s[k] & 0xC0) != 0x80) return 0;
        s += n;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char id[64];
    long uid = 0;
    if (pfi_job_id_from_cgroup((const char *)data, size, id, sizeof id, &uid) == 0) {
        if (!pfi_job_id_valid(id) || strspn(id, "0123456789") != strlen(id) || uid < -1) abort();
    }
    char *v = malloc(size + 1), out[300];
    if (!v) return 0;
    memcpy(v, data, size);
    v[size] = '\0';
    pfi_prom_label(out, sizeof out, v);
    if (strlen(out) >= sizeof out || !clean_utf8((const unsigned char *)out)) abort();
    for (size_t i = 0; out[i]; i++) {
        if (out[i] == '\\') {
            if (out[i + 1] != '\\' && out[i + 1] != '"' && out[i + 1] != 'n') abort();
            i++;
        } else if (out[i] == '"') {
            abort();
        }
    }
    free(v);
    return 0;
}
