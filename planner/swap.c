/* swap.c - the data-migration solvers (swap, hybrid, layrub). Placeholder
 * until they land: every call says so. */
#include "plan_internal.h"

int mp__plan_migrate(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                     mp_plan_result_t *r, mp_error_t *err) {
  (void)g;
  (void)o;
  (void)t0;
  (void)r;
  return mp_error_set(err, MP_EINVAL, "$.solver", "the data-migration solvers are not built yet");
}
