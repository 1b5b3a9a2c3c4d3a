// parent.c: an MPI program that fails (exit 3) when the process that
// started it (mpirun) has approxtune's library loaded. The library is for
// the ranks only: loaded into mpirun it would run the Go runtime there,
// whose preemption signals (SIGURG) mpirun forwards to the job.
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	char path[64], line[4096];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)getppid());
	FILE *f = fopen(path, "r");
	int found = 0, lines = 0;
	while (f && fgets(line, sizeof line, f)) {
		lines++;
		if (strstr(line, "libapproxtune")) found = 1;
	}
	if (f) fclose(f);
	MPI_Barrier(MPI_COMM_WORLD);
	printf("parent %d: %d maps, approxtune's library %s\n", (int)getppid(), lines, found ? "loaded" : "not loaded");
	MPI_Finalize();
	return found ? 3 : 0;
}
