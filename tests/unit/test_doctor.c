/* ringside doctor's environment checks against fixture roots built at test time (device nodes
 * as plain files with modes, /etc/group, version files), a fake identity and a fake
 * environment; the version facts and comparison; the report's three printed forms. */
#include "tests/support/rs_test.h"
#include "tui/doctor/doctor.h"

#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
    char root[256];
    gid_t groups[4];
    char *envp[16];
    size_t n_env;
    struct doctor_env e;
    struct doctor_report r;
} fx;

/* mkdir -p root/rel. */
static void fx_mkdirs(const char *rel) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", fx.root, rel);
    for (char *p = path + strlen(fx.root) + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        cr_assert(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s", path);
        *p = '/';
    }
    cr_assert(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s", path);
}

/* root/rel with text and mode (its directories made first). */
static void fx_file(const char *rel, const char *text, mode_t mode) {
    char dir[512], path[1024];
    snprintf(dir, sizeof(dir), "%s", rel);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        fx_mkdirs(dir);
    }
    cr_assert_eq(rs_test_write_file(fx.root, rel, text, path, sizeof(path)), 0, "write %s", rel);
    cr_assert_eq(chmod(path, mode), 0);
}

static void fx_chmod(const char *rel, mode_t mode) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", fx.root, rel);
    cr_assert_eq(chmod(path, mode), 0, "chmod %s", path);
}

static void fx_env(const char *kv) {
    cr_assert_lt(fx.n_env, 15);
    fx.envp[fx.n_env++] = (char *)kv;
    fx.envp[fx.n_env] = NULL;
}

static void fx_gpu(const char *name, const char *arch, bool amd) {
    struct doctor_gpu *g = &fx.e.gpus[fx.e.n_gpus];
    snprintf(g->pci, sizeof(g->pci), "0000:%02zx:00.0", 3 + fx.e.n_gpus);
    snprintf(g->name, sizeof(g->name), "%s", name);
    snprintf(g->arch, sizeof(g->arch), "%s", arch);
    g->amd = amd;
    g->nvidia = !amd;
    fx.e.n_gpus++;
}

/* The render group is the test process's gid, so the files created here belong to it; the fake
 * identity has another uid, so only group membership grants it access. video is another gid. */
static gid_t fx_render_gid(void) {
    return getgid();
}
static gid_t fx_video_gid(void) {
    return getgid() + 1000;
}

/* An empty root, a fake user in render and video, no GPUs, an empty environment. */
static void fx_setup(void) {
    memset(&fx, 0, sizeof(fx));
    cr_assert_eq(rs_test_tmpdir(fx.root, sizeof(fx.root)), 0);
    fx.groups[0] = fx_render_gid();
    fx.groups[1] = fx_video_gid();
    fx.e.root = fx.root;
    fx.e.envp = fx.envp;
    fx.e.uid = getuid() + 1;
    fx.e.groups = fx.groups;
    fx.e.n_groups = 2;
    fx.e.user = "alice";
    fx.e.built_archs = "";
    fx.e.hip_runtime = "";
    fx.e.backends = "cpu";
    char group[256];
    snprintf(group, sizeof(group), "render:x:%u:alice\nvideo:x:%u:alice\nnogroup:x:65534:\n",
             (unsigned)fx_render_gid(), (unsigned)fx_video_gid());
    fx_file("etc/group", group, 0644);
}

static void fx_teardown(void) {
    rs_test_rmtree(fx.root);
}

/* A healthy AMD machine: versions, device nodes, kmsg and debugfs readable, one gfx1100 GPU
 * that the kernels are built for. */
static void fx_amd(void) {
    fx_file("proc/sys/kernel/osrelease", "6.8.0-49-generic\n", 0644);
    fx_file("proc/sys/kernel/dmesg_restrict", "0\n", 0644);
    fx_file("sys/module/amdgpu/version", "6.8.5\n", 0644);
    fx_file("opt/rocm-6.2.4/.info/version", "6.2.4\n", 0644);
    fx_file("usr/lib/python3.12/site-packages/torch-2.5.1+rocm6.2.dist-info/METADATA",
            "Name: torch\n", 0644);
    fx_file("dev/kfd", "", 0660);
    fx_file("dev/dri/renderD128", "", 0660);
    fx_file("dev/dri/card0", "", 0660);
    fx_file("dev/kmsg", "", 0644);
    fx_file("sys/kernel/debug/dri/0/name", "amdgpu\n", 0644);
    fx_gpu("AMD Radeon RX 7900 XTX", "gfx1100", true);
    fx.e.built_archs = "gfx1030;gfx1100";
    fx.e.hip_runtime = "6.2.41134";
    fx.e.backends = "hip, cpu";
    fx_env("HOME=/home/alice");
}

static const struct doctor_row *fx_row(const char *name) {
    for (size_t i = 0; i < fx.r.n; i++)
        if (strcmp(fx.r.rows[i].name, name) == 0)
            return &fx.r.rows[i];
    cr_assert_fail("no row named '%s' (of %zu)", name, fx.r.n);
    return NULL;
}

static void fx_run(void) {
    memset(&fx.r, 0, sizeof(fx.r));
    doctor_check_env(&fx.e, &fx.r);
    cr_assert_eq(fx.r.dropped, 0);
}

#define FX_EXPECT(name, st)                                                                        \
    do {                                                                                           \
        const struct doctor_row *row_ = fx_row(name);                                              \
        cr_assert_eq(row_->status, st, "%s: %s, expected %s (value '%s', remedy '%s')", name,      \
                     doctor_status_name(row_->status), doctor_status_name(st), row_->value,        \
                     row_->remedy);                                                                \
    } while (0)

