/* The NVML provider's background thread: waits for Xid events and turns them into readable
 * events, and refreshes the PCIe rates, which NVML measures over 20 ms per call and so cannot
 * be read on the sampling path. */
#include "backend/core/mono.h"
#include "backend/telemetry/tele_nvml_internal.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#define TELE_NVML_EVENTS_WAIT_MS 500u          /* bound on how long close waits for the thread */
#define TELE_NVML_EVENTS_PCIE_NS 1000000000ull /* the PCIe rates and link, once a second */

/* The Xids a training box meets, worded as NVIDIA's Xid catalog words them ("Xid Errors",
 * https://docs.nvidia.com/deploy/xid-errors/, and its catalog for Ampere and newer,
 * https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html). */
static const struct {
    unsigned int xid;
    const char *text;
} tele_nvml_events_xids[] = {
    {13, "Graphics Engine Exception"},
    {31, "GPU memory page fault"},
    {32, "Invalid or corrupted push buffer stream"},
    {43, "GPU stopped processing"},
    {45, "Preemptive cleanup, due to previous errors"},
    {48, "Double Bit ECC Error"},
    {61, "Internal micro-controller breakpoint/warning"},
    {62, "Internal micro-controller halt"},
    {63, "ECC page retirement or row remapping recording event"},
    {64, "ECC page retirement or row remapper recording failure"},
    {68, "NVDEC0 Exception"},
    {69, "Graphics Engine class error"},
    {74, "NVLink Error"},
    {79, "GPU has fallen off the bus"},
    {92, "High single-bit ECC error rate"},
    {94, "Contained ECC error"},
    {95, "Uncontained ECC error"},
    {119, "GSP RPC Timeout"},
    {120, "GSP Error"},
};

void tele_nvml_events_xid_text(unsigned long long xid, char *out, size_t cap) {
    for (size_t i = 0; i < sizeof(tele_nvml_events_xids) / sizeof(tele_nvml_events_xids[0]); i++)
        if (tele_nvml_events_xids[i].xid == xid) {
            snprintf(out, cap, "NVIDIA Xid %llu: %s", xid, tele_nvml_events_xids[i].text);
            return;
        }
    snprintf(out, cap, "NVIDIA Xid %llu", xid);
}

void tele_nvml_events_read_pcie(struct tele_nvml *s) {
    for (unsigned int i = 0; i < s->n_devs; i++) {
        struct tele_nvml_dev *d = &s->devs[i];
        unsigned int tx = 0, rx = 0;
        bool tx_ok = s->fn.get_pcie_tput && s->fn.get_pcie_tput(d->h, TELE_NVML_PCIE_UTIL_TX_BYTES,
                                                                &tx) == TELE_NVML_SUCCESS;
        bool rx_ok = s->fn.get_pcie_tput && s->fn.get_pcie_tput(d->h, TELE_NVML_PCIE_UTIL_RX_BYTES,
                                                                &rx) == TELE_NVML_SUCCESS;
        unsigned int gen = 0, width = 0;
        bool gen_ok = s->fn.get_link_gen && s->fn.get_link_gen(d->h, &gen) == TELE_NVML_SUCCESS;
        bool width_ok =
            s->fn.get_link_width && s->fn.get_link_width(d->h, &width) == TELE_NVML_SUCCESS;
        pthread_mutex_lock(&s->w.mu);
        d->link_gen = gen;
        d->link_width = width;
        d->link_gen_valid = gen_ok;
        d->link_width_valid = width_ok;
        d->tx_kb_per_s = tx;
        d->rx_kb_per_s = rx;
        d->tx_valid = tx_ok;
        d->rx_valid = rx_ok;
        pthread_mutex_unlock(&s->w.mu);
    }
}

static void tele_nvml_events_deliver(const struct tele_nvml *s,
                                     const struct tele_nvml_event_data *e) {
    if (!(e->event_type & TELE_NVML_EVENT_XID_CRITICAL))
        return;
    const char *pci = "";
    for (unsigned int i = 0; i < s->n_devs; i++)
        if (s->devs[i].h == e->device)
            pci = s->devs[i].pci;
    char text[96];
    tele_nvml_events_xid_text(e->event_data, text, sizeof(text));
    s->ctx->emit(s->ctx, SEV_ERROR, pci, text);
}

static void tele_nvml_events_wait(struct tele_nvml *s) {
    if (s->events) {
        struct tele_nvml_event_data e = {0};
        int rc = s->fn.event_set_wait(s->events, &e, TELE_NVML_EVENTS_WAIT_MS);
        if (rc == TELE_NVML_SUCCESS)
            tele_nvml_events_deliver(s, &e);
        if (rc == TELE_NVML_SUCCESS || rc == TELE_NVML_ERROR_TIMEOUT)
            return;
    }
    /* no event set, or its wait failed: a lost GPU must not turn the loop into a spin */
    worker_nap(&s->w, (uint64_t)TELE_NVML_EVENTS_WAIT_MS * 1000000ull);
}

static void *tele_nvml_events_main(void *arg) {
    struct tele_nvml *s = arg;
    uint64_t next_pcie = mono_now_ns() + TELE_NVML_EVENTS_PCIE_NS; /* open read them once */
    while (!worker_stopping(&s->w)) {
        if (mono_now_ns() >= next_pcie) {
            tele_nvml_events_read_pcie(s);
            next_pcie = mono_now_ns() + TELE_NVML_EVENTS_PCIE_NS;
        }
        tele_nvml_events_wait(s);
    }
    return NULL;
}

/* Xid events need an event set with every GPU registered. Where that fails (old drivers,
 * vGPU guests, GPUs that do not report Xids) the provider simply has no events: that is not
 * an error, the thread still refreshes the PCIe rates. */
static void tele_nvml_events_register(struct tele_nvml *s) {
    const struct tele_nvml_fns *fn = &s->fn;
    if (!fn->event_set_create || !fn->register_events || !fn->event_set_wait ||
        !fn->event_set_free || fn->event_set_create(&s->events) != TELE_NVML_SUCCESS) {
        s->events = NULL;
        return;
    }
    unsigned int registered = 0;
    for (unsigned int i = 0; i < s->n_devs; i++)
        registered += fn->register_events(s->devs[i].h, TELE_NVML_EVENT_XID_CRITICAL, s->events) ==
                      TELE_NVML_SUCCESS;
    if (registered == 0) {
        fn->event_set_free(s->events);
        s->events = NULL;
    }
}

int tele_nvml_events_start(struct tele_nvml *s) {
    tele_nvml_events_register(s);
    return worker_start(&s->w, tele_nvml_events_main, s);
}

void tele_nvml_events_stop(struct tele_nvml *s) {
    worker_fini(&s->w);
    if (s->events) {
        s->fn.event_set_free(s->events);
        s->events = NULL;
    }
}
