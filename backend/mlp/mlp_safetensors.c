/* The safetensors writer: the header names every layer's tensors with its dtype, shape and
 * byte range; the data follows in the same order. See mlp_safetensors.h. */
#include "backend/mlp/mlp_safetensors.h"

#include "backend/core/afile.h"
#include "backend/core/errbuf.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One tensor's header entry: F32, shape (1 or 2 dims), bytes [*off, *off + its size). */
static void mlp_st_entry(json_object *h, const char *name, int d0, int d1, size_t *off) {
    json_object *t = json_object_new_object(), *shape = json_object_new_array(),
                *range = json_object_new_array();
    json_object_array_add(shape, json_object_new_int(d0));
    if (d1 > 0)
        json_object_array_add(shape, json_object_new_int(d1));
    size_t bytes = (size_t)d0 * (size_t)(d1 > 0 ? d1 : 1) * sizeof(float);
    json_object_array_add(range, json_object_new_int64((int64_t)*off));
    json_object_array_add(range, json_object_new_int64((int64_t)(*off + bytes)));
    json_object_object_add(t, "dtype", json_object_new_string("F32"));
    json_object_object_add(t, "shape", shape);
    json_object_object_add(t, "data_offsets", range);
    json_object_object_add(h, name, t);
    *off += bytes;
}

void mlp_f32le_encode(uint8_t *dst, const double *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float f = (float)src[i];
        uint32_t u;
        memcpy(&u, &f, sizeof(u));
        for (int b = 0; b < 4; b++)
            dst[4 * i + (size_t)b] = (uint8_t)(u >> (8 * b));
    }
}

int mlp_safetensors_encode(const struct mlp_ckpt *ck, const char *metadata, uint8_t **out,
                           size_t *out_len) {
    const struct mlp_arch *a = &ck->arch;
    int layers = a->n_hidden + 1;
    json_object *h = json_object_new_object(), *md = json_object_new_object();
    char num[40];
    json_object_object_add(md, "format", json_object_new_string("pt"));
    snprintf(num, sizeof(num), "%.17g", ck->y_mean);
    json_object_object_add(md, "target_mean", json_object_new_string(num));
    snprintf(num, sizeof(num), "%.17g", ck->y_std);
    json_object_object_add(md, "target_std", json_object_new_string(num));
    if (metadata)
        json_object_object_add(md, "ringside", json_object_new_string(metadata));
    json_object_object_add(h, "__metadata__", md);
    size_t data = 0;
    char name[32];
    for (int l = 0; l < layers; l++) {
        snprintf(name, sizeof(name), "%d.weight", 2 * l);
        mlp_st_entry(h, name, mlp_layer_out(a, l), mlp_layer_in(a, l), &data);
        snprintf(name, sizeof(name), "%d.bias", 2 * l);
        mlp_st_entry(h, name, mlp_layer_out(a, l), 0, &data);
    }
    const char *text =
        json_object_to_json_string_ext(h, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t hlen = strlen(text), padded = (hlen + 7) / 8 * 8; /* the data starts 8-aligned */
    size_t total = 8 + padded + data;
    uint8_t *buf = malloc(total);
    int rc = buf ? 0 : -ENOMEM;
    if (rc == 0) {
        for (int b = 0; b < 8; b++)
            buf[b] = (uint8_t)((uint64_t)padded >> (8 * b));
        memcpy(buf + 8, text, hlen);
        memset(buf + 8 + hlen, ' ', padded - hlen);
        uint8_t *p = buf + 8 + padded;
        for (int l = 0; l < layers; l++) {
            size_t nw = (size_t)mlp_layer_out(a, l) * (size_t)mlp_layer_in(a, l);
            mlp_f32le_encode(p, ck->params + mlp_layer_w_offset(a, l), nw);
            p += 4 * nw;
            mlp_f32le_encode(p, ck->params + mlp_layer_b_offset(a, l), (size_t)mlp_layer_out(a, l));
            p += 4 * (size_t)mlp_layer_out(a, l);
        }
    }
    json_object_put(h);
    *out = buf;
    *out_len = rc == 0 ? total : 0;
    return rc;
}

int mlp_safetensors_write(const char *path, const struct mlp_ckpt *ck, const char *metadata,
                          char *err, size_t errlen) {
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = mlp_safetensors_encode(ck, metadata, &buf, &len);
    rc = rc ? errbuf_set(err, errlen, rc, "%s: out of memory", path)
            : afile_write_all(path, buf, len, err, errlen);
    free(buf);
    return rc;
}
