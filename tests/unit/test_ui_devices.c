/* Tests for the training devices as the dashboard names, compares and places them. */
#include "tui/view/ui_devices.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

TestSuite(ui_devices, .timeout = 10);

static struct engine_snap ud_snaps[RUN_MAX_DEVICES];
static const struct engine_snap *ud_ptrs[RUN_MAX_DEVICES];

static struct run_info ud_run(unsigned n, const char *name) {
    struct run_info run;
    memset(&run, 0, sizeof(run));
    snprintf(run.dev_name, sizeof(run.dev_name), "%s", name);
    run.n_devices = n;
    for (unsigned k = 0; k < n; k++) {
        run.devices[k] = (uint16_t)(k * 2 + 1); /* 1, 3, 5, ...: indices are not ranks */
        memset(&ud_snaps[k], 0, sizeof(ud_snaps[k]));
        snprintf(ud_snaps[k].dev.name, sizeof(ud_snaps[k].dev.name), "%s", name);
        ud_ptrs[k] = &ud_snaps[k];
    }
    return run;
}

Test(ui_devices, index_of_rank) {
    struct run_info run = ud_run(3, "x");
    cr_assert_eq(ui_dev_index(&run, 0), 1);
    cr_assert_eq(ui_dev_index(&run, 2), 5);
    cr_assert_eq(ui_dev_index(&run, 7), 7); /* past the list: the rank itself */
    cr_assert_eq(ui_dev_index(NULL, 4), 4);
}

Test(ui_devices, label_one_device_as_before) {
    struct run_info run = ud_run(1, "NVIDIA H100");
    char buf[128];
    ui_devices_label(&run, ud_ptrs, 1, buf, sizeof(buf));
    cr_assert_str_eq(buf, "1 device: NVIDIA H100");
    run.n_devices = 0; /* telemetry alone: still one */
    ui_devices_label(&run, NULL, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "1 device: NVIDIA H100");
}

Test(ui_devices, label_same_names_counted) {
    struct run_info run = ud_run(2, "NVIDIA H100");
    char buf[128];
    ui_devices_label(&run, ud_ptrs, 2, buf, sizeof(buf));
    cr_assert_str_eq(buf, "2 devices: NVIDIA H100 x2");
    run = ud_run(4, "host CPU (4 cores)");
    ui_devices_label(&run, ud_ptrs, 4, buf, sizeof(buf));
    cr_assert_str_eq(buf, "4 devices: host CPU (4 cores) x4");
}

Test(ui_devices, label_mixed_names_listed) {
    struct run_info run = ud_run(3, "MI300X");
    snprintf(ud_snaps[1].dev.name, sizeof(ud_snaps[1].dev.name), "MI250");
    char buf[128];
    ui_devices_label(&run, ud_ptrs, 3, buf, sizeof(buf));
    cr_assert_str_eq(buf, "3 devices: MI300X x2, MI250");
    /* a device without a snapshot takes the run's name */
    ui_devices_label(&run, ud_ptrs, 2, buf, sizeof(buf));
    cr_assert_str_eq(buf, "3 devices: MI300X x2, MI250");
    int len = ui_devices_label(&run, ud_ptrs, 3, buf, 8);
    cr_assert_eq(len, (int)strlen("3 devices: MI300X x2, MI250"));
    cr_assert_str_eq(buf, "3 devic");
}

Test(ui_devices, skew_names_the_slowest) {
    struct run_info run = ud_run(4, "x");
    (void)run;
    struct ui_skew sk;
    cr_assert_not(ui_devices_skew(ud_ptrs, 4, &sk)); /* no step times yet */
    ud_snaps[0].step_ms = 10.0;
    cr_assert_not(ui_devices_skew(ud_ptrs, 4, &sk)); /* one is no spread */
    ud_snaps[1].step_ms = 14.5;
    ud_snaps[2].step_ms = 9.0;
    cr_assert(ui_devices_skew(ud_ptrs, 4, &sk));
    cr_assert_eq(sk.slow, 1);
    cr_assert_eq(sk.fast, 2);
    cr_assert_float_eq(sk.skew_ms, 5.5, 1e-9);
    ud_ptrs[1] = NULL; /* a device the source has no snapshot for is left out */
    cr_assert(ui_devices_skew(ud_ptrs, 4, &sk));
    cr_assert_eq(sk.slow, 0);
    cr_assert_float_eq(sk.skew_ms, 1.0, 1e-9);
}

