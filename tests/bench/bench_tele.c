/* Telemetry cost: sample every provider N times back to back and print, per provider, the mean
 * and max time of one sample and the time per GPU (key=value lines). Usage:
 *   bench_tele [SAMPLES] [PROVIDERS]      e.g. bench_tele 500 nvml */
#include "backend/telemetry/tele.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 200;
    struct tele_conf c;
    tele_conf_default(&c);
    if (argc > 2)
        snprintf(c.only, sizeof(c.only), "%s", argv[2]);
    struct tele *t = NULL;
    char err[256];
    if (n < 1 || tele_create(&t, &c, NULL, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_tele: %s\n", n < 1 ? "SAMPLES must be >= 1" : err);
        return 2;
    }
    tele_sample_now(t); /* warm-up: first-sample work (rates, caches) is not the steady cost */
    const struct tele_snap *s = tele_snap_read(t, NULL);
    uint64_t base[TELE_MAX_PROVIDERS];
    for (unsigned k = 0; k < s->n_prov; k++)
        base[k] = s->prov[k].total_sample_ns;
    for (long i = 0; i < n; i++)
        tele_sample_now(t);
    s = tele_snap_read(t, NULL);
    printf("samples=%ld gpus=%u\n", n, s->n_gpus);
    for (unsigned k = 0; k < s->n_prov; k++) {
        const struct tele_prov_info *p = &s->prov[k];
        if (p->status == TELE_UNAVAILABLE) {
            printf("provider=%s status=unavailable reason=\"%s\"\n", p->name, p->reason);
            continue;
        }
        double mean_us = (double)(p->total_sample_ns - base[k]) / (double)n / 1e3;
        printf("provider=%s status=%s gpus=%u mean_us=%.2f max_us=%.2f per_gpu_us=%.2f\n", p->name,
               tele_status_name(p->status), p->n_gpus, mean_us, (double)p->max_sample_ns / 1e3,
               p->n_gpus ? mean_us / p->n_gpus : mean_us);
    }
    tele_destroy(t);
    return 0;
}
