/* fuzz_schedule.c - libFuzzer harness for the memplan.schedule/1 reader
 * (proto/schedule_json.c) and the simulator behind it. Each input is read
 * as a schedule of a fixed five-node graph with a branch; a schedule that
 * reads must write back to the same steps, and is then simulated (steps in
 * any order, swaps included) and its report written as JSON. A refusal
 * must say why. Built by `make fuzz`, replayed by `make test`
 * (tests/fuzz/replay_main.c). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "schedule_json.h"
#include "simulator.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char graph_text[] =
    "{\"format\": \"memplan.graph/1\", \"name\": \"fuzz\", \"nodes\": ["
    "{\"id\": \"a\", \"bytes\": 100, \"time\": 1},"
    "{\"id\": \"b\", \"inputs\": [\"a\"], \"bytes\": 200, \"time\": 2},"
    "{\"id\": \"c\", \"inputs\": [\"b\"], \"bytes\": 300, \"time\": 3},"
    "{\"id\": \"d\", \"inputs\": [\"a\"], \"bytes\": 50, \"time\": 1},"
    "{\"id\": \"e\", \"inputs\": [\"c\", \"d\"], \"bytes\": 10, \"time\": 1}]}";

static const mp_graph_t *fixed_graph(void) {
  static mp_graph_t *g;
  if (g == NULL) {
    mp_limits_t lim;
    mp_error_t err;
    mp_limits_default(&lim);
    if (mp_graph_load_buffer(graph_text, sizeof(graph_text) - 1, MP_FORMAT_NATIVE, "fuzz", &lim, &g, NULL, &err) !=
        0)
      abort();
  }
  return g;
}

/* What the writer wrote, the reader reads back step for step. */
static void check_round_trip(const mp_graph_t *g, const mp_schedule_t *s) {
  json_t *doc = mp_schedule_to_json(g, s);
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  mp_schedule_t *back = NULL;
  mp_error_t err;
  size_t i;
  if (text == NULL) abort();
  if (mp_schedule_load_buffer(g, text, strlen(text), &back, &err) != 0) abort();
  if (back->n_steps != s->n_steps || back->auto_free != s->auto_free) abort();
  for (i = 0; i < s->n_steps; i++)
    if (back->steps[i].op != s->steps[i].op || back->steps[i].node != s->steps[i].node) abort();
  mp_schedule_free(back);
  free(text);
  json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const mp_graph_t *g = fixed_graph();
  mp_schedule_t *s = NULL;
  mp_sim_report_t rep;
  mp_error_t err;
  mp_error_clear(&err);
  if (mp_schedule_load_buffer(g, (const char *)data, size, &s, &err) != 0) {
    if (err.message[0] == '\0') abort();
    return 0;
  }
  check_round_trip(g, s);
  mp_error_clear(&err);
  if (mp_simulate_ex(g, s, NULL, &rep, &err) == 0) {
    json_t *j = mp_sim_report_to_json(g, &rep, 1);
    if (j == NULL) abort();
    json_decref(j);
    mp_sim_report_free(&rep);
  } else if (err.message[0] == '\0') {
    abort();
  }
  mp_schedule_free(s);
  return 0;
}