#define FX_HAS(field, name, text)                                                                  \
    cr_assert(strstr(fx_row(name)->field, text), "%s: " #field " '%s' lacks '%s'", name,           \
              fx_row(name)->field, text)

TestSuite(doctor, .init = fx_setup, .fini = fx_teardown, .timeout = 30);

Test(doctor, healthy_amd_is_all_ok) {
    fx_amd();
    fx_run();
    for (size_t i = 0; i < fx.r.n; i++) {
        const struct doctor_row *row = &fx.r.rows[i];
        cr_expect(row->status == DOCTOR_OK || row->status == DOCTOR_SKIP, "%s/%s: %s '%s' (%s)",
                  row->group, row->name, doctor_status_name(row->status), row->value, row->remedy);
        if (row->status == DOCTOR_OK)
            cr_expect_str_empty(row->remedy, "%s has a remedy while ok", row->name);
    }
    cr_assert_eq(doctor_exit_status(&fx.r), 0);
    FX_EXPECT("kernel", DOCTOR_OK);
    FX_HAS(value, "kernel", "6.8.0-49-generic");
    FX_EXPECT("amdgpu driver", DOCTOR_OK);
    FX_EXPECT("nvidia driver", DOCTOR_SKIP);
    FX_EXPECT("GPU runtime", DOCTOR_OK);
    FX_EXPECT("ROCm", DOCTOR_OK);
    FX_HAS(value, "ROCm", "/opt/rocm-6.2.4");
    FX_EXPECT("PyTorch", DOCTOR_OK);
    FX_HAS(value, "PyTorch", "2.5.1+rocm6.2");
    FX_EXPECT("gpu 0", DOCTOR_OK);
    FX_HAS(value, "gpu 0", "AMD Radeon RX 7900 XTX (gfx1100) at 0000:03:00.0");
    FX_EXPECT("kernel archs", DOCTOR_OK);
    FX_EXPECT("/dev/kfd", DOCTOR_OK);
    FX_EXPECT("/dev/dri/renderD128", DOCTOR_OK);
    FX_EXPECT("groups", DOCTOR_OK);
    FX_EXPECT("/dev/kmsg", DOCTOR_OK);
    FX_EXPECT("debugfs", DOCTOR_OK);
    FX_EXPECT("HSA_OVERRIDE_GFX_VERSION", DOCTOR_OK);
    cr_assert_str_eq(fx_row("HSA_OVERRIDE_GFX_VERSION")->value, "not set");
    /* card0 is not a render node */
    for (size_t i = 0; i < fx.r.n; i++)
        cr_assert(!strstr(fx.r.rows[i].name, "card0"));
}

/* The rebuild flag names the cache variable the build really reads. */
Test(doctor, wrong_arch_list_fails_with_rebuild_flag) {
    char path[512], line[256];
    snprintf(path, sizeof(path), "%s/../../cmake/rs_features.cmake", RS_FIXTURES);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    bool declared = false;
    while (fgets(line, sizeof(line), f))
        declared |= strncmp(line, "set(RINGSIDE_HIP_ARCHS ", 23) == 0;
    fclose(f);
    cr_assert(declared, "RINGSIDE_HIP_ARCHS is not the build's arch cache variable any more");

    fx_amd();
    fx.e.built_archs = "gfx1030;gfx90a";
    fx_run();
    FX_EXPECT("kernel archs", DOCTOR_FAIL);
    FX_HAS(value, "kernel archs", "gfx1100");
    FX_HAS(remedy, "kernel archs",
           "cmake -DRINGSIDE_HIP=AMD -DRINGSIDE_HIP_ARCHS=\"gfx1030;gfx90a;gfx1100\"");
    FX_HAS(remedy, "kernel archs", "gfx11xx needs hipcc from ROCm 5.5 or later");
    cr_assert_eq(doctor_exit_status(&fx.r), 1);
}

Test(doctor, rdna_sibling_arch_offers_override_as_workaround) {
    fx_amd();
    fx.e.gpus[0].arch[0] = '\0';
    snprintf(fx.e.gpus[0].arch, sizeof(fx.e.gpus[0].arch), "gfx1101");
    fx.e.built_archs = "gfx1100";
    fx_run();
    FX_EXPECT("kernel archs", DOCTOR_FAIL);
    FX_HAS(remedy, "kernel archs", "-DRINGSIDE_HIP_ARCHS=\"gfx1100;gfx1101\"");
    FX_HAS(remedy, "kernel archs", "HSA_OVERRIDE_GFX_VERSION=11.0.0");
}

Test(doctor, nvidia_arch_missing_names_cuda_architectures) {
    fx_gpu("NVIDIA H100 80GB HBM3", "sm_90", false);
    fx.e.built_archs = "sm_80";
    fx.e.hip_runtime = "12.4";
    fx.e.backends = "hip, cpu";
    fx_file("proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC "
            "2024\n",
            0644);
    fx_run();
    FX_EXPECT("kernel archs", DOCTOR_FAIL);
    FX_HAS(remedy, "kernel archs", "-DRINGSIDE_HIP=NVIDIA -DCMAKE_CUDA_ARCHITECTURES=\"80;90\"");
    FX_EXPECT("nvidia driver", DOCTOR_OK);
    FX_HAS(value, "nvidia driver", "550.54.15");
    /* No AMD GPU and no AMD nodes: the AMD checks are skipped, not failed */
    FX_EXPECT("amdgpu driver", DOCTOR_SKIP);
    FX_EXPECT("ROCm", DOCTOR_SKIP);
    FX_EXPECT("/dev/kfd", DOCTOR_SKIP);
}

