/* test_gpu_map.c — Slurm's GPU index -> the GPU (src/slurm/gpu_map.c),
 * for each configuration sites run (issue 40). Each case writes a gres.conf
 * and a fake /proc/driver/nvidia/gpus tree whose minor order differs from
 * its bus order, and checks the device minors in Slurm's order; each cites
 * the Slurm source it follows (Slurm master as read for issue 40):
 *  - AutoDetect=off: lines starting with Name= before lines starting with
 *    NodeName= (src/interfaces/gres.c:2938-2950 reads the two arrays in
 *    that order), File=/Files= in place, one GPU per MultipleFiles=;
 *  - AutoDetect=nvml: PCI bus-id order (src/plugins/gres/gpu/gres_gpu.c,
 *    sort by links; commit f589b480d8);
 *  - AutoDetect=nvidia (Slurm 24.11-25.05): string order of /dev/nvidiaN.
 * Device files in the off cases are the kernel's own character devices
 * (/dev/null 1:3, /dev/zero 1:5, /dev/full 1:7, /dev/urandom 1:9), so that
 * no root and no mknod are needed; the driver tree gives those minors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu_map.h"

static char g_dir[64], g_conf[128], g_drv[128];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/pfi-gpumap-XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    snprintf(g_conf, sizeof g_conf, "%s/gres.conf", g_dir);
    snprintf(g_drv, sizeof g_drv, "%s/gpus", g_dir);
    return mkdir(g_drv, 0755);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_conf(const char *text)
{
    FILE *f = fopen(g_conf, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* a GPU of the fake driver tree: BUS/information with its minor */
static void driver_gpu(const char *bus, int minor)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_drv, bus);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/%s/information", g_drv, bus);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    /* the driver's own layout (open-gpu-kernel-modules, nv-procfs.c) */
    fprintf(f,
            "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t "
            "GPU-00000000-0000-0000-0000-00000000000%d\nVideo BIOS: \t 96.00.00.00.00\n"
            "Bus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\n"
            "Bus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n",
            minor, bus, minor);
    fclose(f);
}

/* the four GPUs of the node: bus order 1a, 3b, 86, 0001:05 holds minors 7, 3, 9, 5 */
static void four_gpus(void)
{
    driver_gpu("0000:3b:00.0", 3);
    driver_gpu("0001:05:00.0", 5);
    driver_gpu("0000:86:00.0", 9);
    driver_gpu("0000:1a:00.0", 7);
}

static int load(const char *node, gpu_map_mode force, long version, gpu_map *m, char *why, size_t n)
{
    gpu_map_opts o = {g_conf, node, g_drv, force, version};
    return gpu_map_load(&o, m, why, n);
}

static void expect_minors(const gpu_map *m, const int *want, size_t n)
{
    assert_int_equal(m->n, n);
    for (size_t i = 0; i < n; i++) assert_int_equal(m->dev[i].minor, want[i]);
}

/* off: Name= lines come before NodeName= lines whatever the file's order
 * (gres.c:2938-2950); today's line order would give 5, 3 */
static void off_name_before_nodename(void **state)
{
    (void)state;
    char why[1024];
    gpu_map m;
    four_gpus();
    write_conf("NodeName=n01 Name=gpu File=/dev/zero\n"
               "Name=gpu File=/dev/null  # every node\n"
               "NodeName=other Name=gpu File=/dev/full\n");
    assert_int_equal(load("n01.cluster.example", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), 0);
    expect_minors(&m, (int[]){3, 5}, 2);
    assert_int_equal(m.mode, GPU_MAP_OFF);
    assert_string_equal(m.dev[0].path, "/dev/null");
    assert_string_equal(m.dev[1].bus_id, "0001:05:00.0"); /* minor 5's, from the driver tree */
}