Test(ui_devices, window_keeps_the_selection_in_view) {
    unsigned shown, first;
    first = ui_devices_window(2, 4, 1, &shown);
    cr_assert_eq(first, 0);
    cr_assert_eq(shown, 2);
    first = ui_devices_window(8, 3, 0, &shown);
    cr_assert_eq(first, 0);
    cr_assert_eq(shown, 3);
    first = ui_devices_window(8, 3, 5, &shown);
    cr_assert_eq(shown, 3);
    cr_assert(first <= 5 && 5 < first + shown);
    first = ui_devices_window(8, 3, 7, &shown);
    cr_assert_eq(first, 5);
    first = ui_devices_window(8, 0, 7, &shown); /* no room still shows the selected one */
    cr_assert_eq(shown, 1);
    cr_assert_eq(first, 7);
    for (unsigned n = 1; n <= 8; n++)
        for (unsigned room = 1; room <= 9; room++)
            for (unsigned sel = 0; sel < n; sel++) {
                first = ui_devices_window(n, room, sel, &shown);
                cr_assert(first + shown <= n);
                cr_assert(first <= sel && sel < first + shown, "n %u room %u sel %u", n, room, sel);
                cr_assert_eq(shown, n < room ? n : room);
            }
}

Test(ui_devices, columns_fit_the_width) {
    cr_assert_eq(ui_devices_columns(78, 38, 2), 2); /* 80 columns: two side by side */
    cr_assert_eq(ui_devices_columns(78, 38, 4), 2);
    cr_assert_eq(ui_devices_columns(76, 38, 2), 1);
    cr_assert_eq(ui_devices_columns(198, 38, 4), 4);
    cr_assert_eq(ui_devices_columns(198, 38, 8), 5);
    cr_assert_eq(ui_devices_columns(10, 38, 8), 1);
    cr_assert_eq(ui_devices_columns(100, 38, 1), 1);
    cr_assert_eq(ui_devices_columns(100, 38, 0), 1);
}

Test(ui_devices, more_mark) {
    char buf[16];
    ui_devices_more(3, buf, sizeof(buf));
    cr_assert_str_eq(buf, "+3 more");
    ui_devices_more(0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "");
}

Test(ui_devices, fit_marks_every_cut) {
    char buf[64];
    cr_assert_eq(ui_devices_fit(buf, sizeof(buf), "replay 2.0x", 20), 11);
    cr_assert_str_eq(buf, "replay 2.0x");
    ui_devices_fit(buf, sizeof(buf), "replay 2.0x", 8);
    cr_assert_str_eq(buf, "replay..");
    ui_devices_fit(buf, sizeof(buf), "replay 2.0x", 2);
    cr_assert_str_eq(buf, "..");
    ui_devices_fit(buf, sizeof(buf), "replay 2.0x", 0);
    cr_assert_str_eq(buf, "");
}

Test(ui_devices, label_fit_keeps_the_count_and_marks_the_names) {
    struct run_info run = ud_run(8, "NVIDIA H100 80GB HBM3");
    char buf[128];
    ui_devices_label_fit(&run, ud_ptrs, 8, 40, buf, sizeof(buf));
    cr_assert_str_eq(buf, "8 devices: NVIDIA H100 80GB HBM3 x8"); /* fits whole */
    ui_devices_label_fit(&run, ud_ptrs, 8, 30, buf, sizeof(buf));
    cr_assert_str_eq(buf, "8 devices: NVIDIA H100 80.. x8");
    ui_devices_label_fit(&run, ud_ptrs, 8, 14, buf, sizeof(buf));
    cr_assert_str_eq(buf, "8 devices: ..");
    ui_devices_label_fit(&run, ud_ptrs, 8, 6, buf, sizeof(buf));
    cr_assert_str_eq(buf, "8 de..");
    /* at every width: never longer, and shorter only with the mark */
    for (int w = 0; w <= 40; w++) {
        int len = ui_devices_label_fit(&run, ud_ptrs, 8, w, buf, sizeof(buf));
        cr_assert_eq(len, (int)strlen(buf));
        cr_assert_leq(len, w, "width %d: %s", w, buf);
        if (w >= 3 && w < 35)
            cr_assert_not_null(strstr(buf, ".."), "width %d: %s", w, buf);
    }
    /* mixed names: each cut to the same length, every count kept */
    snprintf(ud_snaps[7].dev.name, sizeof(ud_snaps[7].dev.name), "AMD Instinct MI300X");
    ui_devices_label_fit(&run, ud_ptrs, 8, 36, buf, sizeof(buf));
    cr_assert_str_eq(buf, "8 devices: NVIDIA H.. x7, AMD Inst..");
}

