/* approxtune.h: mark the region approxtune times in your MPI program.
 *
 * By default a run is timed from MPI_Init to MPI_Finalize. Calling
 * approxtune_begin() and approxtune_end() on every rank, once each, times
 * the region between them instead (leave out input generation and
 * verification). The symbols are weak: without approxtune's preload
 * library the program runs as it is.
 *
 *   #include "approxtune.h"
 *   ...
 *   APPROXTUNE_BEGIN();
 *   pdpotrf_(...);
 *   APPROXTUNE_END();
 *
 * APPROXTUNE_SKIPPING() is 1 in a run that may skip kernels, whose results
 * are then meaningless: a program that checks its own results (and exits
 * non-zero when they are wrong) skips the check there. It is 0 in a full
 * run and without the library.
 *
 * APPROXTUNE_CUT_SHORT() lets a search (tune search=halving) stop a
 * selective run of a configuration that cannot be among those its round
 * keeps: it is 1 once the run's prediction has passed them. It is a
 * collective over MPI_COMM_WORLD: call it on every rank at the same point
 * of your work (an iteration's end) and, when it is 1, stop the work there
 * on every rank (go on to the region's end). It is 0, at no cost, in every
 * other run and without the library.
 *
 *   for (it = 0; it < iters; it++) {
 *     step(...);
 *     if (APPROXTUNE_CUT_SHORT()) break;
 *   }
 */
#ifndef APPROXTUNE_H
#define APPROXTUNE_H

#ifdef __cplusplus
extern "C" {
#endif

void approxtune_begin(void) __attribute__((weak));
void approxtune_end(void) __attribute__((weak));
int approxtune_skipping(void) __attribute__((weak));
int approxtune_cut_short(void) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#define APPROXTUNE_BEGIN() do { if (approxtune_begin) approxtune_begin(); } while (0)
#define APPROXTUNE_END() do { if (approxtune_end) approxtune_end(); } while (0)
#define APPROXTUNE_SKIPPING() (approxtune_skipping ? approxtune_skipping() : 0)
#define APPROXTUNE_CUT_SHORT() (approxtune_cut_short ? approxtune_cut_short() : 0)

#endif
