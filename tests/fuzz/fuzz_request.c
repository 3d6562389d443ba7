/* fuzz_request.c - libFuzzer harness for the daemon's request bodies
 * (proto/request_json.c): each input is parsed as JSON, then read both as a
 * plan request and as a fit request; an inline graph that a plan request
 * accepts is loaded as the daemon would load it. A request that parses must
 * be coherent (a graph or a hash, the wait in range, the migration switch
 * on for the swap solvers, a device that passes its own check); one that
 * does not must say why, at a JSON path. Built by `make fuzz`, replayed by
 * `make test` (tests/fuzz/replay_main.c). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "request_json.h"

#define MAX_WAIT_S 300.0
#define MAX_BUDGETS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A refusal names its reason and a path into the request. */
static void check_refusal(const mp_error_t *err) {
  if (err->message[0] == '\0' || err->path[0] != '$') abort();
}

static void plan_request(json_t *root) {
  mp_plan_request_t req;
  mp_error_t err;
  mp_error_clear(&err);
  if (mp_plan_request_parse(root, MAX_WAIT_S, &req, &err) != 0) {
    check_refusal(&err);
    return;
  }
  if ((req.graph == NULL) == (req.graph_hash[0] == '\0')) abort(); /* exactly one of the two */
  if (req.graph == NULL && !mp_is_graph_hash(req.graph_hash)) abort();
  if (!(req.wait_s >= 0 && req.wait_s <= MAX_WAIT_S)) abort();
  if (mp_solver_swaps(req.solver) && !req.swap) abort();
  if (mp_device_check(&req.device, &err) != 0) abort();
  if (req.graph) {
    mp_limits_t lim;
    mp_graph_t *g = NULL;
    char hash[65];
    mp_limits_default(&lim);
    lim.max_nodes = 4096;
    if (mp_graph_load_json(req.graph, "$.graph", MP_FORMAT_AUTO, NULL, &lim, &g, NULL, &err) == 0) {
      if (mp_graph_hash(g, hash) != 0 || !mp_is_graph_hash(hash)) abort();
      mp_graph_free(g);
    } else if (err.message[0] == '\0') {
      abort();
    }
  }
}

static void fit_request(json_t *root) {
  mp_fit_request_t req;
  mp_error_t err;
  mp_error_clear(&err);
  if (mp_fit_request_parse(root, MAX_BUDGETS, &req, &err) != 0) {
    check_refusal(&err);
    mp_fit_request_free(&req);
    return;
  }
  /* budgets, or devices, or least: at least one is asked */
  if (req.n_budgets > MAX_BUDGETS || (req.n_budgets > 0 && req.budgets == NULL)) abort();
  if (req.n_budgets == 0 && req.n_devices == 0 && !req.least) abort();
  if (req.n_devices > MAX_BUDGETS || (req.n_devices > 0 && req.devices == NULL)) abort();
  if (req.wait_given && !(req.wait_s >= 0)) abort();
  if ((req.graph == NULL) == (req.graph_hash[0] == '\0')) abort();
  if (mp_solver_swaps(req.solver) && !req.swap) abort();
  if (mp_device_check(&req.device, &err) != 0) abort();
  mp_fit_request_free(&req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t je;
  json_t *root = json_loadb((const char *)data, size, MP_JSON_LOAD_FLAGS, &je);
  if (root == NULL) return 0;
  plan_request(root);
  fit_request(root);
  json_decref(root);
  return 0;
}
