/* model_info - load a model, bind input shapes, infer, and print what the
 * real-model test compares with python3-onnx and ONNX Runtime, as JSON:
 * node count, per-op-type counts, parameter count, MACs, every tensor's
 * shape, how many stayed unknown, and load / inference times.
 *
 * usage: model_info <model> [<input>=<AxBxC> ...] */
#include "mpx_graph.h"
#include "mpx_numerics.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    if (argc < 2) {
        fprintf(stderr, "usage: model_info <model> [<input>=<AxBxC> ...]\n");
        return 2;
    }
    mpx_error err;
    char msg[2048];
    mpx_error_clear(&err);
    double t0 = now_ms();
    mpx_graph *g = mpx_graph_load(argv[1], &err);
    double t1 = now_ms();
    if (!g) {
        fprintf(stderr, "%s\n", mpx_error_format(&err, msg, sizeof msg));
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        char name[256];
        const char *eq = strchr(argv[i], '=');
        int64_t dims[MPX_MAX_RANK];
        int rank = eq ? mpx_dims_parse(eq + 1, dims) : -1;
        if (!eq || rank < 0 || (size_t)(eq - argv[i]) >= sizeof name) {
            fprintf(stderr, "model_info: bad input spec '%s'\n", argv[i]);
            mpx_graph_free(g);
            return 2;
        }
        snprintf(name, sizeof name, "%.*s", (int)(eq - argv[i]), argv[i]);
        if (mpx_graph_bind_input(g, name, rank, dims, &err) != MPX_OK) {
            fprintf(stderr, "%s\n", mpx_error_format(&err, msg, sizeof msg));
            mpx_graph_free(g);
            return 1;
        }
    }
    double t2 = now_ms();
    mpx_status st = mpx_graph_infer(g, &err);
    double t3 = now_ms();
    if (st != MPX_OK) {
        fprintf(stderr, "%s\n", mpx_error_format(&err, msg, sizeof msg));
        mpx_graph_free(g);
        return 1;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "nodes", g->n_nodes);
    cJSON *ops = cJSON_AddObjectToObject(root, "op_counts");
    for (int i = 0; i < g->n_nodes; i++) {
        const char *op = g->nodes[i]->op_type;
        cJSON *c = cJSON_GetObjectItemCaseSensitive(ops, op);
        if (c) cJSON_SetNumberValue(c, c->valuedouble + 1);
        else cJSON_AddNumberToObject(ops, op, 1);
    }
    cJSON_AddNumberToObject(root, "params", (double)mpx_graph_param_count(g));
    cJSON_AddNumberToObject(root, "macs", (double)mpx_graph_macs(g));
    cJSON *ts = cJSON_AddObjectToObject(root, "tensors");
    for (int i = 0; i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        if (t->rank < 0) {
            cJSON_AddNullToObject(ts, t->name);
            continue;
        }
        cJSON *d = cJSON_AddArrayToObject(ts, t->name);
        for (int k = 0; k < t->rank; k++) cJSON_AddItemToArray(d, cJSON_CreateNumber((double)t->dims[k]));
    }
    cJSON_AddNumberToObject(root, "unknown", mpx_graph_count_unknown(g, NULL));
    cJSON_AddNumberToObject(root, "load_ms", t1 - t0);
    cJSON_AddNumberToObject(root, "infer_ms", t3 - t2);
    cJSON_AddNumberToObject(root, "arena_bytes", (double)mpx_arena_bytes(g->arena));
    char *out = cJSON_PrintUnformatted(root);
    puts(out);
    free(out);
    cJSON_Delete(root);
    mpx_graph_free(g);
    return 0;
}
