/* What the classifier recognises: one row per message shape, with the keywords a line must
 * hold, the template that extracts its fields, and the category, severity and vendor it gets.
 * Templates follow the kernel's format strings (file and function noted per block). */
#include "backend/core/ev.h"
#include "backend/kmsg/kmsg_internal.h"

#define AMD                 KMSG_VENDOR_AMDGPU
#define KFD                 KMSG_VENDOR_KFD
#define NV                  KMSG_VENDOR_NVIDIA
#define HIP                 KMSG_VENDOR_HIP
#define ANY                 KMSG_VENDOR_NONE
#define INFO                SEV_INFO
#define WARN                SEV_WARNING
#define ERR                 SEV_ERROR
#define CONT(groups, flags) (groups), (KMSG_R_CONT | (flags))
#define GB(g)               (1u << (g))

const struct kmsg_rule kmsg_rules[] = {
    /* amdgpu_job.c amdgpu_job_timedout(): "ring %s timeout, signaled seq=%u, emitted seq=%u"
     * (4.x: "last signaled seq=... last emitted seq="), then the process line; soft recovery
     * is reported instead when the ring came back by itself */
    {KMSG_KW(TIMEOUT) | KMSG_KW(RING), "ring %{ring} timeout, but soft recovered",
     KMSG_CAT_RING_TIMEOUT, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(TIMEOUT) | KMSG_KW(RING),
     "ring %{ring} timeout, signaled seq=%{seq_signaled}, emitted seq=%{seq_emitted}",
     KMSG_CAT_RING_TIMEOUT, ERR, AMD, KMSG_G_TIMEOUT, 0},
    {KMSG_KW(TIMEOUT) | KMSG_KW(RING),
     "ring %{ring} timeout, last signaled seq=%{seq_signaled}, last emitted seq=%{seq_emitted}",
     KMSG_CAT_RING_TIMEOUT, ERR, AMD, KMSG_G_TIMEOUT, 0},
    /* amdgpu_fence.c amdgpu_fence_fallback(): the fence interrupt never came, the timer found
     * the fence signalled (work stalls each time; a storm of them precedes hangs) */
    {KMSG_KW(FENCE), "Fence fallback timer expired on ring %{ring}", KMSG_CAT_RING_TIMEOUT, WARN,
     AMD, KMSG_G_NONE, 0},
    {KMSG_KW(PROCESS),
     "Process information: process %{process} pid %{pid} thread %{thread} pid "
     "%{tid}",
     KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_TIMEOUT), KMSG_R_CLOSE)},
    /* amdgpu_vm.c amdgpu_vm_print_task_info() (6.x): "Process %s pid %d thread %s pid %d" */
    {KMSG_KW(PROCESS), "Process %{process} pid %{pid} thread %{thread} pid %{tid}", KMSG_CAT_NONE,
     INFO, ANY, CONT(GB(KMSG_G_TIMEOUT), KMSG_R_CLOSE)},
    {KMSG_KW(PROCESS), "Process %{process} pid %{pid} thread %{thread} pid %{tid}", KMSG_CAT_NONE,
     INFO, ANY, CONT(GB(KMSG_G_FAULT), 0)},
    /* radeon (GCN1/2 and older GPUs): radeon_ring.c radeon_ring_test_lockup() "ring %d stalled
     * for more than %llumsec" when the ring's read pointer has not moved for radeon.lockup_timeout,
     * then radeon_fence.c radeon_fence_check_lockup() "GPU lockup (current fence id 0x%016llx last
     * fence id 0x%016llx on ring %d)" (3.x radeon_fence_wait_seq(): "GPU lockup (waiting for
     * 0x%016llx last fence id 0x%016llx on ring %d)"; 3.0-3.4 r100: "GPU lockup CP stall for more
     * than %lumsec"). The fence code then sets needs_reset: the ring is hung until
     * radeon_gpu_reset() (radeon_device.c) resets the GPU. The stall and the lockup of the same
     * ring are one event; a lockup on its own is one too */
    {KMSG_KW(RING), "ring %{ring} stalled for more than ", KMSG_CAT_RING_TIMEOUT, ERR,
     KMSG_VENDOR_DRM, KMSG_G_LOCKUP, 0},
    {KMSG_KW(LOCKUP) | KMSG_KW(RING),
     "GPU lockup (current fence id %{seq_signaled} last fence id %{seq_emitted} on ring %{ring})",
     KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_LOCKUP), KMSG_R_CLOSE | KMSG_R_RING)},
    {KMSG_KW(LOCKUP) | KMSG_KW(RING),
     "GPU lockup (waiting for %{seq_emitted} last fence id %{seq_signaled} on ring %{ring})",
     KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_LOCKUP), KMSG_R_CLOSE | KMSG_R_RING)},
    {KMSG_KW(LOCKUP), "GPU lockup", KMSG_CAT_RING_TIMEOUT, ERR, KMSG_VENDOR_DRM, KMSG_G_NONE, 0},
    {KMSG_KW(LOCKUP) | KMSG_KW(RING),
     "(current fence id %{seq_signaled} last fence id %{seq_emitted} on ring %{ring})",
     KMSG_CAT_RING_TIMEOUT, INFO, ANY, KMSG_G_NONE, KMSG_R_EXTRA},
    {KMSG_KW(LOCKUP) | KMSG_KW(RING),
     "(waiting for %{seq_emitted} last fence id %{seq_signaled} on ring %{ring})",
     KMSG_CAT_RING_TIMEOUT, INFO, ANY, KMSG_G_NONE, KMSG_R_EXTRA},

    /* gmc_v9_0.c / gmc_v10_0.c / gmc_v11_0.c *_process_interrupt(): "[%s] %s page fault
     * (src_id:%u ring:%u vmid:%u pasid:%u, for process %s pid %d thread %s pid %d)" (the
     * process part moved to its own line in 6.x), then "in page starting at address 0x%016llx
     * from IH client 0x%x (%s)", "*VM_L2_PROTECTION_FAULT_STATUS:0x%08X" and the status bits */
    {KMSG_KW(PAGE_FAULT),
     "page fault (src_id:%{*} ring:%{*} vmid:%{vmid} pasid:%{pasid}, for process %{process} pid "
     "%{pid} thread %{thread} pid %{tid})",
     KMSG_CAT_PAGE_FAULT, ERR, AMD, KMSG_G_FAULT, 0},
    {KMSG_KW(PAGE_FAULT), "page fault (src_id:%{*} ring:%{*} vmid:%{vmid} pasid:%{pasid})",
     KMSG_CAT_PAGE_FAULT, ERR, AMD, KMSG_G_FAULT, 0},
    {KMSG_KW(PROCESS_L), "for process %{process} pid %{pid} thread %{thread} pid %{tid})",
     KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_FAULT), 0)},
    {KMSG_KW(PROCESS_L), "in process %{process} pid %{pid} thread %{thread} pid %{tid})",
     KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_FAULT), 0)},
    {KMSG_KW(IN_PAGE), "in page starting at address %{addr} from", KMSG_CAT_NONE, INFO, ANY,
     CONT(GB(KMSG_G_FAULT), 0)},
    {KMSG_KW(PROT_FAULT), "_L2_PROTECTION_FAULT_STATUS", KMSG_CAT_NONE, INFO, ANY,
     CONT(GB(KMSG_G_FAULT), 0)},
    {KMSG_KW(UTCL2), "Faulty UTCL2 client ID: %{client}", KMSG_CAT_NONE, INFO, ANY,
     CONT(GB(KMSG_G_FAULT), 0)},
    {KMSG_KW(FAULT_BITS), "_FAULTS: ", KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_FAULT), 0)},
    {KMSG_KW(FAULT_ERR), "_ERROR: ", KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_FAULT), 0)},
    {KMSG_KW(RW), "RW: ", KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_FAULT), 0)},
    /* gmc_v8_0.c gmc_v8_0_process_interrupt() and gmc_v8_0_vm_decode_fault() (also v7) */
    {KMSG_KW(GPU_FAULT), "GPU fault detected: ", KMSG_CAT_PAGE_FAULT, ERR, AMD, KMSG_G_FAULT8, 0},
    {KMSG_KW(PROT_FAULT), "VM_CONTEXT1_PROTECTION_FAULT_", KMSG_CAT_NONE, INFO, ANY,
     CONT(GB(KMSG_G_FAULT8), 0)},
    {KMSG_KW(VM_FAULT),
     "VM fault (%{*}, vmid %{vmid}, pasid %{pasid}) at page %{page}, %{*} '%{client}'",
     KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_FAULT8), 0)},
    {KMSG_KW(VM_FAULT), "VM fault (%{*}, vmid %{vmid}) at page %{page}, %{*} '%{client}'",
     KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_FAULT8), 0)},

    /* mes_v11_0.c / mes_v12_0.c *_submit_pkt_and_poll_completion(), amdgpu_mes.c */
    {KMSG_KW(MES), "MES failed to respond to msg=", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(MES), "MES failed to response msg=", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(MES) | KMSG_KW(FAILED), ") failed to respond to msg=", KMSG_CAT_MES, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(MES), "MES might be in unrecoverable state", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(MES), "hardware queue from MES", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(MES), "gangs from MES", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(MES), "MES ring buffer is full", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(MES), "MES is busy", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(MES) | KMSG_KW(FAILED), "MES failed", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(MES) | KMSG_KW(FAILED), "failed to %{*}MES", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(LEGACY), "failed to unmap legacy queue", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(LEGACY), "failed to map legacy queue", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(LEGACY), "failed to reset legacy queue", KMSG_CAT_MES, ERR, AMD, KMSG_G_NONE, 0},

    /* amdgpu_device.c amdgpu_device_gpu_recover() and the ASIC reset paths; amdgpu_ring.c /
     * amdgpu_job.c per-ring resets; amdgpu_dev_coredump.c */
    {KMSG_KW(VRAM_LOST), "VRAM is lost due to GPU reset", KMSG_CAT_GPU_RESET, ERR, AMD, KMSG_G_NONE,
     0},
    {KMSG_KW(RESET), "GPU reset begin", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(SUCCEEDED), "GPU reset(%{*}) succeeded", KMSG_CAT_GPU_RESET, INFO,
     AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(SUCCEEDED), "GPU reset succeeded", KMSG_CAT_GPU_RESET, INFO, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(FAILED), "GPU reset(%{*}) failed", KMSG_CAT_GPU_RESET, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(FAILED), "GPU reset failed", KMSG_CAT_GPU_RESET, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "GPU reset end with ret = %{ret}", KMSG_CAT_GPU_RESET, INFO, AMD, KMSG_G_NONE,
     KMSG_R_RET},
    {KMSG_KW(FAILED_C), "GPU Recovery Failed", KMSG_CAT_GPU_RESET, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RECOVERY_L), "GPU recovery disabled", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(FAILED), "ASIC reset failed", KMSG_CAT_GPU_RESET, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(FAILED), "asic reset on init failed", KMSG_CAT_GPU_RESET, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "Starting %{ring} ring reset", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(SUCCEEDED), "Ring %{ring} reset succeeded", KMSG_CAT_GPU_RESET, INFO,
     AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(FAILED), "Ring %{ring} reset failed", KMSG_CAT_GPU_RESET, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "Ring %{ring} reset failure", KMSG_CAT_GPU_RESET, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "BACO reset", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(FAILED), "mode1 reset failed", KMSG_CAT_GPU_RESET, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(RESET) | KMSG_KW(FAILED), "mode2 reset failed", KMSG_CAT_GPU_RESET, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "MODE1 reset", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "MODE2 reset", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "mode1 reset", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "mode2 reset", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "GPU pci config reset", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(RESET), "PCI reset", KMSG_CAT_GPU_RESET, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(COREDUMP), "coredump file has been created", KMSG_CAT_GPU_RESET, INFO, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(WEDGED), "device wedged, but recovered through reset", KMSG_CAT_GPU_RESET, INFO, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(WEDGED) | KMSG_KW(DRM), "device wedged", KMSG_CAT_GPU_RESET, ERR, AMD, KMSG_G_NONE, 0},

    /* amdkfd kfd_int_process_v9.c / _v10.c / _v11.c: "sq_intr: error, se %d, data 0x%x, ..." */
    {KMSG_KW(SQ_INTR), "sq_intr: error", KMSG_CAT_SQ_INTR, WARN, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(SQ_INTR), "sq_intr: inst", KMSG_CAT_SQ_INTR, INFO, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(SQ_INTR), "sq_intr: ", KMSG_CAT_SQ_INTR, WARN, KFD, KMSG_G_NONE, 0},

    /* amdkfd kfd_device_queue_manager.c, kfd_process.c, kfd_packet_manager.c */
    {KMSG_KW(PREEMPT), "unrecoverable state due to an unsuccessful queues preemption", KMSG_CAT_KFD,
     ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(QCM), "qcm fence wait loop timeout expired", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(PREEMPT), "reemption time out", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(PREEMPT) | KMSG_KW(FAILED), "reemption failed", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE,
     0},
    {KMSG_KW(EVICT), "Failed to evict queues of pasid %{pasid}", KMSG_CAT_KFD, ERR, KFD,
     KMSG_G_NONE, 0},
    {KMSG_KW(EVICT), "Failed to evict process queues", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(EVICT), "Failed to evict queue", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(QUEUE), "Failed to restore queues of process pid %{pid}", KMSG_CAT_KFD, ERR, KFD,
     KMSG_G_NONE, 0},
    {KMSG_KW(QUEUE), "Failed to restore queues of pasid %{pasid}", KMSG_CAT_KFD, ERR, KFD,
     KMSG_G_NONE, 0},
    {KMSG_KW(QUEUE), "Failed to restore process queues", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(QUEUE), "Failed to restore queue", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(QUIESCE), "Failed to quiesce KFD", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(FAILED_C), "Failed to suspend process pid %{pid}", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE,
     0},
    {KMSG_KW(FAILED_C), "Failed to suspend process", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(FAILED_C), "Failed to resume process", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(FAILED_C), "Failed to resume KFD", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(FAILED), "Restore process pid %{pid} failed", KMSG_CAT_KFD, ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(QUEUE) | KMSG_KW(FAILED), "Pasid %{pasid} destroy queue %{*} failed", KMSG_CAT_KFD,
     ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(QUEUE) | KMSG_KW(EVICT), "Freeing queue vital buffer %{*}, queue evicted",
     KMSG_CAT_KFD, WARN, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(WAVE), "Resetting wave fronts", KMSG_CAT_KFD, WARN, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(RUNLIST), "Runlist is getting oversubscribed", KMSG_CAT_KFD, WARN, KFD, KMSG_G_NONE,
     0},
    /* kfd_device_queue_manager.c: a queue the process asked for could not be made */
    {KMSG_KW(QUEUE) | KMSG_KW(FAILED), "Pasid %{pasid} DQM create queue %{*}failed", KMSG_CAT_KFD,
     ERR, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(QUEUE) | KMSG_KW(FAILED), "create queue %{*}failed", KMSG_CAT_KFD, ERR, KFD,
     KMSG_G_NONE, 0},
    {KMSG_KW(QUEUE), "No more SDMA queue to allocate", KMSG_CAT_KFD, WARN, KFD, KMSG_G_NONE, 0},
    {KMSG_KW(EVICT) | KMSG_KW(PASID), "Evicting PASID %{pasid} queues", KMSG_CAT_KFD, INFO, KFD,
     KMSG_G_NONE, 0},
    {KMSG_KW(EVICT) | KMSG_KW(PASID), "Evicting pasid %{pasid} queues", KMSG_CAT_KFD, INFO, KFD,
     KMSG_G_NONE, 0},

    /* NVSwitch (nvidia-nvswitchN): "SXid (PCI:%s): %d, Fatal|Non-fatal, ..." (NVIDIA's SXid
     * catalogue: a fatal SXid stalls the NVLink traffic through that switch) */
    {KMSG_KW(XID) | KMSG_KW(NVIDIA) | KMSG_KW(FATAL), "SXid (%{pci}): %{*}, Fatal",
     KMSG_CAT_FATAL_OTHER, ERR, NV, KMSG_G_NONE, 0},
    {KMSG_KW(XID) | KMSG_KW(NVIDIA), "SXid (%{pci}): ", KMSG_CAT_FATAL_OTHER, WARN, NV, KMSG_G_NONE,
     0},

    /* NVIDIA open-gpu-kernel-modules: "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s,
     * %s" (older drivers: no pid/name) */
    {KMSG_KW(XID) | KMSG_KW(NVRM), "Xid (%{pci}): %{xid},", KMSG_CAT_XID, WARN, NV, KMSG_G_NONE,
     KMSG_R_XID},
    {KMSG_KW(XID), ", pid=%{pid},", KMSG_CAT_XID, INFO, NV, KMSG_G_NONE, KMSG_R_EXTRA},
    {KMSG_KW(XID), ", name=%{process}, ", KMSG_CAT_XID, INFO, NV, KMSG_G_NONE, KMSG_R_EXTRA},
    {KMSG_KW(XID), "MMU Fault: ENGINE %{engine} faulted @ %{addr}. ", KMSG_CAT_XID, INFO, NV,
     KMSG_G_NONE, KMSG_R_EXTRA},
    /* nv.c: "NVRM: The NVIDIA GPU %04x:%02x:%02x.%x\nNVRM: (PCI ID: %04x:%04x) installed in this
     * system has\nNVRM: fallen off the bus and is not responding to commands.": one record that
     * dmesg prints as three lines */
    {KMSG_KW(NVRM), "NVRM: The NVIDIA GPU %{pci}", KMSG_CAT_NONE, INFO, NV, KMSG_G_NVGPU, 0},
    {KMSG_KW(NVRM), "NVRM: (PCI ID: ", KMSG_CAT_NONE, INFO, NV, CONT(GB(KMSG_G_NVGPU), 0)},
    {KMSG_KW(FALLEN), "fallen off the bus", KMSG_CAT_FATAL_OTHER, ERR, NV,
     CONT(GB(KMSG_G_NVGPU), KMSG_R_CLOSE)},
    {KMSG_KW(NVRM) | KMSG_KW(RMINIT), "RmInitAdapter failed", KMSG_CAT_FATAL_OTHER, ERR, NV,
     KMSG_G_NONE, 0},
    {KMSG_KW(NVRM) | KMSG_KW(FAILED), "rm_init_adapter failed", KMSG_CAT_FATAL_OTHER, ERR, NV,
     KMSG_G_NONE, 0},
    {KMSG_KW(FALLEN), "fallen off the bus", KMSG_CAT_FATAL_OTHER, ERR, ANY, KMSG_G_NONE, 0},
    /* kernel_gsp.c: GSP firmware stopped answering (its heartbeat stalled); RM's assertions, one
     * at a time often harmless, come in storms once the GPU has hung */
    {KMSG_KW(NVRM), "eartbeat timed out" /* "Heartbeat ..." and "GSP RM heartbeat ..." */,
     KMSG_CAT_FATAL_OTHER, ERR, NV, KMSG_G_NONE, 0},
    {KMSG_KW(NVRM) | KMSG_KW(FAILED), "Assertion failed", KMSG_CAT_FATAL_OTHER, WARN, NV,
     KMSG_G_NONE, 0},
    /* knvlink*.c: NVLink links not trained or discovered at load; the GPUs fall back to PCIe
     * for peer traffic (NVIDIA's Xid catalogue rates link-training failure a warning) */
    {KMSG_KW(NVRM) | KMSG_KW(FAILED), "postRxDetLinkMask failed", KMSG_CAT_FATAL_OTHER, WARN, NV,
     KMSG_G_NONE, 0},
    /* nv.c / nv-pci.c: the driver gave up on a GPU at load (no usable BAR, probe failed) */
    {KMSG_KW(NVRM), "This PCI I/O region assigned to your NVIDIA device is invalid",
     KMSG_CAT_FATAL_OTHER, ERR, NV, KMSG_G_NONE, 0},
    {KMSG_KW(NVRM) | KMSG_KW(FAILED), "The NVIDIA probe routine failed", KMSG_CAT_FATAL_OTHER, ERR,
     NV, KMSG_G_NONE, 0},
    {KMSG_KW(NVRM), "None of the NVIDIA devices were initialized", KMSG_CAT_FATAL_OTHER, ERR, NV,
     KMSG_G_NONE, 0},
    {KMSG_KW(NVIDIA) | KMSG_KW(FAILED), "probe of %{pci} failed with error", KMSG_CAT_FATAL_OTHER,
     ERR, NV, KMSG_G_NONE, 0},
    /* Versions that do not match. osapi.c RmPerformVersionCheck() (nv.c for the old check): a
     * client (X, nvidia-smi, CUDA, a persistence daemon) of another driver version than the
     * loaded module; its ioctl is refused (NV_ERR_GENERIC, -EINVAL), so nothing of that version
     * can use the GPU until module and user space match. One record over four NVRM lines ("the
     * client has the version X, but / this kernel module has the version Y.  Please / make sure
     * that this kernel module and all NVIDIA driver / components have the same version."), five
     * since 5xx ("the client 'NAME' (pid N) / has the version X, but this kernel module has / the
     * version Y.  Please make sure that this / kernel module and all NVIDIA driver components /
     * have the same version."); rsyslog keeps it on one line, the breaks written #012.
     * nvidia-modeset nvkms_alloc_rm() "Version mismatch: nvidia.ko(%s) nvidia-modeset.ko(%s)" and
     * nvidia-drm nv_drm_init() "Version mismatch: nvidia-modeset.ko(%s) nvidia-drm.ko(%s)" fail
     * the module's load (-EINVAL); kernel_gsp.c refuses a GSP firmware image of another version,
     * and RM init fails after it */
    {KMSG_KW(NVRM) | KMSG_KW(MISMATCH), "API mismatch: the client ", KMSG_CAT_FATAL_OTHER, ERR, NV,
     KMSG_G_NVAPI, 0},
    {KMSG_KW(NVRM) | KMSG_KW(MISMATCH), "API mismatch: the client '%{process}' (pid %{pid})",
     KMSG_CAT_FATAL_OTHER, INFO, NV, KMSG_G_NONE, KMSG_R_EXTRA},
    {KMSG_KW(NVRM), "have the same version.", KMSG_CAT_NONE, INFO, ANY,
     CONT(GB(KMSG_G_NVAPI), KMSG_R_CLOSE)},
    {KMSG_KW(NVRM), "this kernel module has", KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_NVAPI), 0)},
    {KMSG_KW(NVRM), "and all NVIDIA driver", KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_NVAPI), 0)},
    {KMSG_KW(NVRM), "NVRM: the version ", KMSG_CAT_NONE, INFO, ANY, CONT(GB(KMSG_G_NVAPI), 0)},
    {KMSG_KW(NVIDIA) | KMSG_KW(MISMATCH), "Version mismatch: nvidia", KMSG_CAT_FATAL_OTHER, ERR, NV,
     KMSG_G_NONE, 0},
    {KMSG_KW(NVRM) | KMSG_KW(MISMATCH), "firmware image version mismatch", KMSG_CAT_FATAL_OTHER,
     ERR, NV, KMSG_G_NONE, 0},

    /* the HIP/ROCm runtime on stderr: ROCR's memory-fault handler, HSA status codes, missing
     * code objects, BLAS library failures */
    {KMSG_KW(MEM_ACCESS),
     "Memory access fault by GPU node-%{node} (Agent handle: %{*}) on address %{addr}. Reason:",
     KMSG_CAT_PAGE_FAULT, ERR, HIP, KMSG_G_NONE, 0},
    {KMSG_KW(MEM_ACCESS), "Memory access fault by GPU node-%{node} ", KMSG_CAT_PAGE_FAULT, ERR, HIP,
     KMSG_G_NONE, 0},
    {KMSG_KW(HSA_STATUS), "HSA_STATUS_ERROR", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE, 0},
    {KMSG_KW(NO_BINARY), "hipErrorNoBinaryForGpu", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE, 0},
    {KMSG_KW(NO_IMAGE), "no kernel image is available", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE,
     0},
    {KMSG_KW(INVALID_FN), "invalid device function", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE,
     0},
    {KMSG_KW(HIPBLAS), "HIPBLAS_STATUS_", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE, 0},
    {KMSG_KW(HIPBLAS_L), "hipblasStatus", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE, 0},
    {KMSG_KW(HIPBLASLT) | KMSG_KW(FAILED), "hipBLASLt", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE,
     0},
    {KMSG_KW(HIPBLASLT), "hipBLASLt error", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE, 0},
    {KMSG_KW(ROCBLAS), "rocBLAS error", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE, 0},
    {KMSG_KW(CUBLAS), "CUBLAS_STATUS_", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE, 0},
    {KMSG_KW(HIP_ERROR), "HIP error: ", KMSG_CAT_FATAL_OTHER, ERR, HIP, KMSG_G_NONE, 0},

    /* amdgpu: other failures worth a look */
    {KMSG_KW(TEST_FAILED) | KMSG_KW(RING), "ring %{ring} test failed", KMSG_CAT_FATAL_OTHER, ERR,
     AMD, KMSG_G_NONE, 0},
    {KMSG_KW(TEST_FAILED), "ib ring test failed on %{ring} ", KMSG_CAT_FATAL_OTHER, ERR, AMD,
     KMSG_G_NONE, 0},
    /* amdgpu power management (swsmu smu_cmn.c, smu_v11_0.c...): the SMU firmware did not answer.
     * A busy SMU ("not done with your previous command") may answer the next message; no
     * response at all, or an SMC that never came up, leaves clocks and power unmanaged */
    {KMSG_KW(SMU), "SMU: I'm not done with your previous command", KMSG_CAT_FATAL_OTHER, WARN, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(SMU), "SMU: No response msg_reg:", KMSG_CAT_FATAL_OTHER, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(SMU) | KMSG_KW(FAILED_C), "Failed to export SMU metrics table", KMSG_CAT_FATAL_OTHER,
     WARN, AMD, KMSG_G_NONE, 0},
    /* powerplay smu7_smumgr.c smu7_send_msg_to_smc() (4.x-5.x): "\n failed to send message %x
     * ret is %d \n", "failed to send pre message ...", "last message was failed ret is %d": the
     * SMC did not take a message (0: no answer in time, 0xFF: refused). The function returns 0
     * and the driver goes on, as after a busy SMU: a warning (a storm of them says the SMU is not
     * managing clocks and power). The leading "\n" puts each on a line of its own, after a bare
     * "amdgpu: [powerplay] " */
    {KMSG_KW(FAILED), "failed to send %{*}message %{*} ret is ", KMSG_CAT_FATAL_OTHER, WARN, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(FAILED), "last message was failed ret is ", KMSG_CAT_FATAL_OTHER, WARN, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(SMC), "SMC engine is not correctly up", KMSG_CAT_FATAL_OTHER, ERR, AMD, KMSG_G_NONE,
     0},
    {KMSG_KW(SMC), "SMC is not ready", KMSG_CAT_FATAL_OTHER, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(FAILED_C), "Failed to enable requested dpm features", KMSG_CAT_FATAL_OTHER, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(FAILED_C), "Failed to setup smc hw", KMSG_CAT_FATAL_OTHER, ERR, AMD, KMSG_G_NONE, 0},
    /* powerplay's SMU7 managers (fiji_smumgr.c, polaris10_smumgr.c *_avfs_event_mgr(), 4.7-5.x):
     * Adaptive Voltage and Frequency Scaling could not be set up. "[AVFS] Something is broken.
     * See log!" is the default case of the event manager (AVFS left in a failed state by an
     * earlier step), "[AVFS][...] Failure at ... AVFS Disabled" and "Could not ..." the steps,
     * "AVFS failed status is %x!" the later form. After printing, the event manager returns 0
     * (fiji_start_smu() turns avfs_supported off when it does not) and the SMU starts: the GPU
     * runs on its fixed voltage table without adaptive voltage, so a warning. The voltage-table
     * lookups printed beside it are on the benign list (kmsg_benign.c) */
    {KMSG_KW(AVFS), "[AVFS]", KMSG_CAT_FATAL_OTHER, WARN, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(AVFS) | KMSG_KW(FAILED), "AVFS failed", KMSG_CAT_FATAL_OTHER, WARN, AMD, KMSG_G_NONE,
     0},
    /* amdgpu_device.c: an IP block (smu, psp, gfx, ...) failed a step of init, suspend or
     * resume (after suspend the GPU stays unusable), and the device init ("amdgpu_device_ip_init
     * failed", 4.x "amdgpu_init failed") or probe that failed with it; FreeBSD drm-kmod reports the
     * failed attach */
    {KMSG_KW(AMDGPU) | KMSG_KW(FAILED), " of IP block <%{*}> failed", KMSG_CAT_FATAL_OTHER, ERR,
     AMD, KMSG_G_NONE, 0},
    {KMSG_KW(AMDGPU) | KMSG_KW(FAILED), "amdgpu_device_ip_resume failed", KMSG_CAT_FATAL_OTHER, ERR,
     AMD, KMSG_G_NONE, 0},
    {KMSG_KW(AMDGPU) | KMSG_KW(FAILED), "amdgpu_device_ip_init failed", KMSG_CAT_FATAL_OTHER, ERR,
     AMD, KMSG_G_NONE, 0},
    {KMSG_KW(AMDGPU) | KMSG_KW(FAILED), "amdgpu_init failed", KMSG_CAT_FATAL_OTHER, ERR, AMD,
     KMSG_G_NONE, 0},
    {KMSG_KW(FATAL), "Fatal error during GPU init", KMSG_CAT_FATAL_OTHER, ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(AMDGPU) | KMSG_KW(FAILED), "probe of %{pci} failed with error", KMSG_CAT_FATAL_OTHER,
     ERR, AMD, KMSG_G_NONE, 0},
    {KMSG_KW(DRM), "drmn%{*} attach returned ", KMSG_CAT_FATAL_OTHER, ERR, ANY, KMSG_G_NONE, 0},
};

const size_t kmsg_rules_count = sizeof(kmsg_rules) / sizeof(kmsg_rules[0]);