Test(doctor, missing_group_membership) {
    fx_amd();
    fx.groups[0] = getgid() + 2000; /* neither render nor video */
    fx.e.n_groups = 1;
    fx_run();
    FX_EXPECT("/dev/kfd", DOCTOR_FAIL);
    FX_HAS(remedy, "/dev/kfd", "sudo usermod -aG render alice");
    FX_HAS(remedy, "/dev/kfd", "log out");
    FX_EXPECT("/dev/dri/renderD128", DOCTOR_FAIL);
    FX_EXPECT("groups", DOCTOR_WARN);
    FX_HAS(value, "groups", "render");
    FX_HAS(value, "groups", "video");
    FX_HAS(remedy, "groups", "sudo usermod -aG render,video alice");
    cr_assert_eq(doctor_exit_status(&fx.r), 1);
}

Test(doctor, node_without_group_access_needs_udev_not_usermod) {
    fx_amd();
    fx_chmod("dev/kfd", 0600);
    fx_run();
    FX_EXPECT("/dev/kfd", DOCTOR_FAIL);
    cr_assert(!strstr(fx_row("/dev/kfd")->remedy, "usermod"));
    FX_HAS(remedy, "/dev/kfd", "MODE=\"0660\"");
}

Test(doctor, root_may_open_everything) {
    fx_amd();
    fx_chmod("dev/kfd", 0600);
    fx_chmod("dev/kmsg", 0600);
    fx_file("proc/sys/kernel/dmesg_restrict", "1\n", 0644);
    fx.e.uid = 0;
    fx.e.n_groups = 0;
    fx_run();
    FX_EXPECT("/dev/kfd", DOCTOR_OK);
    FX_EXPECT("/dev/kmsg", DOCTOR_OK);
}

Test(doctor, unreadable_kmsg_warns) {
    fx_amd();
    fx_chmod("dev/kmsg", 0600);
    fx_run();
    FX_EXPECT("/dev/kmsg", DOCTOR_WARN);
    FX_HAS(remedy, "/dev/kmsg", "sudo setcap cap_syslog+ep $(which ringside)");
    FX_HAS(remedy, "/dev/kmsg", "kernel.dmesg_restrict=0");
    cr_assert_eq(doctor_exit_status(&fx.r), 0, "a warning alone does not fail");
}

Test(doctor, dmesg_restrict_warns_for_non_root) {
    fx_amd();
    fx_file("proc/sys/kernel/dmesg_restrict", "1\n", 0644);
    fx_run();
    FX_EXPECT("/dev/kmsg", DOCTOR_WARN);
    FX_HAS(value, "/dev/kmsg", "dmesg_restrict=1");
}

Test(doctor, debugfs_root_only_warns) {
    fx_amd();
    fx_chmod("sys/kernel/debug", 0700);
    fx_run();
    FX_EXPECT("debugfs", DOCTOR_WARN);
    FX_HAS(remedy, "debugfs", "drm_buddy");
}

Test(doctor, no_gpus_skips) {
    fx_run();
    FX_EXPECT("gpus", DOCTOR_SKIP);
    FX_HAS(value, "gpus", "no GPU found");
    FX_EXPECT("kernel", DOCTOR_SKIP);
    FX_EXPECT("amdgpu driver", DOCTOR_SKIP);
    FX_EXPECT("nvidia driver", DOCTOR_SKIP);
    FX_EXPECT("GPU runtime", DOCTOR_SKIP);
    FX_EXPECT("ROCm", DOCTOR_SKIP);
    FX_EXPECT("PyTorch", DOCTOR_SKIP);
    FX_HAS(remedy, "PyTorch", "dist-info");
    FX_EXPECT("/dev/kfd", DOCTOR_SKIP);
    cr_assert_eq(doctor_exit_status(&fx.r), 0);
    for (size_t i = 0; i < fx.r.n; i++)
        cr_assert_neq(fx.r.rows[i].status, DOCTOR_FAIL, "%s failed", fx.r.rows[i].name);
}

Test(doctor, amd_gpu_without_driver_or_backend) {
    fx_gpu("AMD Radeon RX 7900 XTX", "gfx1100", true);
    fx_run();
    FX_EXPECT("amdgpu driver", DOCTOR_FAIL);
    FX_HAS(remedy, "amdgpu driver", "modprobe amdgpu; check dmesg | grep amdgpu");
    FX_EXPECT("GPU runtime", DOCTOR_WARN);
    FX_HAS(remedy, "GPU runtime", "compiled: cpu");
    FX_HAS(remedy, "GPU runtime", "-DRINGSIDE_HIP=AMD or NVIDIA");
    FX_EXPECT("ROCm", DOCTOR_WARN);
    FX_EXPECT("/dev/kfd", DOCTOR_FAIL);
    FX_HAS(value, "/dev/kfd", "missing");
}

Test(doctor, visible_devices) {
    fx_amd();
    fx_gpu("AMD Radeon RX 7900 XTX", "gfx1100", true);
    fx_env("HIP_VISIBLE_DEVICES=0,3");
    fx_env("ROCR_VISIBLE_DEVICES=");
    fx_env("CUDA_VISIBLE_DEVICES=GPU-5d3a1c2e-aaaa-bbbb-cccc-0123456789ab");
    fx_run();
    FX_EXPECT("HIP_VISIBLE_DEVICES", DOCTOR_WARN);
    FX_HAS(remedy, "HIP_VISIBLE_DEVICES", "index 3 but only 2");
    FX_HAS(value, "HIP_VISIBLE_DEVICES", "=0,3: ");
    FX_EXPECT("ROCR_VISIBLE_DEVICES", DOCTOR_WARN);
    FX_HAS(value, "ROCR_VISIBLE_DEVICES", "hides every GPU");
    FX_EXPECT("CUDA_VISIBLE_DEVICES", DOCTOR_OK);
}

