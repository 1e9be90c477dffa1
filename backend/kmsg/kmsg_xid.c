/* What NVIDIA Xid numbers mean (short forms of NVIDIA's Xid catalogue) and how severe ringside
 * rates each one. */
#include "backend/core/ev.h"
#include "backend/kmsg/kmsg.h"

#include <stddef.h>

struct kmsg_xid_entry {
    unsigned short xid;
    unsigned char severity; /* enum ev_severity */
    const char *meaning;
};

/* Sorted by Xid. Meanings follow docs.nvidia.com/deploy/xid-errors (the current catalogue, and
 * the older listing for numbers the current one marks unused on Ampere and newer). */
static const struct kmsg_xid_entry kmsg_xid_table[] = {
    {8, SEV_WARNING, "GPU stopped processing"},
    {11, SEV_WARNING, "Invalid or corrupted push buffer stream"},
    {13, SEV_WARNING, "Graphics Engine Exception"},
    {31, SEV_WARNING, "GPU memory page fault"},
    {32, SEV_ERROR, "Invalid or corrupted push buffer stream"},
    {38, SEV_ERROR, "Driver firmware error"},
    {39, SEV_WARNING, "Copy Engine Exception"},
    {40, SEV_WARNING, "Copy Engine Exception"},
    {41, SEV_WARNING, "Copy Engine Exception"},
    {43, SEV_WARNING, "GPU stopped processing"},
    {44, SEV_WARNING, "Graphics Engine fault during context switch"},
    {45, SEV_WARNING, "Preemptive cleanup, due to previous errors"},
    {46, SEV_WARNING, "GPU stopped processing"},
    {48, SEV_ERROR, "Double Bit ECC Error"},
    {54, SEV_WARNING, "Auxiliary power is not connected to the GPU board"},
    {56, SEV_WARNING, "Display Engine error"},
    {57, SEV_WARNING, "Error programming video memory interface"},
    {58, SEV_WARNING, "Unstable video memory interface detected"},
    {59, SEV_WARNING, "Internal micro-controller error (older drivers)"},
    {60, SEV_WARNING, "Video processor exception"},
    {61, SEV_ERROR, "Internal micro-controller breakpoint/warning"},
    {62, SEV_ERROR, "Internal micro-controller halt"},
    {63, SEV_INFO, "ECC page retirement or row remapping recording event"},
    {64, SEV_ERROR, "ECC page retirement or row remapper recording failure"},
    {65, SEV_WARNING, "Video processor exception"},
    {66, SEV_WARNING, "Illegal access by driver"},
    {67, SEV_WARNING, "Illegal access by driver"},
    {68, SEV_WARNING, "NVDEC0 Exception"},
    {69, SEV_ERROR, "Graphics Engine class error"},
    {73, SEV_WARNING, "NVENC2 Error"},
    {74, SEV_ERROR, "NVLINK Error"},
    {79, SEV_ERROR, "GPU has fallen off the bus"},
    {80, SEV_WARNING, "Corrupted data sent to GPU"},
    {81, SEV_WARNING, "VGA Subsystem Error"},
    {92, SEV_ERROR, "High single-bit ECC error rate"},
    {93, SEV_WARNING, "Non-fatal violation of provisioned InfoROM wear limit"},
    {94, SEV_WARNING, "Contained memory error"},
    {95, SEV_ERROR, "Uncontained memory error"},
    {109, SEV_ERROR, "Context Switch Timeout Error"},
    {110, SEV_WARNING, "Security Fault Error"},
    {119, SEV_ERROR, "GSP RPC Timeout"},
    {120, SEV_ERROR, "GSP Error"},
    {121, SEV_ERROR, "C2C Link Error"},
    {122, SEV_WARNING, "SPI PMU RPC Read Failure"},
    {123, SEV_WARNING, "SPI PMU RPC Write Failure"},
    {124, SEV_WARNING, "SPI PMU RPC Erase Failure"},
    {125, SEV_WARNING, "InfoROM FS Failure"},
    {136, SEV_WARNING, "Link Training Failed"},
    {137, SEV_WARNING, "NVLink Privilege Error"},
    {140, SEV_ERROR, "ECC Unrecovered Error"},
    {141, SEV_WARNING, "CUDA Fast Path Error"},
    {143, SEV_ERROR, "GPU Initialization Error"},
    {144, SEV_ERROR, "NVLINK: SAW Error"},
    {145, SEV_ERROR, "NVLINK: RLW Error"},
    {146, SEV_ERROR, "NVLINK: TLW Error"},
    {147, SEV_ERROR, "NVLINK: TREX Error"},
    {148, SEV_ERROR, "NVLINK: NVLPW_CTRL Error"},
    {149, SEV_ERROR, "NVLINK: NETIR Error"},
    {150, SEV_ERROR, "NVLINK: MSE Error"},
    {151, SEV_WARNING, "Key rotation Error"},
    {154, SEV_ERROR, "GPU Recovery Action Changed"},
    {155, SEV_WARNING, "NVLINK: SW Defined Error"},
    {156, SEV_WARNING, "Resource Retirement Event"},
    {157, SEV_WARNING, "Resource Retirement Failure"},
    {158, SEV_WARNING, "GPU Fatal Timeout"},
};

#define KMSG_XID_COUNT (sizeof(kmsg_xid_table) / sizeof(kmsg_xid_table[0]))

static const struct kmsg_xid_entry *kmsg_xid_find(unsigned xid) {
    size_t lo = 0, hi = KMSG_XID_COUNT;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        unsigned v = kmsg_xid_table[mid].xid;

        if (v == xid)
            return &kmsg_xid_table[mid];
        if (v < xid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *kmsg_xid_meaning(unsigned xid) {
    const struct kmsg_xid_entry *e = kmsg_xid_find(xid);

    return e ? e->meaning : NULL;
}

int kmsg_xid_severity(unsigned xid) {
    const struct kmsg_xid_entry *e = kmsg_xid_find(xid);

    return e ? e->severity : SEV_WARNING;
}