Test(ui_devices, header_gives_way_host_first_then_status_then_names) {
    struct run_info run = ud_run(8, "NVIDIA H100 80GB HBM3");
    snprintf(run.host, sizeof(run.host), "gpu-node-017.cluster.example.com");
    snprintf(run.backend, sizeof(run.backend), "cuda");
    char buf[256];
    /* the host is cut first, to its least; the label stays whole while that makes room */
    int len = ui_devices_header(&run, ud_ptrs, 8, "", 51, buf, sizeof(buf));
    cr_assert_eq(len, 51, "%s", buf);
    cr_assert_str_eq(buf, "  gpu-..  cuda  8 devices: NVIDIA H100 80GB HBM3 x8");
    ui_devices_header(&run, ud_ptrs, 8, "", 56, buf, sizeof(buf));
    cr_assert_str_eq(buf, "  gpu-node-..  cuda  8 devices: NVIDIA H100 80GB HBM3 x8");
    /* 80 columns leave 50 for the run line: then the names give one column */
    ui_devices_header(&run, ud_ptrs, 8, "", 50, buf, sizeof(buf));
    cr_assert_str_eq(buf, "  gpu-..  cuda  8 devices: NVIDIA H100 80GB H.. x8");
    /* a status: cut with its mark where the label leaves room for part of it */
    ui_devices_header(&run, ud_ptrs, 8, "stopped at line 17: bad json", 60, buf, sizeof(buf));
    cr_assert_str_eq(buf, "  gpu-..  cuda  8 devices: NVIDIA H100 80GB HBM3 x8  stopp..");
    /* no room for it: the mark alone, and the names shortened */
    ui_devices_header(&run, ud_ptrs, 8, "stopped at line 17: bad json", 40, buf, sizeof(buf));
    cr_assert_str_eq(buf, "  gpu-..  cuda  8 devices: NVID.. x8  ..");
    /* wide: everything whole */
    ui_devices_header(&run, ud_ptrs, 8, "replay 2.0x", 120, buf, sizeof(buf));
    cr_assert_str_eq(
        buf, "  gpu-node-017.cluster.example.com  cuda  8 devices: NVIDIA H100 80GB HBM3 x8  "
             "replay 2.0x");
    for (int w = 30; w <= 120; w++) { /* 30: the run line of a 60-column screen */
        len = ui_devices_header(&run, ud_ptrs, 8, "replay 2.0x", w, buf, sizeof(buf));
        cr_assert_leq(len, w, "width %d: %s", w, buf);
        cr_assert_not_null(strstr(buf, "8 de"), "width %d: %s", w, buf);
    }
}

Test(ui_devices, sync_line_leaves_out_what_does_not_fit_whole) {
    struct run_info run = ud_run(2, "x"); /* rank 1 is dev3 */
    struct engine_snap *s = &ud_snaps[1];
    s->step_ms = 12.1;
    s->sync[0].count = 120;
    s->sync[0].p99_ns = 1200000;
    s->coll[EV_COLL_ALLREDUCE] =
        (struct comm_op_stats){.calls = 14, .p50_ns = 310000, .p99_ns = 1100000};
    char buf[256];
    ui_devices_sync_line(s, &run, 1, 0, true, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "dev3* step 12.1ms  sync x120 p99 1.2ms  allreduce x14 p50 310.0us "
                          "p99 1.1ms");
    ui_devices_sync_line(s, &run, 1, 0, false, 60, buf, sizeof(buf));
    cr_assert_str_eq(buf, "dev3  step 12.1ms  sync x120 p99 1.2ms");
    ui_devices_sync_line(s, &run, 1, 0, false, 10, buf, sizeof(buf));
    cr_assert_str_eq(buf, "dev3 ");
}