Test(doctor, visible_devices_garbage_and_in_range) {
    fx_amd();
    fx_env("HIP_VISIBLE_DEVICES=0");
    fx_env("ROCR_VISIBLE_DEVICES=first");
    fx_run();
    FX_EXPECT("HIP_VISIBLE_DEVICES", DOCTOR_OK);
    FX_EXPECT("ROCR_VISIBLE_DEVICES", DOCTOR_WARN);
    FX_HAS(remedy, "ROCR_VISIBLE_DEVICES", "'first'");
}

Test(doctor, hsa_override_malformed_fails) {
    fx_amd();
    fx_env("HSA_OVERRIDE_GFX_VERSION=gfx1030");
    fx_run();
    FX_EXPECT("HSA_OVERRIDE_GFX_VERSION", DOCTOR_FAIL);
    FX_HAS(remedy, "HSA_OVERRIDE_GFX_VERSION", "10.3.0");
    cr_assert_eq(doctor_exit_status(&fx.r), 1);
}

Test(doctor, hsa_override_on_native_card_warns) {
    fx_amd(); /* gfx1100, built */
    fx_env("HSA_OVERRIDE_GFX_VERSION=10.3.0");
    fx_run();
    FX_EXPECT("HSA_OVERRIDE_GFX_VERSION", DOCTOR_WARN);
    FX_HAS(value, "HSA_OVERRIDE_GFX_VERSION", "gfx1030");
    FX_HAS(remedy, "HSA_OVERRIDE_GFX_VERSION", "gfx1100");
}

Test(doctor, hsa_override_on_unsupported_card_is_ok) {
    fx_amd();
    snprintf(fx.e.gpus[0].arch, sizeof(fx.e.gpus[0].arch), "gfx1031");
    fx.e.built_archs = "gfx1030";
    fx_env("HSA_OVERRIDE_GFX_VERSION=10.3.0");
    fx_run();
    FX_EXPECT("HSA_OVERRIDE_GFX_VERSION", DOCTOR_OK);
}

Test(doctor, bad_runtime_values) {
    fx_amd();
    fx_env("HSA_ENABLE_SDMA=2");
    fx_env("TORCH_BLAS_PREFER_HIPBLASLT=yes");
    fx_env("AMD_SERIALIZE_KERNEL=3");
    fx_env("GPU_MAX_ALLOC_PERCENT=101");
    fx_run();
    FX_EXPECT("HSA_ENABLE_SDMA", DOCTOR_WARN);
    FX_EXPECT("TORCH_BLAS_PREFER_HIPBLASLT", DOCTOR_WARN);
    FX_EXPECT("AMD_SERIALIZE_KERNEL", DOCTOR_WARN);
    FX_HAS(remedy, "AMD_SERIALIZE_KERNEL", "debugging");
    FX_EXPECT("GPU_MAX_ALLOC_PERCENT", DOCTOR_WARN);
}

Test(doctor, good_runtime_values) {
    fx_amd();
    fx_env("HSA_ENABLE_SDMA=0");
    fx_env("TORCH_BLAS_PREFER_HIPBLASLT=1");
    fx_env("AMD_SERIALIZE_KERNEL=0");
    fx_env("GPU_MAX_ALLOC_PERCENT=100");
    fx_run();
    FX_EXPECT("HSA_ENABLE_SDMA", DOCTOR_OK);
    FX_HAS(value, "HSA_ENABLE_SDMA", "SDMA");
    FX_EXPECT("TORCH_BLAS_PREFER_HIPBLASLT", DOCTOR_OK);
    FX_HAS(value, "TORCH_BLAS_PREFER_HIPBLASLT", "hipBLASLt");
    FX_EXPECT("AMD_SERIALIZE_KERNEL", DOCTOR_OK);
    FX_EXPECT("GPU_MAX_ALLOC_PERCENT", DOCTOR_OK);
    FX_HAS(value, "GPU_MAX_ALLOC_PERCENT", "100%");
}

Test(doctor, out_of_range_numbers) {
    fx_amd();
    fx_env("AMD_SERIALIZE_KERNEL=7");
    fx_env("GPU_MAX_ALLOC_PERCENT=0");
    fx_run();
    FX_EXPECT("AMD_SERIALIZE_KERNEL", DOCTOR_WARN);
    FX_HAS(value, "AMD_SERIALIZE_KERNEL", "0..3");
    FX_EXPECT("GPU_MAX_ALLOC_PERCENT", DOCTOR_WARN);
}

Test(doctor, alloc_conf) {
    fx_amd();
    fx_env("PYTORCH_HIP_ALLOC_CONF=max_split_size_mb:128,garbage_collection_threshold:0.8,"
           "expandable_segments:True,backend:native");
    fx_env("PYTORCH_CUDA_ALLOC_CONF=max_split_mb:128");
    fx_run();
    FX_EXPECT("PYTORCH_HIP_ALLOC_CONF", DOCTOR_OK);
    FX_EXPECT("PYTORCH_CUDA_ALLOC_CONF", DOCTOR_FAIL);
    FX_HAS(remedy, "PYTORCH_CUDA_ALLOC_CONF", "max_split_mb");
}

