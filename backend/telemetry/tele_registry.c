/* The provider registry. Order is merge priority: the first provider to set a field wins, so
 * the kernel's own counters (sysfs, libdrm) come before the libraries that re-read them, and
 * fdinfo's process list (every DRM client, with GTT and busy time) before rocm-smi's
 * compute-only one. */
#include "backend/telemetry/tele_prov.h"

const struct tele_prov_ops *const tele_prov_table[] = {
    &tele_prov_sysfs_ops,
#ifdef RS_HAVE_LIBDRM
    &tele_prov_libdrm_ops,
#endif
    &tele_prov_debugfs_ops, /* root only */
    &tele_prov_fdinfo_ops,  /* before rocm-smi: its process list is the fuller one */
#ifdef RS_HAVE_ROCM_SMI
    &tele_prov_rsmi_ops,
#endif
#ifdef RS_HAVE_NVML
    &tele_prov_nvml_ops,
#endif
};

const size_t tele_prov_count = sizeof(tele_prov_table) / sizeof(tele_prov_table[0]);

/* Providers this build left out, so a machine that has the GPU but not the build says why. */
const struct tele_prov_absent tele_prov_absent[] = {
#ifndef RS_HAVE_LIBDRM
    {"libdrm", "libdrm-dev at build time (RINGSIDE_LIBDRM)"},
#endif
#ifndef RS_HAVE_ROCM_SMI
    {"rocm-smi", "librocm-smi-dev at build time (RINGSIDE_ROCM_SMI)"},
#endif
#ifndef RS_HAVE_NVML
    {"nvml", "RINGSIDE_NVML=ON at build time"},
#endif
    {NULL, NULL},
};
