/* ctl_conf.c — the pfi CLI's controller configuration and duration
 * arguments (ctl_conf.h). */
#include "ctl_conf.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "grid_event.h"
#include "json_obj.h"

pfi_status pfi_ctl_conf_read(const char *path, pfi_ctl_conf *c, pfi_error *err)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    if (!f)
        return pfi_errorf(err, errno == ENOENT ? PFI_ENOTFOUND : PFI_EIO, "%s: %s", path,
                          strerror(errno));
    json_error_t je;
    json_t *o = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!o)
        return pfi_errorf(err, PFI_EPARSE, "%s: line %d column %d: %s", path, je.line, je.column,
                          je.text);
    const pfi_jkey keys[] = {
        {"controller", PFI_J_STRING, PFI_J_NONEMPTY, c->controller, .size = sizeof c->controller},
        {"token_file", PFI_J_STRING, PFI_J_NONEMPTY, c->token_file, .size = sizeof c->token_file},
        {"ca_file", PFI_J_STRING, PFI_J_NONEMPTY, c->ca_file, .size = sizeof c->ca_file},
    };
    pfi_jopts opts = {.prefix = path,
                      .quoted = 1,
                      .key_max = 64,
                      .unknown_text = "unknown key (expected controller, token_file, ca_file)"};
    pfi_status st = json_is_object(o)
                        ? PFI_JSON_OBJ_READ(o, keys, &opts, err)
                        : pfi_errorf(err, PFI_EINVAL, "%s: expected a JSON object", path);
    json_decref(o);
    if (st && err)
        for (char *p = err->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return st;
}

int pfi_duration_arg(const char *s, double *seconds)
{
    if (*s == 'P') return pfi_iso8601_duration(s, seconds);
    static const char units[] = "dhms";
    static const double mult[] = {86400, 3600, 60, 1};
    double total = 0;
    int next = 0; /* the first unit still allowed: d, h, m, s in order */
    if (!*s) return -1;
    while (*s) {
        double v = 0;
        const char *d = s;
        while (isdigit((unsigned char)*s) && s - d < 9) v = v * 10 + (*s++ - '0');
        if (s == d || isdigit((unsigned char)*s)) return -1; /* none, or over 9 digits */
        const char *u = *s ? strchr(units + next, *s) : NULL;
        if (!u) return -1;
        total += v * mult[u - units];
        next = (int)(u - units) + 1;
        s++;
    }
    *seconds = total;
    return 0;
}
