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
 */
#ifndef APPROXTUNE_H
#define APPROXTUNE_H

#ifdef __cplusplus
extern "C" {
#endif

void approxtune_begin(void) __attribute__((weak));
void approxtune_end(void) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#define APPROXTUNE_BEGIN() do { if (approxtune_begin) approxtune_begin(); } while (0)
#define APPROXTUNE_END() do { if (approxtune_end) approxtune_end(); } while (0)

#endif