Test(ui_devices, columns_at_the_dashboard_widths) {
    /* the memory panel's 34-column cells: 80 columns hold 2, a 120-column panel 3, half of
     * 200 columns 2 */
    cr_assert_eq(ui_devices_columns(78, 34, 8), 2);
    cr_assert_eq(ui_devices_columns(118, 34, 8), 3);
    cr_assert_eq(ui_devices_columns(98, 34, 8), 2);
    cr_assert_eq(ui_devices_columns(118, 34, 2), 2);
}

/* Two watched jobs as ranks 0 and 1 of a gloo group on this host (pids 4242, 4243). */
static struct run_info ud_ranks(unsigned n, int32_t world) {
    struct run_info run = ud_run(n, "CPU");
    snprintf(run.host, sizeof(run.host), "box");
    run.watch = true;
    for (unsigned k = 0; k < n; k++) {
        run.devices[k] = 0; /* every CPU job is its device 0 */
        struct run_rank *r = &run.ranks[k];
        *r = (struct run_rank){.valid = true,
                               .rank = (int32_t)k,
                               .local_rank = (int32_t)k,
                               .world_size = world,
                               .pid = 4242 + (int32_t)k,
                               .open = true};
        snprintf(r->name, sizeof(r->name), "train_ddp");
        snprintf(r->host, sizeof(r->host), "box");
        snprintf(r->group_backend, sizeof(r->group_backend), "gloo");
    }
    return run;
}