/* off: Files= is File='s synonym, expanded in place; one GPU per MultipleFiles= */
static void off_files_and_multiple(void **state)
{
    (void)state;
    char why[1024];
    gpu_map m;
    four_gpus();
    write_conf("name=GPU files=/dev/full,/dev/null\n"
               "Name=gpu MultipleFiles=/dev/urandom,/dev/null\n"
               "Name=gpu Type=h100 File=/dev/zero Cores=0-15 Links=-1,0,0 Flags=nvidia_gpu_env\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), 0);
    expect_minors(&m, (int[]){7, 3, 9, 5}, 4);
}

/* a node-specific AutoDetect wins over the global one */
static void node_autodetect_over_global(void **state)
{
    (void)state;
    char why[1024];
    gpu_map m;
    four_gpus();
    write_conf("AutoDetect=nvml\n"
               "NodeName=n01 AutoDetect=off\n"
               "Name=gpu File=/dev/zero,/dev/null\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), 0);
    assert_int_equal(m.mode, GPU_MAP_OFF);
    expect_minors(&m, (int[]){5, 3}, 2);
    /* another node: the global nvml, bus order, only the configured GPUs */
    assert_int_equal(load("n02", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), 0);
    assert_int_equal(m.mode, GPU_MAP_NVML);
    expect_minors(&m, (int[]){3, 5}, 2); /* 0000:3b before 0001:05 */
    /* the plugstack option forces a mode */
    assert_int_equal(load("n01", GPU_MAP_NVML, 0, &m, why, sizeof why), 0);
    expect_minors(&m, (int[]){3, 5}, 2);
}

/* nvml: every GPU the driver lists, in PCI bus-id order as hex numbers
 * (gres_gpu.c; f589b480d8), whatever the minors' order */
static void nvml_bus_order(void **state)
{
    (void)state;
    char why[1024];
    gpu_map m;
    four_gpus();
    write_conf("AutoDetect=nvml\nName=gpu Type=h100 Count=4\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), 0);
    expect_minors(&m, (int[]){7, 3, 9, 5}, 4);
    assert_string_equal(m.dev[0].bus_id, "0000:1a:00.0");
    assert_string_equal(m.dev[3].bus_id, "0001:05:00.0");
    assert_string_equal(m.dev[2].path, "/dev/nvidia9");
    /* "full" is nvml's with more detection: the same order */
    write_conf("AutoDetect=full\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), 0);
    expect_minors(&m, (int[]){7, 3, 9, 5}, 4);
}

/* nvidia (24.11-25.05): /dev/nvidiaN in string order, nvidia10 before nvidia2 */
static void nvidia_string_order(void **state)
{
    (void)state;
    char why[1024];
    gpu_map m;
    driver_gpu("0000:01:00.0", 2);
    driver_gpu("0000:02:00.0", 10);
    driver_gpu("0000:03:00.0", 1);
    write_conf("AutoDetect=nvidia\n");
    long v24_11 = (24L << 16) | (11 << 8), v25_05_2 = (25L << 16) | (5 << 8) | 2;
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, v24_11, &m, why, sizeof why), 0);
    expect_minors(&m, (int[]){1, 10, 2}, 3);
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, v25_05_2, &m, why, sizeof why), 0);
    expect_minors(&m, (int[]){1, 10, 2}, 3);
    /* any other version, or none: an error, never a guess */
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, (23L << 16) | (2 << 8), &m, why, sizeof why),
                     -1);
    assert_non_null(strstr(why, "Slurm 23.02"));
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, (25L << 16) | (11 << 8), &m, why, sizeof why),
                     -1);
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, "not given"));
}

