/* The ONNX writer: the protobuf messages of onnx.proto (ModelProto, GraphProto, NodeProto,
 * TensorProto, ValueInfoProto), encoded field by field with their numbers from onnx.proto. */
#include "backend/model/model_onnx.h"

#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/pbuf.h"
#include "backend/mlp/mlp_safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ONNX_IR_VERSION 7
#define ONNX_OPSET      13
#define ONNX_FLOAT      1 /* TensorProto.DataType FLOAT */
#define ONNX_ATTR_INT   2 /* AttributeProto.AttributeType INT */

/* Field numbers of onnx.proto. */
enum {
    MODEL_IR_VERSION = 1,
    MODEL_PRODUCER_NAME = 2,
    MODEL_PRODUCER_VERSION = 3,
    MODEL_DOC = 6,
    MODEL_GRAPH = 7,
    MODEL_OPSET = 8,
    MODEL_METADATA = 14,
    OPSET_VERSION = 2,
    GRAPH_NODE = 1,
    GRAPH_NAME = 2,
    GRAPH_INITIALIZER = 5,
    GRAPH_INPUT = 11,
    GRAPH_OUTPUT = 12,
    NODE_INPUT = 1,
    NODE_OUTPUT = 2,
    NODE_NAME = 3,
    NODE_OP = 4,
    NODE_ATTR = 5,
    ATTR_NAME = 1,
    ATTR_I = 3,
    ATTR_TYPE = 20,
    TENSOR_DIMS = 1,
    TENSOR_TYPE = 2,
    TENSOR_NAME = 8,
    TENSOR_RAW = 9,
    VALUE_NAME = 1,
    VALUE_TYPE = 2,
    TYPE_TENSOR = 1,
    TTENSOR_ELEM = 1,
    TTENSOR_SHAPE = 2,
    SHAPE_DIM = 1,
    DIM_VALUE = 1,
    DIM_PARAM = 2,
    ENTRY_KEY = 1,
    ENTRY_VALUE = 2,
};

/* A node of up to two inputs; transb sets Gemm's transB = 1. */
static void onnx_node(struct pbuf *g, const char *op, const char *name, const char *in0,
                      const char *in1, const char *in2, const char *out, bool transb) {
    struct pbuf n = {0};
    const char *ins[] = {in0, in1, in2};
    for (int i = 0; i < 3; i++)
        if (ins[i])
            pbuf_str(&n, NODE_INPUT, ins[i]);
    pbuf_str(&n, NODE_OUTPUT, out);
    pbuf_str(&n, NODE_NAME, name);
    pbuf_str(&n, NODE_OP, op);
    if (transb) {
        struct pbuf a = {0};
        pbuf_str(&a, ATTR_NAME, "transB");
        pbuf_varint(&a, ATTR_I, 1);
        pbuf_varint(&a, ATTR_TYPE, ONNX_ATTR_INT);
        pbuf_msg(&n, NODE_ATTR, &a);
        pbuf_fini(&a);
    }
    pbuf_msg(g, GRAPH_NODE, &n);
    pbuf_fini(&n);
}

/* A float32 initializer of shape [d0] or [d0, d1] (d1 0) from doubles. */
static void onnx_tensor(struct pbuf *g, const char *name, const double *v, int d0, int d1) {
    size_t count = (size_t)d0 * (size_t)(d1 > 0 ? d1 : 1);
    uint8_t *raw = malloc(4 * count);
    struct pbuf t = {.oom = raw == NULL};
    pbuf_varint(&t, TENSOR_DIMS, d0);
    if (d1 > 0)
        pbuf_varint(&t, TENSOR_DIMS, d1);
    pbuf_varint(&t, TENSOR_TYPE, ONNX_FLOAT);
    pbuf_str(&t, TENSOR_NAME, name);
    if (raw) {
        mlp_f32le_encode(raw, v, count);
        pbuf_bytes(&t, TENSOR_RAW, raw, 4 * count);
    }
    pbuf_msg(g, GRAPH_INITIALIZER, &t);
    pbuf_fini(&t);
    free(raw);
}

/* A graph input or output: float [N, width], N named "N". */
static void onnx_value(struct pbuf *g, uint32_t field, const char *name, int width) {
    struct pbuf rows = {0}, cols = {0}, shape = {0}, tt = {0}, type = {0}, v = {0};
    pbuf_str(&rows, DIM_PARAM, "N");
    pbuf_varint(&cols, DIM_VALUE, width);
    pbuf_msg(&shape, SHAPE_DIM, &rows);
    pbuf_msg(&shape, SHAPE_DIM, &cols);
    pbuf_varint(&tt, TTENSOR_ELEM, ONNX_FLOAT);
    pbuf_msg(&tt, TTENSOR_SHAPE, &shape);
    pbuf_msg(&type, TYPE_TENSOR, &tt);
    pbuf_str(&v, VALUE_NAME, name);
    pbuf_msg(&v, VALUE_TYPE, &type);
    pbuf_msg(g, field, &v);
    struct pbuf *all[] = {&rows, &cols, &shape, &tt, &type, &v};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        pbuf_fini(all[i]);
}