Test(ui_devices, a_watched_job_is_named_as_its_script_knows_it) {
    struct run_info run = ud_ranks(2, 2);
    char buf[96];
    ui_devices_name(&run, 1, true, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2");
    ui_devices_name(&run, 1, false, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1");
    run.ranks[1].world_size = 0; /* not told: the rank alone */
    ui_devices_name(&run, 1, true, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1");
    /* in no process group: its name, with its pid where another job has the same */
    run.ranks[0].rank = run.ranks[1].rank = -1;
    ui_devices_name(&run, 0, true, buf, sizeof(buf));
    cr_assert_str_eq(buf, "train_ddp pid 4242");
    snprintf(run.ranks[1].name, sizeof(run.ranks[1].name), "eval.py");
    ui_devices_name(&run, 0, true, buf, sizeof(buf));
    cr_assert_str_eq(buf, "train_ddp");
    ui_devices_name(&run, 1, true, buf, sizeof(buf));
    cr_assert_str_eq(buf, "eval.py");
    /* a device of ours, or past the list, as it always was */
    struct run_info ours = ud_run(2, "x");
    ui_devices_name(&ours, 1, true, buf, sizeof(buf));
    cr_assert_str_eq(buf, "dev3");
    ui_devices_name(&run, 5, true, buf, sizeof(buf));
    cr_assert_str_eq(buf, "dev5");
}

Test(ui_devices, name_fit_gives_up_the_world_size_then_cuts) {
    struct run_info run = ud_ranks(2, 16);
    run.ranks[1].rank = 12;
    char buf[32];
    ui_devices_name_fit(&run, 1, 10, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 12/16");
    ui_devices_name_fit(&run, 1, 9, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 12");
    ui_devices_name_fit(&run, 1, 5, buf, sizeof(buf));
    cr_assert_str_eq(buf, "ran..");
    run.ranks[1].rank = -1;
    snprintf(run.ranks[1].name, sizeof(run.ranks[1].name), "a_rather_long_script_name");
    ui_devices_name_fit(&run, 1, 9, buf, sizeof(buf));
    cr_assert_str_eq(buf, "a_rathe..");
}

Test(ui_devices, who_says_more_where_there_is_room) {
    struct run_info run = ud_ranks(2, 2);
    char buf[160];
    ui_devices_who(&run, 1, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2  local 1  pid 4243  gloo"); /* its host is this one */
    snprintf(run.ranks[1].host, sizeof(run.ranks[1].host), "node2");
    ui_devices_who(&run, 1, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2  local 1  host node2  pid 4243  gloo");
    /* narrower: the local rank goes first, then the backend, the pid, the host */
    ui_devices_who(&run, 1, 40, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2  host node2  pid 4243  gloo");
    ui_devices_who(&run, 1, 30, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2  host node2  pid 4243");
    ui_devices_who(&run, 1, 20, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2  host node2");
    ui_devices_who(&run, 1, 12, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2");
    ui_devices_who(&run, 1, 7, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1");
    for (int w = 1; w <= 60; w++)
        cr_assert_leq(ui_devices_who(&run, 1, w, buf, sizeof(buf)), w, "width %d: %s", w, buf);
    /* what is not known is left out; a device of ours has nothing more */
    run.ranks[1] = (struct run_rank){.valid = true, .rank = 1, .local_rank = -1};
    ui_devices_who(&run, 1, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1");
    struct run_info ours = ud_run(2, "x");
    ui_devices_who(&ours, 0, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "dev1");
}

Test(ui_devices, header_counts_ranks_and_jobs) {
    struct run_info run = ud_ranks(2, 2);
    char buf[128];
    ui_devices_label(&run, ud_ptrs, 2, buf, sizeof(buf));
    cr_assert_str_eq(buf, "2 ranks (gloo): CPU x2");
    run = ud_ranks(2, 4); /* two of a world of four attached */
    snprintf(run.ranks[1].group_backend, sizeof(run.ranks[1].group_backend), "nccl");
    ui_devices_label(&run, ud_ptrs, 2, buf, sizeof(buf));
    cr_assert_str_eq(buf, "2 of 4 ranks: CPU x2", "backends differ: none said");
    run = ud_ranks(1, 1);
    ui_devices_label(&run, ud_ptrs, 1, buf, sizeof(buf));
    cr_assert_str_eq(buf, "1 rank (gloo): CPU");
    run = ud_ranks(3, 2);
    run.ranks[2].rank = -1;
    ui_devices_label(&run, ud_ptrs, 3, buf, sizeof(buf));
    cr_assert_str_eq(buf, "3 jobs, 2 ranks (gloo): CPU x3");
    run.ranks[0].rank = run.ranks[1].rank = -1;
    ui_devices_label(&run, ud_ptrs, 3, buf, sizeof(buf));
    cr_assert_str_eq(buf, "3 jobs: CPU x3");
    ui_devices_label_fit(&run, ud_ptrs, 3, 10, buf, sizeof(buf));
    cr_assert_str_eq(buf, "3 jobs: ..");
}

Test(ui_devices, sync_line_of_a_rank) {
    struct run_info run = ud_ranks(2, 2);
    struct engine_snap *s = &ud_snaps[1];
    s->step_ms = 22.4;
    s->sync[0].count = 252;
    s->sync[0].p99_ns = 3100000;
    s->coll[EV_COLL_ALLREDUCE] =
        (struct comm_op_stats){.calls = 252, .p50_ns = 2100000, .p99_ns = 3500000};
    char buf[256];
    ui_devices_sync_line(s, &run, 1, 8, true, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2* step 22.4ms  sync x252 p99 3.1ms  allreduce x252 p50 2.1ms "
                          "p99 3.5ms  local 1  pid 4243  gloo");
    /* who it is takes what the figures leave, never a figure's place */
    ui_devices_sync_line(s, &run, 1, 8, false, 90, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2  step 22.4ms  sync x252 p99 3.1ms  allreduce x252 p50 2.1ms "
                          "p99 3.5ms  pid 4243");
    ui_devices_sync_line(s, &run, 1, 8, false, 60, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1/2  step 22.4ms  sync x252 p99 3.1ms");
    /* names padded to one column */
    run.ranks[1].world_size = 0;
    ui_devices_sync_line(s, &run, 1, 8, false, 30, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 1    step 22.4ms");
}

Test(ui_devices, skew_line_names_the_ranks) {
    struct run_info run = ud_ranks(2, 2);
    struct ui_skew sk = {.slow = 1, .fast = 0, .slow_ms = 22.53, .fast_ms = 21.36, .skew_ms = 1.17};
    char buf[128];
    ui_devices_skew_line(&sk, &run, buf, sizeof(buf));
    cr_assert_str_eq(buf, "step skew 1.17ms: rank 1 slowest (22.53ms vs 21.36ms on rank 0)");
    struct run_info ours = ud_run(2, "x");
    ui_devices_skew_line(&sk, &ours, buf, sizeof(buf));
    cr_assert_str_eq(buf, "step skew 1.17ms: dev3 slowest (22.53ms vs 21.36ms on dev1)");
}