Test(doctor, alloc_conf_bad_backend_and_no_colon) {
    fx_amd();
    fx_env("PYTORCH_HIP_ALLOC_CONF=backend:turbo");
    fx_env("PYTORCH_CUDA_ALLOC_CONF=expandable_segments");
    fx_run();
    FX_EXPECT("PYTORCH_HIP_ALLOC_CONF", DOCTOR_FAIL);
    FX_HAS(remedy, "PYTORCH_HIP_ALLOC_CONF", "turbo");
    FX_EXPECT("PYTORCH_CUDA_ALLOC_CONF", DOCTOR_FAIL);
}

Test(doctor, arch_listed) {
    cr_assert(doctor_arch_listed("gfx1030;gfx1100", "gfx1100"));
    cr_assert(doctor_arch_listed("sm_80,sm_90", "sm_90"));
    cr_assert_not(doctor_arch_listed("gfx1100", "gfx110"));
    cr_assert_not(doctor_arch_listed("gfx1100", "gfx11000"));
    cr_assert_not(doctor_arch_listed("", "gfx1100"));
    cr_assert_not(doctor_arch_listed(NULL, "gfx1100"));
}

/* ---- facts ---- */

Test(doctor, version_cmp) {
    cr_assert_lt(doctor_version_cmp("6.2.4", "6.3"), 0);
    cr_assert_gt(doctor_version_cmp("6.3", "6.2.4"), 0);
    cr_assert_gt(doctor_version_cmp("2.5.1+rocm6.2", "2.5"), 0);
    cr_assert_eq(doctor_version_cmp("2.5.0+rocm6.2", "2.5"), 0);
    cr_assert_eq(doctor_version_cmp("2.5", "2.5.0"), 0);
    cr_assert_lt(doctor_version_cmp("6.8.0-49-generic", "6.10"), 0);
    cr_assert_gt(doctor_version_cmp("550.54.15", "535.183.01"), 0);
    cr_assert_eq(doctor_version_cmp("", ""), 0);
}

Test(doctor, facts_read_fixture) {
    fx_file("proc/sys/kernel/osrelease", "6.8.0-49-generic\n", 0644);
    fx_file("opt/rocm-6.1.3/.info/version", "6.1.3\n", 0644);
    fx_file("opt/rocm-6.2.4/.info/version", "6.2.4\n", 0644);
    fx_file("usr/lib/python3.12/site-packages/torch-2.5.1+rocm6.2.dist-info/METADATA", "", 0644);
    fx_file("usr/lib/python3.12/site-packages/torch-2.4.0.dist-info/METADATA", "", 0644);
    fx_file("proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC "
            "2024\n",
            0644);
    fx_mkdirs("sys/module/amdgpu");
    struct doctor_facts f;
    doctor_facts_read(&fx.e, &f);
    cr_assert_str_eq(f.kernel, "6.8.0-49-generic");
    cr_assert_str_eq(f.rocm, "6.2.4");
    cr_assert_str_eq(f.rocm_path, "/opt/rocm-6.2.4");
    cr_assert_str_eq(f.torch, "2.5.1+rocm6.2");
    cr_assert(strstr(f.torch_path, "/usr/lib/python3.12/site-packages/torch-2.5.1+rocm6.2"
                                   ".dist-info"),
              "%s", f.torch_path);
    cr_assert_str_eq(f.nvidia, "550.54.15");
    cr_assert_str_eq(f.amdgpu, "in-tree");
}

/* The open kernel module's version line, and PyTorch in a virtual environment that is only on
 * the PATH (no VIRTUAL_ENV). */
Test(doctor, facts_open_module_and_a_venv_on_the_path) {
    fx_file("proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.82.07  Release Build  "
            "(dvs-builder@U16-I3-B13-3-2)  Wed Aug 27 18:19:45 UTC 2025\n",
            0644);
    fx_file("opt/torch/.venv/lib/python3.12/site-packages/torch-2.11.0.dist-info/METADATA", "",
            0644);
    fx_env("PATH=/usr/bin:/opt/torch/.venv/bin:/bin");
    struct doctor_facts f;
    doctor_facts_read(&fx.e, &f);
    cr_assert_str_eq(f.nvidia, "580.82.07");
    cr_assert_str_eq(f.torch, "2.11.0");
    cr_assert(strstr(f.torch_path, "/opt/torch/.venv/lib/python3.12/site-packages/"), "%s",
              f.torch_path);
}

/* ---- PyTorch: pip's and Debian's layouts, its build and its kernels' archs ---- */

