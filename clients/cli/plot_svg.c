/* plot_svg.c - frontiers as a self-contained SVG step chart. Each frontier
 * is a staircase: from a point's budget on, its overhead applies until the
 * next point, so the line goes right at constant overhead, then drops. The
 * points are plans (frontier.h): where the frontier has every breakpoint the
 * line is the plan at each budget; a legend entry says when it is not. */
#include "plot_svg.h"

#include <string.h>

#define W 940.0
#define H 520.0
#define ML 80.0 /* margins */
#define MR 300.0
#define MT 50.0
#define MB 60.0

static const char *const colours[] = {"#1f6feb", "#d1242f", "#1a7f37", "#8250df", "#bf8700"};

static void mp__escape(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else if (*s == '"') fputs("&quot;", f);
    else fputc(*s, f);
  }
}

int mp_plot_frontiers_svg(FILE *f, const char *title, const mp_frontier_t *fr, size_t n) {
  double xmin = -1, xmax = 0, ymax = 0;
  size_t i, k;
  int t;
  for (i = 0; i < n; i++)
    for (k = 0; k < fr[i].n_points; k++) {
      double x = (double)fr[i].points[k].budget / 1073741824.0;
      if (xmin < 0 || x < xmin) xmin = x;
      if (x > xmax) xmax = x;
      if (fr[i].points[k].overhead_pct > ymax) ymax = fr[i].points[k].overhead_pct;
    }
  if (xmin < 0) xmin = 0, xmax = 1;
  if (xmax <= xmin) xmax = xmin + 1;
  xmax += (xmax - xmin) * 0.08; /* room for the last step */
  if (ymax <= 0) ymax = 1;
  ymax *= 1.08;
#define PX(x) (ML + ((x) - xmin) / (xmax - xmin) * (W - ML - MR))
#define PY(y) (H - MB - (y) / ymax * (H - MT - MB))
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"13\">\n",
          W, H, W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n<text x=\"%.0f\" y=\"28\" "
             "font-size=\"16\" font-weight=\"bold\">",
          ML);
  mp__escape(f, title);
  fputs("</text>\n", f);
  /* axes and ticks */
  fprintf(f, "<g stroke=\"#57606a\" stroke-width=\"1\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
             "y2=\"%.1f\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
          ML, H - MB, W - MR, H - MB, ML, MT, ML, H - MB);
  for (t = 0; t <= 5; t++) {
    double xv = xmin + (xmax - xmin) * t / 5.0, yv = ymax * t / 5.0;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d0d7de\"/>\n",
            ML, PY(yv), W - MR, PY(yv));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.2f</text>\n", PX(xv),
            H - MB + 18, xv);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", ML - 6,
            PY(yv) + 4, yv);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">peak device memory (GiB)</text>\n",
          (ML + W - MR) / 2, H - 18);
  fprintf(f, "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">"
             "recomputation overhead (%%)</text>\n",
          (MT + H - MB) / 2);
  /* the last frontier first, so that the asked solver's (the first) is
   * drawn on top where they coincide */
  for (i = n; i-- > 0;) {
    const char *col = colours[i % 5];
    if (fr[i].n_points == 0) continue;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
    for (k = 0; k < fr[i].n_points; k++) {
      double x = (double)fr[i].points[k].budget / 1073741824.0, y = fr[i].points[k].overhead_pct;
      double xn = k + 1 < fr[i].n_points ? (double)fr[i].points[k + 1].budget / 1073741824.0 : xmax;
      fprintf(f, "%.1f,%.1f %.1f,%.1f ", PX(x), PY(y), PX(xn), PY(y));
    }
    fputs("\"/>\n", f);
    for (k = 0; k < fr[i].n_points; k++)
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
              PX((double)fr[i].points[k].budget / 1073741824.0), PY(fr[i].points[k].overhead_pct), col);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"4\" fill=\"%s\"/>"
               "<text x=\"%.1f\" y=\"%.1f\">%s%s (%zu points)</text>\n",
            W - MR + 16, MT + 20.0 * (double)i, col, W - MR + 36, MT + 20.0 * (double)i + 5,
            mp_solver_name(fr[i].solver_used),
            fr[i].exact                                 ? ""
            : strstr(fr[i].exact_reason, "within 1%") ? " (plans within 1%)"
                                                      : " (sampled plans)",
            fr[i].n_points);
  }
  fputs("</svg>\n", f);
#undef PX
#undef PY
  return ferror(f) ? -1 : 0;
}
