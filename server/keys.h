/* keys.h - the keys that name a computation: a plan's or a frontier's key
 * is what the result cache and the store's results are looked up by, what
 * identical submissions are recognised by (jobs.c joins them), and what a
 * job row keeps (result_key). A plan's key reads back into its migration
 * options, for jobs recovered from the store.
 *
 * Pure functions of their arguments; no state. */
#ifndef SRV_KEYS_H
#define SRV_KEYS_H

#include <stdint.h>

#include "device.h"
#include "plan.h"

/* A plan's parameters. Its key is made of those that change the answer
 * (all but timeline and request_id) and the planner version. */
typedef struct srv_plan_params_s {
  char graph_hash[65];
  uint64_t budget;
  mp_solver_t solver;
  mp_objective_t objective;
  mp_accounting_t accounting;
  int timeline;
  char request_id[80];
  char client[68];           /* who asked (http.h srv_req_client): the queue is fair between clients */
  char owner[68];            /* whose plan it is (http.h srv_req_owner): its handle's owner */
  int swap;                  /* data migration on (1 for the swap solvers) */
  mp_device_t device;        /* the device model; every field is in the keys */
  char maximize[33];         /* a fit that maximizes this dimension ("": none; in the fit's key) */
  int64_t max_value;         /* its limit (0: none) */
} srv_plan_params_t;

/* The cache key of a plan (no longer than 255 bytes): graph hash, budget,
 * solver, objective, accounting, swap, every device field and the planner
 * version, so that different devices never share an answer. A frontier's
 * key uses graph_hash, solver, swap and the device of `p`. */
void srv_keys_plan(const srv_plan_params_t *p, char key[256]);
void srv_keys_frontier(const srv_plan_params_t *p, char key[256]);

/* The migration options of a plan key written by srv_keys_plan: 0, or -1
 * when they do not read back. A key from before migration (no device part)
 * gives the defaults; one from before the prefetch gives just in time. */
int srv_keys_device(const char *key, int *swap, mp_device_t *d);

#endif
