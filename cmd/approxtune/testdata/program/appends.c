// A program that reads a deck (in.txt) and appends a line to a file of
// its own (out.txt) in its working directory, then prints the deck's
// first line and how many lines out.txt has: 1 when each launch runs in a
// fresh directory.
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0) {
		char deck[64] = "none\n";
		FILE *d = fopen("in.txt", "r");
		if (d) {
			if (!fgets(deck, sizeof deck, d)) strcpy(deck, "empty\n");
			fclose(d);
		}
		FILE *f = fopen("out.txt", "a");
		fprintf(f, "a line\n");
		fclose(f);
		int lines = 0, c;
		f = fopen("out.txt", "r");
		while ((c = fgetc(f)) != EOF) lines += c == '\n';
		fclose(f);
		printf("lines %d, deck %s", lines, deck);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
