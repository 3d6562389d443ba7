/* frontier_swap.c - the memory/time frontier of the data-migration solvers.
 * Placeholder until they land: every call says so. */
#include "frontier.h"
#include "plan_internal.h"

int mp__frontier_migrate(const mp_graph_t *g, const mp_plan_options_t *o, mp_frontier_t *out,
                         mp_error_t *err) {
  (void)g;
  (void)o;
  (void)out;
  return mp_error_set(err, MP_EINVAL, "$.solver", "the data-migration solvers are not built yet");
}
