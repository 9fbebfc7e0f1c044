/* json_obj.h — reading a JSON object through a table of its keys, for
 * every parser of JSON objects (run.json, the caps request, grid events,
 * the controller's configuration): one call checks each key's type and
 * range, stores it, reports unknown keys (as an error or a warning) and
 * missing required keys, each as one line naming the key:
 *
 *     static const pfi_jkey keys[] = {
 *         {"lease_s", PFI_J_NUMBER, PFI_J_REQUIRED, &r->lease_s, .lo = 1, .hi = 86400,
 *          .expect = "expected a number of seconds in 1..86400"},
 *         {"controller", PFI_J_ANY, PFI_J_REQUIRED, r->controller, sizeof r->controller, .fn =
 * read_name},
 *     };
 *     pfi_jopts o = {.unknown_text = "unknown field (expected lease_s, controller)"};
 *     st = PFI_JSON_OBJ_READ(obj, keys, &o, err);
 *
 * Messages are "NAME: TEXT". NAME is the key ("KEY"), under a prefix
 * ("PREFIX.KEY", e.g. "gpus[2].cap_w"), or in run.json's style
 * ("PREFIX: key 'KEY'"). TEXT is "missing", the entry's expect text (or a
 * default per type) for a wrong type or range, or the unknown-key text,
 * followed by "; did you mean 'KEY'?" when a key of the table is close
 * (pfi_opts_suggest, options.h: at most two edits, or a prefix of one).
 *
 * Order: by default the object's keys are read in the object's order (the
 * first bad key is the error), then the required keys that were absent, in
 * table order. With table_order, unknown keys are reported first (in the
 * object's order), then each entry is read in table order; an entry
 * without a key is then a check run at its place (fn with v NULL). */
#ifndef PFI_JSON_OBJ_H
#define PFI_JSON_OBJ_H

#include <jansson.h>
#include <stddef.h>

#include "pfi/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_jtype {
    PFI_J_ANY,     /* no check: fn reads the value */
    PFI_J_STRING,  /* into char[size]; size 0: a malloc'd copy into char ** */
    PFI_J_NUMBER,  /* integer or real in lo..hi, into double */
    PFI_J_INTEGER, /* integer in lo..hi, into long long (size 0) or int (size sizeof(int)) */
    PFI_J_BOOL,    /* true or false, into int (1 or 0) */
    PFI_J_OBJECT,  /* type check only: fn reads it */
    PFI_J_ARRAY    /* type check only: fn reads it */
} pfi_jtype;

enum {
    PFI_J_REQUIRED = 1u << 0,    /* absent: "NAME: missing" */
    PFI_J_NEEDED = 1u << 1,      /* absent: the wrong-type message */
    PFI_J_NULL_ABSENT = 1u << 2, /* null reads as absent */
    PFI_J_NONEMPTY = 1u << 3,    /* STRING, ARRAY: empty is wrong */
    PFI_J_LO_OPEN = 1u << 4,     /* NUMBER, INTEGER: lo itself is out of range */
    PFI_J_HI_OPEN = 1u << 5      /* NUMBER, INTEGER: hi itself is out of range */
};

typedef struct pfi_jkey pfi_jkey;
/* Reads v (after the type check; NULL for a check entry) as k says (its
 * dst, size, range); name is the key's name for messages (the prefix for a
 * check entry); ud is the options' ud. */
typedef pfi_status (*pfi_jfn)(const pfi_jkey *k, json_t *v, const char *name, void *ud,
                              pfi_error *err);

struct pfi_jkey {
    const char *key; /* NULL: a check (table_order only) */
    pfi_jtype type;
    unsigned flags;
    void *dst;
    size_t size;        /* STRING: bytes of dst (0: char ** copy); INTEGER: bytes of dst */
    double lo, hi;      /* NUMBER, INTEGER: the allowed range */
    const char *expect; /* wrong type or range: "NAME: EXPECT"; NULL: a default per type */
    pfi_status code;    /* status of that error; 0: PFI_EINVAL */
    pfi_jfn fn;         /* reads the value instead of storing it into dst */
    int *seen;          /* set to 1 when the key is present */
};

typedef enum pfi_junknown {
    PFI_J_UNKNOWN_ERROR = 0,
    PFI_J_UNKNOWN_WARN,
    PFI_J_UNKNOWN_IGNORE
} pfi_junknown;

typedef struct pfi_jopts {
    const char *prefix; /* names are PREFIX.KEY (NULL: KEY) */
    int quoted;         /* names are "PREFIX: key 'KEY'" */
    size_t key_max;     /* at most this many characters of a key in a name (0: all) */
    size_t name_max;    /* at most this many characters of a name (0: all) */
    int table_order;    /* read in table order (see above) */
    pfi_junknown unknown;
    const char *unknown_text; /* ERROR: "NAME: TEXT" (NULL: "unknown key");
                                 WARN: "PREFIX: unknown key 'KEY' TEXT" through log */
    pfi_log *log;
    void *ud; /* passed to every fn */
} pfi_jopts;

/* Read the object o (which must be a JSON object) through keys. */
pfi_status pfi_json_obj_read(json_t *o, const pfi_jkey *keys, size_t nkeys, const pfi_jopts *opts,
                             pfi_error *err);
#define PFI_JSON_OBJ_READ(o, keys, opts, err)                                                      \
    pfi_json_obj_read((o), (keys), sizeof(keys) / sizeof *(keys), (opts), (err))

/* One value (an array element) checked and stored as k says, with name
 * for messages (k->key unused). */
pfi_status pfi_json_value_read(json_t *v, const pfi_jkey *k, const char *name, void *ud,
                               pfi_error *err);

/* The name of key under opts, as messages use it, into buf. */
const char *pfi_json_obj_name(const pfi_jopts *opts, const char *key, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