/* The layers: Gemm, then the activation after every hidden one; the last Gemm's output is
 * "output". */
static void onnx_layers(struct pbuf *g, const struct model *m) {
    const struct mlp_arch *a = &m->ck.arch;
    char in[32] = "normalized", w[32], b[32], h[32], s[32], act[32], name[32];
    for (int l = 0; l <= a->n_hidden; l++) {
        snprintf(w, sizeof(w), "%d.weight", 2 * l);
        snprintf(b, sizeof(b), "%d.bias", 2 * l);
        onnx_tensor(g, w, m->ck.params + mlp_layer_w_offset(a, l), mlp_layer_out(a, l),
                    mlp_layer_in(a, l));
        onnx_tensor(g, b, m->ck.params + mlp_layer_b_offset(a, l), mlp_layer_out(a, l), 0);
        bool last = l == a->n_hidden;
        snprintf(h, sizeof(h), last ? "output" : "linear%d", l);
        snprintf(name, sizeof(name), "linear%d", l);
        onnx_node(g, "Gemm", name, in, w, b, h, true);
        if (last)
            break;
        snprintf(act, sizeof(act), "act%d", l);
        if (a->act == MLP_ACT_RELU) {
            onnx_node(g, "Relu", act, h, NULL, NULL, act, false);
        } else { /* SiLU: x * sigmoid(x) */
            snprintf(s, sizeof(s), "sigmoid%d", l);
            onnx_node(g, "Sigmoid", s, h, NULL, NULL, s, false);
            onnx_node(g, "Mul", act, h, s, NULL, act, false);
        }
        snprintf(in, sizeof(in), "%s", act);
    }
}

/* The target transform undone: the second output. */
static const char *onnx_prediction(struct pbuf *g, const struct model *m) {
    if (m->ck.arch.loss == MLP_LOSS_BCE) {
        onnx_node(g, "Sigmoid", "probability", "output", NULL, NULL, "probability", false);
        return "probability";
    }
    onnx_tensor(g, "target_std", &m->ck.y_std, 1, 0);
    onnx_tensor(g, "target_mean", &m->ck.y_mean, 1, 0);
    onnx_node(g, "Mul", "unscale", "output", "target_std", NULL, "scaled", false);
    onnx_node(g, "Add", "return_bps", "scaled", "target_mean", NULL, "return_bps", false);
    return "return_bps";
}

static void onnx_graph(struct pbuf *g, const struct model *m) {
    int n_in = m->ck.arch.n_in;
    pbuf_str(g, GRAPH_NAME, "ringside_vpoc_mlp");
    onnx_tensor(g, "norm_mean", m->ck.norm_mean, n_in, 0);
    onnx_tensor(g, "norm_std", m->ck.norm_std, n_in, 0);
    onnx_node(g, "Sub", "center", "features", "norm_mean", NULL, "centered", false);
    onnx_node(g, "Div", "normalize", "centered", "norm_std", NULL, "normalized", false);
    onnx_layers(g, m);
    const char *pred = onnx_prediction(g, m);
    onnx_value(g, GRAPH_INPUT, "features", n_in);
    onnx_value(g, GRAPH_OUTPUT, "output", 1);
    onnx_value(g, GRAPH_OUTPUT, pred, 1);
}

static void onnx_meta(struct pbuf *p, const char *key, const char *value) {
    struct pbuf e = {0};
    pbuf_str(&e, ENTRY_KEY, key);
    pbuf_str(&e, ENTRY_VALUE, value);
    pbuf_msg(p, MODEL_METADATA, &e);
    pbuf_fini(&e);
}

int model_onnx_write(const char *path, const struct model *m, char *err, size_t errlen) {
    struct pbuf p = {0}, opset = {0}, g = {0};
    char names[FEAT_COUNT * 24] = "";
    for (unsigned j = 0; j < FEAT_COUNT; j++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", j ? "," : "",
                 feat_name(j));
    pbuf_varint(&p, MODEL_IR_VERSION, ONNX_IR_VERSION);
    pbuf_str(&p, MODEL_PRODUCER_NAME, "ringside");
    pbuf_str(&p, MODEL_PRODUCER_VERSION, RS_VERSION);
    pbuf_str(&p, MODEL_DOC,
             "VPOC + MLP: features (before normalisation) -> output (the network's) and the "
             "prediction with the target transform undone");
    pbuf_varint(&opset, OPSET_VERSION, ONNX_OPSET);
    pbuf_msg(&p, MODEL_OPSET, &opset);
    onnx_graph(&g, m);
    pbuf_msg(&p, MODEL_GRAPH, &g);
    onnx_meta(&p, "features", names);
    if (m->meta_text)
        onnx_meta(&p, "ringside", m->meta_text);
    int rc = p.oom ? errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", path)
                   : afile_write_all_user(path, p.b, p.n, err, errlen);
    pbuf_fini(&p);
    pbuf_fini(&opset);
    pbuf_fini(&g);
    return rc;
}