/* root/rel with n bytes of data (its directories made first). */
static void fx_bytes(const char *rel, const void *data, size_t n) {
    char dir[512], path[1024];
    snprintf(dir, sizeof(dir), "%s", rel);
    *strrchr(dir, '/') = '\0';
    fx_mkdirs(dir);
    snprintf(path, sizeof(path), "%s/%s", fx.root, rel);
    FILE *f = fopen(path, "wb");
    cr_assert(f, "open %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* One fatbin (magic, version 1, header size 16, the entries' size) of entries for the cubin
 * archs sass and the PTX archs ptx (0-terminated lists), each entry a 64-byte header (kind at
 * 0, header size at 4, payload size at 8, arch at 28) and a 16-byte payload. */
static size_t fx_fatbin(uint8_t *p, const uint32_t *sass, const uint32_t *ptx) {
    size_t n = 16;
    for (int pass = 0; pass < 2; pass++)
        for (const uint32_t *a = pass ? ptx : sass; *a; a++) {
            uint16_t kind = pass ? 1 : 2, ver = 0x0101;
            uint32_t hsize = 64;
            uint64_t psize = 16;
            memset(p + n, 0, 64);
            memcpy(p + n, &kind, 2);
            memcpy(p + n + 2, &ver, 2);
            memcpy(p + n + 4, &hsize, 4);
            memcpy(p + n + 8, &psize, 8);
            memcpy(p + n + 28, a, 4);
            memcpy(p + n + 64, "a payload (16 B)", 16);
            n += 80;
        }
    uint32_t magic = 0xBA55ED50u;
    uint16_t ver = 1, hsize = 16;
    uint64_t fsize = n - 16;
    memcpy(p, &magic, 4);
    memcpy(p + 4, &ver, 2);
    memcpy(p + 6, &hsize, 2);
    memcpy(p + 8, &fsize, 8);
    return n;
}

/* A small ELF64 library as nvcc links them: a .text, then .nv_fatbin with three fatbins, 8
 * bytes of padding after the first: cubins for sm_75, sm_80 and sm_90 in all three, sm_86 in
 * the last two (a walk that stops at the padding misses it), sm_89 in one (a kernel's own:
 * not most), PTX for compute_90 in the first two; then .shstrtab and the section headers. */
static void fx_cuda_library(const char *rel) {
    static uint8_t buf[4096];
    static const char names[] = "\0.text\0.nv_fatbin\0.shstrtab";
    static const uint32_t sass1[] = {75, 80, 90, 0}, sass2[] = {75, 80, 86, 90, 0},
                          sass3[] = {75, 80, 86, 89, 90, 0}, ptx[] = {90, 0}, none[] = {0};
    memset(buf, 0, sizeof(buf));
    size_t text = sizeof(Elf64_Ehdr), fat = text + 32;
    size_t n = fx_fatbin(buf + fat, sass1, ptx);
    n += 8; /* padding between fatbins */
    n += fx_fatbin(buf + fat + n, sass2, ptx);
    n += fx_fatbin(buf + fat + n, sass3, none);
    size_t strs = fat + n, shoff = (strs + sizeof(names) + 7) & ~(size_t)7;
    memcpy(buf + strs, names, sizeof(names));
    Elf64_Shdr sh[4];
    memset(sh, 0, sizeof(sh));
    sh[1] = (Elf64_Shdr){.sh_name = 1, .sh_type = SHT_PROGBITS, .sh_offset = text, .sh_size = 32};
    sh[2] = (Elf64_Shdr){.sh_name = 7, .sh_type = SHT_PROGBITS, .sh_offset = fat, .sh_size = n};
    sh[3] = (Elf64_Shdr){
        .sh_name = 18, .sh_type = SHT_STRTAB, .sh_offset = strs, .sh_size = sizeof(names)};
    memcpy(buf + shoff, sh, sizeof(sh));
    Elf64_Ehdr eh = {.e_type = ET_DYN,
                     .e_machine = EM_X86_64,
                     .e_version = EV_CURRENT,
                     .e_shoff = shoff,
                     .e_ehsize = sizeof(Elf64_Ehdr),
                     .e_shentsize = sizeof(Elf64_Shdr),
                     .e_shnum = 4,
                     .e_shstrndx = 3};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    memcpy(buf, &eh, sizeof(eh));
    cr_assert_lt(shoff + sizeof(sh), sizeof(buf));
    fx_bytes(rel, buf, shoff + sizeof(sh));
}

/* Debian's python3-torch: an egg-info directory in /usr/lib/python3/dist-packages, a CPU build
 * (1.13's version.py: cuda = None, hip = None): fine without GPUs, a warning with one. */
Test(doctor, torch_debian_egg_info_cpu_build) {
    const char *site = "usr/lib/python3/dist-packages";
    char rel[256];
    snprintf(rel, sizeof(rel), "%s/torch-1.13.0a0+gitunknown.egg-info/PKG-INFO", site);
    fx_file(rel, "Metadata-Version: 2.1\nName: torch\nVersion: 1.13.0a0+gitunknown\n", 0644);
    snprintf(rel, sizeof(rel), "%s/torch/version.py", site);
    fx_file(rel,
            "__version__ = '1.13.0a0'\ndebug = False\ncuda = None\ngit_version = 'Unknown'\n"
            "hip = None\n",
            0644);
    struct doctor_facts f;
    doctor_facts_read(&fx.e, &f);
    cr_assert_str_eq(f.torch, "1.13.0a0+gitunknown");
    cr_assert(strstr(f.torch_path, "/usr/lib/python3/dist-packages/torch-1.13.0a0+gitunknown"
                                   ".egg-info"),
              "%s", f.torch_path);
    cr_assert(f.torch_build);
    cr_assert_str_empty(f.torch_cuda);
    cr_assert_str_empty(f.torch_hip);
    cr_assert_str_empty(f.torch_archs);
    fx_run();
    FX_EXPECT("PyTorch", DOCTOR_OK);
    FX_HAS(value, "PyTorch", "1.13.0a0+gitunknown (CPU only) at /usr/lib/python3/dist-packages");
    FX_EXPECT("PyTorch archs", DOCTOR_OK);
    FX_HAS(value, "PyTorch archs", "CPU-only");
    fx_gpu("NVIDIA H100", "sm_90", false);
    fx_run();
    FX_EXPECT("PyTorch archs", DOCTOR_WARN);
    FX_HAS(remedy, "PyTorch archs", "install a CUDA or ROCm build");
}

/* An egg-info that is a file, with its Python tag, newer than a dist-info elsewhere; no
 * version.py beside it: the build is not known. */
Test(doctor, torch_egg_info_file_newest) {
    fx_file("usr/lib/python3/dist-packages/torch-2.1.0-py3.11.egg-info", "Name: torch\n", 0644);
    fx_file("usr/local/lib/python3.11/dist-packages/torch-2.0.1.dist-info/METADATA", "", 0644);
    struct doctor_facts f;
    doctor_facts_read(&fx.e, &f);
    cr_assert_str_eq(f.torch, "2.1.0");
    cr_assert(strstr(f.torch_path, "/usr/lib/python3/dist-packages/torch-2.1.0-py3.11.egg-info"),
              "%s", f.torch_path);
    cr_assert(!f.torch_build);
    fx_run();
    FX_HAS(value, "PyTorch", "2.1.0 (build not known)");
    FX_EXPECT("PyTorch archs", DOCTOR_SKIP);
    FX_HAS(remedy, "PyTorch archs", "torch/version.py");
}

/* pip's CUDA wheel: version.py as 2.x writes it, the archs of most of libtorch_cuda.so's
 * fatbins (cubins for sm_75, sm_80, sm_86, sm_90, PTX for compute_90): an sm_89 runs sm_86's
 * cubins, an sm_120 compute_90's PTX, an sm_70 nothing. */
Test(doctor, torch_cuda_wheel_archs) {
    const char *site = "usr/lib/python3.12/site-packages";
    char rel[256];
    snprintf(rel, sizeof(rel), "%s/torch-2.5.1+cu121.dist-info/METADATA", site);
    fx_file(rel, "Name: torch\n", 0644);
    snprintf(rel, sizeof(rel), "%s/torch/version.py", site);
    fx_file(rel,
            "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', "
            "'git_version', 'hip']\n__version__ = '2.5.1+cu121'\ndebug = False\n"
            "cuda: Optional[str] = '12.1'\ngit_version = 'a8d6afb511a'\n"
            "hip: Optional[str] = None\n",
            0644);
    snprintf(rel, sizeof(rel), "%s/torch/lib/libtorch_cuda.so", site);
    fx_cuda_library(rel);
    struct doctor_facts f;
    doctor_facts_read(&fx.e, &f);
    cr_assert_str_eq(f.torch_cuda, "12.1");
    cr_assert_str_empty(f.torch_hip);
    cr_assert_str_eq(f.torch_archs, "sm_75 sm_80 sm_86 sm_90 compute_90");
    fx_gpu("NVIDIA L40S", "sm_89", false);
    fx_gpu("NVIDIA RTX PRO 6000", "sm_120", false);
    fx_run();
    FX_HAS(value, "PyTorch", "2.5.1+cu121 (CUDA 12.1) at");
    FX_EXPECT("PyTorch archs", DOCTOR_OK);
    FX_HAS(value, "PyTorch archs",
           "sm_75 sm_80 sm_86 sm_90 compute_90; every GPU's arch is included");
    fx_gpu("Tesla V100", "sm_70", false);
    fx_run();
    FX_EXPECT("PyTorch archs", DOCTOR_WARN);
    FX_HAS(value, "PyTorch archs", "not for gpu 2 (sm_70)");
    FX_HAS(remedy, "PyTorch archs", "no kernel image is available");

    cr_assert(doctor_torch_runs_on("sm_80", "sm_86"));
    cr_assert(!doctor_torch_runs_on("sm_86", "sm_80"));
    cr_assert(!doctor_torch_runs_on("sm_80 sm_86", "sm_90"));
    cr_assert(doctor_torch_runs_on("sm_90 compute_90", "sm_120"));
    cr_assert(!doctor_torch_runs_on("sm_90", "sm_120"));
    cr_assert(doctor_torch_runs_on("gfx90a gfx942", "gfx90a:sramecc+:xnack-"));
    cr_assert(!doctor_torch_runs_on("gfx90a", "gfx908"));
    cr_assert(!doctor_torch_runs_on("gfx1100", "gfx110"));
}

/* A CUDA build whose library is not there: its archs are not known. */
Test(doctor, torch_cuda_archs_not_known) {
    fx_file("usr/lib/python3.12/site-packages/torch-2.5.1.dist-info/METADATA", "", 0644);
    fx_file("usr/lib/python3.12/site-packages/torch/version.py", "cuda = \"12.4\"\nhip = None\n",
            0644);
    fx_file("usr/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", "not an ELF file", 0644);
    fx_gpu("NVIDIA H100", "sm_90", false);
    fx_run();
    FX_HAS(value, "PyTorch", "(CUDA 12.4)");
    FX_EXPECT("PyTorch archs", DOCTOR_SKIP);
    FX_HAS(value, "PyTorch archs", "not known");
    FX_HAS(remedy, "PyTorch archs", "get_arch_list");
}

/* pip's ROCm wheel: hip in version.py, the archs from the names of the rocBLAS kernel files it
 * carries in torch/lib/rocblas/library. */
Test(doctor, torch_rocm_wheel_archs) {
    const char *lib = "usr/lib/python3.12/site-packages/torch/lib/rocblas/library";
    static const char *const files[] = {
        "TensileLibrary_lazy_gfx90a.dat",
        "Kernels.so-000-gfx942-xnack-.hsaco",
        "TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1100.co",
        "TensileLibrary_lazy_gfx90a.co",
        "notgfx1030.txt",
        "README"};
    char rel[256];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(rel, sizeof(rel), "%s/%s", lib, files[i]);
        fx_file(rel, "", 0644);
    }
    fx_file("usr/lib/python3.12/site-packages/torch-2.5.1+rocm6.2.dist-info/METADATA", "", 0644);
    fx_file("usr/lib/python3.12/site-packages/torch/version.py",
            "__version__ = '2.5.1+rocm6.2'\ncuda: Optional[str] = None\n"
            "hip: Optional[str] = '6.2.41133-dd7f95766'\n",
            0644);
    struct doctor_facts f;
    doctor_facts_read(&fx.e, &f);
    cr_assert_str_eq(f.torch_hip, "6.2.41133-dd7f95766");
    cr_assert_str_empty(f.torch_cuda);
    cr_assert_str_eq(f.torch_archs, "gfx90a gfx942 gfx1100");
    fx_gpu("AMD Radeon RX 7900 XTX", "gfx1100", true);
    fx_run();
    FX_HAS(value, "PyTorch", "(HIP 6.2.41133-dd7f95766)");
    FX_EXPECT("PyTorch archs", DOCTOR_OK);
    fx_gpu("AMD Radeon RX 9070 XT", "gfx1201", true);
    fx_run();
    FX_EXPECT("PyTorch archs", DOCTOR_WARN);
    FX_HAS(value, "PyTorch archs", "not for gpu 1 (gfx1201)");
    FX_HAS(remedy, "PyTorch archs", "invalid device function");
}

/* ---- output ---- */

/* A report of known rows: 2 ok, 1 warn, 1 fail (optionally), 1 skip. */
static void fx_report(struct doctor_report *r, bool with_fail) {
    memset(r, 0, sizeof(*r));
    doctor_add(r, "environment", "kernel", DOCTOR_OK, "6.8.0");
    doctor_add(r, "environment", "ROCm", DOCTOR_OK, "6.2.4 at /opt/rocm");
    doctor_remedy(doctor_add(r, "permissions", "groups", DOCTOR_WARN, "alice is not in video"),
                  "sudo usermod -aG video alice");
    if (with_fail)
        doctor_remedy(
            doctor_add(r, "variables", "PYTORCH_HIP_ALLOC_CONF", DOCTOR_FAIL, "=a|b: broken"),
            "unset it");
    doctor_add(r, "gpus", "gpus", DOCTOR_SKIP, "no GPU found");
}

static char *fx_print(int (*print)(FILE *, const struct doctor_report *),
                      const struct doctor_report *r) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    cr_assert_not_null(m);
    cr_assert_eq(print(m, r), 0);
    fclose(m);
    return buf;
}

