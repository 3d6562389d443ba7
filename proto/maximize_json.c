/* maximize_json.c - a maximize's answer as JSON (maximize_json.h). */
#include "maximize_json.h"

#include <stdio.h>

#include "dims_json.h"
#include "json_util.h"
#include "plan_json.h"

json_t *mp_maximize_to_json(const mp_maximize_t *m, uint64_t budget, const mp_device_t *device, int with_schedule,
                            int with_timeline) {
  json_t *o = json_object(), *plan = NULL, *next = NULL;
  char hash[65], reason[300];
  reason[0] = '\0';
  if (o == NULL) return NULL;
  if (m->graph) {
    if (mp_graph_hash(m->graph, hash) != 0 ||
        (plan = mp_plan_result_to_json_ex(m->graph, &m->plan, hash, device, with_schedule, with_timeline)) == NULL)
      goto fail;
  }
  if (m->next_value > 0) {
    next = json_pack("{s:I,s:o}", "value", (json_int_t)m->next_value, "min_feasible_budget",
                     m->next_min_feasible_budget ? mp_json_u64(m->next_min_feasible_budget) : json_null());
    if (next == NULL) goto fail;
  }
  if (m->value == 0) {
    if (m->next_overflows)
      snprintf(reason, sizeof(reason), "even %s=%lld (its min) does not fit: its sizes pass 64 bits", m->dim,
               (long long)m->next_value);
    else if (m->next_min_feasible_budget)
      snprintf(reason, sizeof(reason), "even %s=%lld (its min) does not fit in %llu bytes: it needs at least %llu",
               m->dim, (long long)m->next_value, (unsigned long long)budget,
               (unsigned long long)m->next_min_feasible_budget);
    else
      snprintf(reason, sizeof(reason), "even %s=%lld (its min) does not fit in %llu bytes", m->dim,
               (long long)m->next_value, (unsigned long long)budget);
  } else if (m->next_value == 0) {
    snprintf(reason, sizeof(reason), "%s=%lld, the limit, fits; larger values were not tried", m->dim,
             (long long)m->value);
  }
  if (mp_json_set(o, "maximize", json_string(m->dim)) || mp_json_set(o, "budget", mp_json_u64(budget)) ||
      mp_json_set(o, "value", json_integer(m->value)) || mp_json_set(o, "limit", json_integer(m->limit)) ||
      mp_json_set(o, "plan", plan ? plan : json_null()) || mp_json_set(o, "next", next ? next : json_null()) ||
      (reason[0] && mp_json_set(o, "reason", json_string(reason))) ||
      mp_json_set(o, "plans", json_integer((json_int_t)m->n_plans)) ||
      mp_json_set(o, "solve_ms", json_real(m->solve_ms)) || mp_forecast_json_add(o, m->graph) != 0) {
    plan = next = NULL; /* taken by o, or dropped by mp_json_set */
    goto fail;
  }
  return o;
fail:
  json_decref(plan);
  json_decref(next);
  json_decref(o);
  return NULL;
}