/* what cannot be known for sure is an error naming file, line and field */
static void errors_not_guesses(void **state)
{
    (void)state;
    char why[1024];
    gpu_map m;
    four_gpus();
    write_conf("Name=gpu File=/dev/null\nName=gpu File=/dev/zero Foo=1\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, "gres.conf:2: field 'Foo'"));
    /* ... unless the record is another node's, or another GRES' */
    write_conf("Name=gpu File=/dev/null\nNodeName=n9 Name=gpu File=/dev/zero Foo=1\n"
               "Name=nic File=/dev/zero Whatever=1\nName=shard Count=8\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), 0);
    expect_minors(&m, (int[]){3}, 1);
    write_conf("Name=gpu File=/dev/null\nInclude /etc/slurm/gres.d/n01.conf\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, ":2: field 'Include'"));
    write_conf("AutoDetect=rsmi\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, ":1: field 'AutoDetect'"));
    /* off with a record that names no device: Slurm names none */
    write_conf("Name=gpu Count=2\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, ":1: field 'File'"));
    /* no records for this node */
    write_conf("NodeName=n9 Name=gpu File=/dev/null\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    /* a device that is not a character device; a malformed File= */
    write_conf("Name=gpu File=/tmp\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, "not a character device"));
    /* slurmd 22.05 refuses it too: "MultipleFiles does not contain multiple files" */
    write_conf("Name=gpu MultipleFiles=/dev/null\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, ":1: field 'MultipleFiles': one file"));
    write_conf("Name=gpu File=/dev/nvidia[3-1]\n");
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, ":1: field 'File'"));
    /* nvml without the driver's directory */
    write_conf("AutoDetect=nvml\n");
    gpu_map_opts o = {g_conf, "n01", "/nonexistent/gpus", GPU_MAP_FROM_CONF, 0};
    assert_int_equal(gpu_map_load(&o, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, "/nonexistent/gpus"));
    /* a driver entry that is not a bus id, or names no minor */
    driver_gpu("junk", 1);
    assert_int_equal(load("n01", GPU_MAP_FROM_CONF, 0, &m, why, sizeof why), -1);
    assert_non_null(strstr(why, "not a PCI bus id"));
}

static void lists_and_versions(void **state)
{
    (void)state;
    long idx[8], v;
    size_t n;
    assert_int_equal(gpu_map_index_list("0,2-4,7", idx, 8, &n), 0);
    assert_int_equal(n, 5);
    assert_int_equal(idx[1], 2);
    assert_int_equal(idx[4], 7);
    assert_int_equal(gpu_map_index_list("0,,1", idx, 8, &n), -1);
    assert_int_equal(gpu_map_index_list("3-1", idx, 8, &n), -1);
    assert_int_equal(gpu_map_index_list("0-8", idx, 8, &n), -1);
    assert_int_equal(gpu_map_index_list("a", idx, 8, &n), -1);
    assert_int_equal(gpu_map_index_list("1,", idx, 8, &n), -1);
    assert_int_equal(gpu_map_version_parse("24.11", &v), 0);
    assert_int_equal(v, (24L << 16) | (11 << 8));
    assert_int_equal(gpu_map_version_parse("25.05.3", &v), 0);
    assert_int_equal(v, (25L << 16) | (5 << 8) | 3);
    assert_int_equal(gpu_map_version_parse("25", &v), -1);
    assert_int_equal(gpu_map_version_parse("25.05.x", &v), -1);
    gpu_map_mode mode;
    assert_int_equal(gpu_map_mode_parse("NVML", &mode), 0);
    assert_int_equal(mode, GPU_MAP_NVML);
    assert_int_equal(gpu_map_mode_parse("rsmi", &mode), -1);
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test_setup_teardown(off_name_before_nodename, setup, teardown),
        cmocka_unit_test_setup_teardown(off_files_and_multiple, setup, teardown),
        cmocka_unit_test_setup_teardown(node_autodetect_over_global, setup, teardown),
        cmocka_unit_test_setup_teardown(nvml_bus_order, setup, teardown),
        cmocka_unit_test_setup_teardown(nvidia_string_order, setup, teardown),
        cmocka_unit_test_setup_teardown(errors_not_guesses, setup, teardown),
        cmocka_unit_test(lists_and_versions),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