static int fx_table_plain(FILE *out, const struct doctor_report *r) {
    return doctor_print_table(out, r, false);
}

static int64_t fx_json_int(json_object *o, const char *key) {
    json_object *v;
    cr_assert(json_object_object_get_ex(o, key, &v), "no '%s'", key);
    return json_object_get_int64(v);
}

Test(doctor, json_output) {
    fx_report(&fx.r, true);
    char *s = fx_print(doctor_print_json, &fx.r);
    json_object *j = json_tokener_parse(s);
    cr_assert_not_null(j, "not JSON:\n%s", s);
    json_object *rows, *sum, *v;
    cr_assert(json_object_object_get_ex(j, "rows", &rows));
    cr_assert_eq(json_object_array_length(rows), 5);
    json_object *fail = json_object_array_get_idx(rows, 3);
    cr_assert(json_object_object_get_ex(fail, "status", &v));
    cr_assert_str_eq(json_object_get_string(v), "fail");
    cr_assert(json_object_object_get_ex(fail, "value", &v));
    cr_assert_str_eq(json_object_get_string(v), "=a|b: broken");
    cr_assert(json_object_object_get_ex(j, "summary", &sum));
    cr_assert_eq(fx_json_int(sum, "ok"), 2);
    cr_assert_eq(fx_json_int(sum, "warn"), 1);
    cr_assert_eq(fx_json_int(sum, "fail"), 1);
    cr_assert_eq(fx_json_int(sum, "skip"), 1);
    cr_assert(json_object_object_get_ex(sum, "result", &v));
    cr_assert_str_eq(json_object_get_string(v), "fail");
    json_object_put(j);
    free(s);
}

