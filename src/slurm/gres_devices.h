/* gres_devices.h — Slurm's GPU index on a node, turned into the GPU's
 * device minor number (docs/slurm.md, "GPU numbering"). Slurm numbers a
 * node's GPUs by their position in its GRES device list: the gres.conf
 * records of Name=gpu with File= for this node, in the file's order, each
 * File= expanded (/dev/nvidia[0-3] is four devices). The SPANK plugin reads
 * SLURM_JOB_GPUS as such positions; this turns each into the device file
 * and its minor number (stat: st_rdev), which the agent matches against
 * nvmlDeviceGetMinorNumber. Pure apart from reading the file and stat. */
#ifndef PFI_GRES_DEVICES_H
#define PFI_GRES_DEVICES_H

#include <stddef.h>

#define GRES_DEVICES_MAX 64

typedef struct gres_devices {
    char path[GRES_DEVICES_MAX][256]; /* Slurm's GPU index -> device file */
    size_t n;
    int auto_detect; /* AutoDetect=nvml (or rsmi ...) is set for this node */
} gres_devices;

/* The GPU device files of node `host` in Slurm's order, from gres.conf at
 * `path`. 0 on success (n may be 0: no File= records, e.g. AutoDetect);
 * -1 when the file cannot be read or a record cannot be parsed (why: one
 * line naming the file, line and field). */
int gres_devices_load(const char *path, const char *host, gres_devices *d, char *why, size_t why_n);

/* Device file p's minor number, or -1 (why says which: not there, not a
 * character device). */
int gres_device_minor(const char *p, char *why, size_t why_n);

#endif
