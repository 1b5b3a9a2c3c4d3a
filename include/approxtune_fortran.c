/* approxtune_fortran.c: the marks of approxtune.h for Fortran programs.
 *
 * Fortran cannot declare the weak symbols approxtune.h does, so a Fortran
 * program compiles this file with its own (mpifort takes C files too):
 *
 *   mpifort -O2 -o solver solver.f90 -I/usr/local/include \
 *       /usr/local/include/approxtune_fortran.c
 *
 * and calls, once each, on every rank:
 *
 *   integer, external :: approxtune_skipping
 *   call approxtune_begin()
 *   call pdpotrf(...)                  ! the part to tune
 *   call approxtune_end()
 *   if (approxtune_skipping() == 0) call check_residual(...)
 *
 * and, to let a search stop a configuration's selective run that cannot
 * be among those its round keeps (approxtune.h, APPROXTUNE_CUT_SHORT), on
 * every rank at the same point of each iteration:
 *
 *   integer, external :: approxtune_cut_short
 *   if (approxtune_cut_short() /= 0) exit
 *
 * As in C, without approxtune's preload library the calls do nothing and
 * approxtune_skipping() and approxtune_cut_short() are 0. Each is
 * defined with one trailing underscore (gfortran, ifort, flang) and with
 * two (g77's and f2c's names with an underscore in them, gfortran's
 * -fsecond-underscore).
 */
#include "approxtune.h"

void approxtune_begin_(void) { APPROXTUNE_BEGIN(); }
void approxtune_end_(void) { APPROXTUNE_END(); }
int approxtune_skipping_(void) { return APPROXTUNE_SKIPPING(); }
int approxtune_cut_short_(void) { return APPROXTUNE_CUT_SHORT(); }

void approxtune_begin__(void) { APPROXTUNE_BEGIN(); }
void approxtune_end__(void) { APPROXTUNE_END(); }
int approxtune_skipping__(void) { return APPROXTUNE_SKIPPING(); }
int approxtune_cut_short__(void) { return APPROXTUNE_CUT_SHORT(); }
