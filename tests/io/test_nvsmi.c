/* test_nvsmi.c — the nvidia-smi --query-gpu CSV reader on a fixture with
 * the headers nvidia-smi really prints (canonical names such as
 * "clocks.current.sm [MHz]", values with units): every column arrives as its
 * metric, aliases are accepted, and the preferred power column wins. */
#include "../testutil.h"

#include "telemetry.h"

typedef struct seen {
    size_t n[PFI_M_COUNT];
    double first[PFI_M_COUNT], last[PFI_M_COUNT];
} seen;

static pfi_status collect(void *ud, const pfi_sample *s, pfi_error *err)
{
    (void)err;
    seen *x = ud;
    if (x->n[s->metric]++ == 0) x->first[s->metric] = s->value;
    x->last[s->metric] = s->value;
    return PFI_OK;
}

static pfi_status read_text(const char *text, seen *x, pfi_error *err)
{
    memset(x, 0, sizeof *x);
    pfi_reader r;
    pfi_reader_init_mem(&r, text, strlen(text), "mem.csv", 0);
    pfi_status st = pfi_nvsmi_read(&r, "node-1", 0, collect, x, NULL, err);
    pfi_reader_close(&r);
    return st;
}

static void real_headers(void **s)
{
    (void)s;
    pfi_reader r;
    pfi_error err;
    assert_int_equal(pfi_reader_open(&r, PFI_SOURCE_DIR "/tests/data/nvsmi/query-gpu.csv", 0, &err),
                     PFI_OK);
    seen x;
    memset(&x, 0, sizeof x);
    assert_int_equal(pfi_nvsmi_read(&r, "node-1", 0, collect, &x, NULL, &err), PFI_OK);
    pfi_reader_close(&r);
    /* clocks.current.sm / clocks.current.memory arrive as the clock metrics */
    assert_int_equal(x.n[PFI_M_SM_CLOCK], 4);
    assert_near(x.first[PFI_M_SM_CLOCK], 1410, 0);
    assert_near(x.last[PFI_M_SM_CLOCK], 1350, 0);
    assert_int_equal(x.n[PFI_M_MEM_CLOCK], 4);
    assert_near(x.last[PFI_M_MEM_CLOCK], 1593, 0);
    /* power.draw, not power.draw.instant (whose [N/A] would drop a sample) */
    assert_int_equal(x.n[PFI_M_POWER_USAGE], 4);
    assert_near(x.first[PFI_M_POWER_USAGE], 187.80, 1e-9);
    assert_near(x.last[PFI_M_POWER_USAGE], 409.55, 1e-9);
    /* both limits, the framebuffer, utilizations and temperature */
    assert_int_equal(x.n[PFI_M_ENFORCED_LIMIT], 4);
    assert_int_equal(x.n[PFI_M_MGMT_LIMIT], 4);
    assert_near(x.first[PFI_M_MGMT_LIMIT], 450, 0);
    assert_near(x.last[PFI_M_FB_USED], 40108, 0);
    assert_near(x.last[PFI_M_GPU_UTIL], 97, 0);
    assert_near(x.last[PFI_M_MEM_COPY_UTIL], 73, 0);
    assert_near(x.last[PFI_M_GPU_TEMP], 64, 0);
}

static void aliases(void **s)
{
    (void)s;
    seen x;
    pfi_error err;
    /* the documented short aliases, with and without units, nounits values */
    assert_int_equal(read_text("timestamp, index, clocks.sm [MHz], clocks.mem, "
                               "power.draw.instant [W]\n"
                               "2026/09/11 04:19:41.982, 0, 1980, 2619, 612.5\n",
                               &x, &err),
                     PFI_OK);
    assert_near(x.first[PFI_M_SM_CLOCK], 1980, 0);
    assert_near(x.first[PFI_M_MEM_CLOCK], 2619, 0);
    assert_near(x.first[PFI_M_POWER_USAGE], 612.5, 0); /* the only power column */
    /* a bad value names the column as the file spells it */
    assert_int_equal(read_text("timestamp, index, clocks.current.sm [MHz]\n"
                               "2026/09/11 04:19:41.982, 0, fast MHz\n",
                               &x, &err),
                     PFI_EPARSE);
    assert_non_null(strstr(err.msg, "mem.csv:2: column 'clocks.current.sm'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(real_headers),
        cmocka_unit_test(aliases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