Test(doctor, markdown_escapes_pipes) {
    fx_report(&fx.r, true);
    char *s = fx_print(doctor_print_markdown, &fx.r);
    cr_assert(strstr(s, "=a\\|b: broken"), "%s", s);
    cr_assert_null(strstr(s, "=a|b"), "%s", s);
    /* every table line has the same number of unescaped cell separators */
    for (char *line = strstr(s, "\n|"); line; line = strstr(line + 1, "\n|")) {
        int bars = 0;
        for (char *p = line + 1; *p && *p != '\n'; p++)
            bars += *p == '|' && p[-1] != '\\';
        cr_assert_eq(bars, 6, "line: %.80s", line + 1);
    }
    free(s);
}

Test(doctor, table_summary_and_exit_status) {
    fx_report(&fx.r, true);
    char *s = fx_print(fx_table_plain, &fx.r);
    cr_assert(strstr(s, "2 ok, 1 warn, 1 fail, 1 skipped"), "%s", s);
    cr_assert_null(strstr(s, "\033["), "colour codes without colour");
    cr_assert(strstr(s, "sudo usermod -aG video alice"));
    free(s);
    cr_assert_eq(doctor_exit_status(&fx.r), 1);
    fx_report(&fx.r, false);
    cr_assert_eq(doctor_worst(&fx.r), DOCTOR_WARN);
    cr_assert_eq(doctor_exit_status(&fx.r), 0, "warnings alone exit 0");
}

Test(doctor, report_full_counts_dropped) {
    memset(&fx.r, 0, sizeof(fx.r));
    for (int i = 0; i < DOCTOR_MAX_ROWS + 3; i++)
        doctor_remedy(doctor_add(&fx.r, "g", "n", DOCTOR_OK, "%d", i), "x");
    cr_assert_eq(fx.r.n, DOCTOR_MAX_ROWS);
    cr_assert_eq(fx.r.dropped, 3);
}
