/* gpu_map.h — Slurm's GPU index on a node, turned into the GPU itself (its
 * device minor number and PCI bus id), the way Slurm numbers GPUs in each
 * configuration sites run (issue 40; docs/slurm.md, "GPU numbering").
 *
 * Slurm's SLURM_JOB_GPUS holds positions in its own device list of the
 * node. That list's order depends on the node's effective AutoDetect:
 *  - off (the default): gres.conf's gpu records, those whose line starts
 *    with Name= first, then those starting with NodeName=, each in file
 *    order (Slurm reads the two kinds of line as two arrays and takes the
 *    Name array first: src/interfaces/gres.c, lines 2938-2950 at Slurm
 *    master as read for issue 40); File= and its synonym Files= expanded in
 *    place; a MultipleFiles= record is one GPU (its first file names it);
 *  - nvml (and full): the node's GPUs sorted by PCI bus id, domain, bus,
 *    device, function as hex numbers (src/plugins/gres/gpu/gres_gpu.c sorts
 *    by links, which carry -1 at the GPU's own NVML index, and NVML's index
 *    is PCI order; Slurm commit f589b480d8), whatever the File= order;
 *  - nvidia (Slurm 24.11.0 to 25.05.x): the device files /dev/nvidiaN in
 *    string order (nvidia10 before nvidia2); other versions: an error.
 * A node-specific AutoDetect (on a NodeName= line naming this node) wins
 * over a global one; a plugstack option can force the mode.
 *
 * The GPUs of the autodetected modes come from the driver's directory
 * (/proc/driver/nvidia/gpus/BUS_ID/information: "Device Minor:"); where
 * gres.conf also lists File= devices, only those count. Never a guess: a
 * key this parser does not know on a gpu record for this node, an Include,
 * an AutoDetect it cannot follow, a missing driver directory, or an index
 * past the list is an error (one line, naming file, line and field), and
 * the job gets no GPUs.
 *
 * libc only: compiled into the SPANK plugin (inside slurmd, which must not
 * load libpfi) and into the pfi command (`pfi slurm-map`), so that the
 * operator's diagnostic runs the plugin's own parser. */
#ifndef PFI_GPU_MAP_H
#define PFI_GPU_MAP_H

#include <stddef.h>

#define GPU_MAP_MAX 64

typedef enum gpu_map_mode {
    GPU_MAP_FROM_CONF = -1, /* the effective AutoDetect of gres.conf */
    GPU_MAP_OFF = 0,
    GPU_MAP_NVML,
    GPU_MAP_NVIDIA
} gpu_map_mode;

typedef struct gpu_map_dev {
    char path[256];  /* the device file ("/dev/nvidia3"); "" where Slurm names none */
    int minor;       /* its minor number (nvmlDeviceGetMinorNumber) */
    char bus_id[64]; /* as the driver directory names it ("0000:3b:00.0"); "" unknown */
} gpu_map_dev;

typedef struct gpu_map {
    gpu_map_dev dev[GPU_MAP_MAX]; /* Slurm's GPU index -> the GPU */
    size_t n;
    gpu_map_mode mode; /* the mode used (effective AutoDetect or forced) */
} gpu_map;

typedef struct gpu_map_opts {
    const char *gres_conf;  /* gres.conf's path */
    const char *node;       /* this node's name (a full name matches its short form too) */
    const char *driver_dir; /* NULL: /proc/driver/nvidia/gpus */
    gpu_map_mode force;     /* GPU_MAP_FROM_CONF, or a mode that overrides gres.conf */
    long slurm_version;     /* SLURM_VERSION_NUMBER form (major<<16 | minor<<8 | micro);
                               0: unknown (an error where the order depends on it) */
} gpu_map_opts;

#define GPU_MAP_DRIVER_DIR "/proc/driver/nvidia/gpus"

/* Slurm's device list of the node, in Slurm's order. 0 on success (n > 0);
 * -1 with one line in why (naming file, line and field where it applies). */
int gpu_map_load(const gpu_map_opts *o, gpu_map *m, char *why, size_t why_n);

/* "off", "nvml", "nvidia" (case-insensitive) -> mode; -1 otherwise */
int gpu_map_mode_parse(const char *s, gpu_map_mode *mode);
const char *gpu_map_mode_name(gpu_map_mode mode);

/* "24.11" or "24.11.3" -> SLURM_VERSION_NUMBER form; -1 when malformed */
int gpu_map_version_parse(const char *s, long *version);

/* SLURM_JOB_GPUS ("0,2", "0-3,7") -> indexes; -1 when malformed or more than max */
int gpu_map_index_list(const char *s, long *idx, size_t max, size_t *n);

#endif
