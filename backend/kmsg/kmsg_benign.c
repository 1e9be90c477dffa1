/* Driver lines that use failure words but are printed on healthy systems: the last layer
 * (kmsg_vocab) leaves them alone. Each entry cites a public log where the line appears on a
 * system that works, or where the driver's own people call it harmless. */
#include "backend/kmsg/kmsg_internal.h"

#include <stddef.h>
#include <string.h>

struct kmsg_benign {
    const char *tmpl;   /* kmsg_match template: literal text, %{*} for what varies */
    const char *source; /* where the line is seen on a healthy system */
};

static const struct kmsg_benign kmsg_benign_lines[] = {
    /* the kernel's module-signing notice, for any module built outside the kernel tree */
    {"module verification failed: signature and/or required key missing",
     "https://github.com/NVIDIA/k8s-device-plugin/issues/480"},
    /* DRM's fbdev helper on a GPU with no display attached (compute and mining boxes) */
    {"[drm] Cannot find any crtc or sizes", "https://github.com/enerc/VulkanXMRMiner/issues/6"},
    /* the i2c driver of a Turing card's USB-C controller (not the GPU) when a DDC tool probes */
    {"nvidia-gpu %{*}: i2c timeout error",
     "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/361"},
    /* AMD APUs whose firmware lacks the secure-display trusted application: PSP answers the
     * TA load and query with these statuses, and amdgpu says so at every boot */
    {"Secure display: Generic Failure", "https://github.com/kachick/dotfiles/issues/970"},
    {"SECUREDISPLAY: query securedisplay TA failed",
     "https://github.com/kachick/dotfiles/issues/970"},
    {"psp gfx command LOAD_TA(0x1) failed and response status is (0x7)",
     "https://github.com/freebsd/drm-kmod/issues/417"},
    {"psp gfx command INVOKE_CMD(0x3) failed and response status is (0x4)",
     "https://github.com/freebsd/drm-kmod/issues/417"},
    /* RM's chipset_pcie.c objClInitPcieChipset(): the setup function for a known host bridge
     * returned an error; RM prints it at LEVEL_ERROR and goes on initialising the GPU */
    {"objClInitPcieChipset: *** Chipset Setup Function Error!",
     "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/421"},
    /* powerplay's smu_helper.c phm_get_sclk_for_voltage_evv(): a leakage voltage ID the table does
     * not list; smu7_get_evv_voltages() skips that ID and goes on (it returns 0 always), and
     * current kernels print the line with pr_debug */
    {"Can't find requested voltage id in vdd_dep_on_sclk table",
     "https://github.com/ROCm/amdgpu/issues/24"},
};

bool kmsg_benign_match(const char *text, size_t len) {
    for (size_t i = 0; i < sizeof(kmsg_benign_lines) / sizeof(kmsg_benign_lines[0]); i++) {
        struct kmsg_event scratch; /* the fields a template captures: not kept */
        long ret = 0;
        memset(&scratch, 0, sizeof(scratch));
        if (kmsg_match(kmsg_benign_lines[i].tmpl, text, len, &scratch, &ret))
            return true;
    }
    return false;
}
