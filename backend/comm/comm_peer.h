/* The NCCL communicator's direct path: small all-reduces between devices of this process that
 * reach each other's memory go through one kernel of ours (kernels/gpu_peer.hip) instead of
 * the library, a few microseconds where a library collective takes ten or more. Compiled in
 * with the GPU kernels (RS_COMM_PEER); without them every function here reports the path off.
 * The path is decided at init, the same way on every rank, and never changes for the group. */
#ifndef RINGSIDE_BACKEND_COMM_COMM_PEER_H
#define RINGSIDE_BACKEND_COMM_COMM_PEER_H

#include "backend/comm/comm_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One rank's side, its device's memory. Written by the rank before the init rendezvous that
 * publishes it; read by every rank after it. */
struct comm_peer_rank {
    int dev;                 /* the rank's device; -1 when it has none */
    int rc;                  /* its setup and enabling: 0, or the runtime's error */
    void *stage;             /* two halves of comm_peer.half_bytes */
    uint32_t *flags;         /* RS_GPU_PEER_FLAG_BYTES, zeroed */
    uint32_t *_Atomic abort; /* mapped host word: non-zero stops the kernels' waits (atomic:
                                comm_peer_abort reads it from any thread) */
    void *done;              /* an event recorded after the rank's latest all-reduce of this path */
    uint32_t seq;            /* the rank's all-reduces on this path so far */
    bool on;                 /* the group's decision, as this rank took it at init (every rank
                                reads the same published answers, so every rank takes the same) */
};

struct comm_peer {
    size_t half_bytes; /* the largest message the path takes (rounded up to 256); 0: off */
    struct comm_peer_rank rank[COMM_MAX_RANKS];
};

/* Set up this rank (on its thread, its device current) once the library's group has formed,
 * meeting the other ranks on rdv three times (the buffers published, every rank's reach of the
 * others tried, the answers published). 0 with the rank's `on` decided (off is not an error: the
 * library takes every size), or the rendezvous's error (a rank that never came, a failed group).
 * max_bytes 0, or a build whose devices cannot do it: off on every rank, without a rendezvous. */
int comm_peer_join(struct comm *c, struct comm_peer *p, struct comm_rdv *rdv, unsigned rank,
                   size_t max_bytes, uint64_t deadline_ns, char *err, size_t errlen);

/* Whether rank's all-reduce of count elements of dt takes this path (after its join). */
bool comm_peer_takes(const struct comm_peer *p, unsigned rank, size_t count, enum comm_dtype dt);

/* Enqueue the all-reduce on stream (the rank's all-reduces must run in the order they are
 * called: one stream, or streams the caller orders). 0 or -EIO with the runtime's text. */
int comm_peer_allreduce(struct comm_peer *p, unsigned rank, unsigned n_ranks, void *buf,
                        size_t count, enum comm_dtype dt, enum comm_red red, void *stream,
                        char *err, size_t errlen);

/* Stop every rank's kernels that wait for a peer (after the group failed). Any thread. */
void comm_peer_abort(struct comm_peer *p, unsigned n_ranks);

/* Free what every rank set up, once no rank is in a call. Memory a kernel may still use (one
 * queued behind a hung kernel) is left allocated rather than freed under it. */
void comm_peer_free(struct comm_peer *p, unsigned n_ranks);

#endif
