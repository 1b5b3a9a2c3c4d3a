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
 */
#ifndef APPROXTUNE_H
#define APPROXTUNE_H

#ifdef __cplusplus
extern "C" {
#endif

void approxtune_begin(void) __attribute__((weak));
void approxtune_end(void) __attribute__((weak));
int approxtune_skipping(void) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#define APPROXTUNE_BEGIN() do { if (approxtune_begin) approxtune_begin(); } while (0)
#define APPROXTUNE_END() do { if (approxtune_end) approxtune_end(); } while (0)
#define APPROXTUNE_SKIPPING() (approxtune_skipping ? approxtune_skipping() : 0)

#endif
