package slurm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The testdata files are what Slurm 22.05 (Debian 12's slurm-wlm) printed
// for real jobs on a cluster of internal/slurmtest: `scontrol show job -o
// ID`, `squeue -h -j ID -t all -O squeueFormat` and sbatch's refusals.
func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// idOf returns the job ID a captured line is about.
func idOf(t *testing.T, out string) string {
	t.Helper()
	if id, ok := strings.CutPrefix(out, "JobId="); ok {
		id, _, _ = strings.Cut(id, " ")
		return id
	}
	id, _, _ := strings.Cut(out, "|")
	return id
}

func TestParseCaptured(t *testing.T) {
	cases := []struct {
		name string
		want State
	}{
		{"pending", State{Name: "PENDING", Reason: "PartitionConfig", ExitCode: "0:0"}},
		{"running", State{Name: "RUNNING", Reason: "None", Nodes: "localhost", ExitCode: "0:0"}},
		{"completed", State{Name: "COMPLETED", Reason: "None", Nodes: "localhost", ExitCode: "0:0"}},
		{"failed", State{Name: "FAILED", Reason: "NonZeroExitCode", Nodes: "localhost", ExitCode: "3:0"}},
		{"cancelled", State{Name: "CANCELLED", Reason: "None", Nodes: "localhost", ExitCode: "0:15"}},
		{"cancelled-pending", State{Name: "CANCELLED", Reason: "PartitionConfig", ExitCode: "0:0"}},
		{"timeout", State{Name: "TIMEOUT", Reason: "TimeLimit", Nodes: "localhost", ExitCode: "0:15"}},
	}
	for _, c := range cases {
		done := c.name != "pending" && c.name != "running"
		failed := done && c.name != "completed"
		for _, tool := range []string{"scontrol", "squeue"} {
			out := readTestdata(t, tool+"-"+c.name+".txt")
			id := idOf(t, out)
			parse := parseScontrol
			if tool == "squeue" {
				parse = parseSqueue
			}
			got, ok := parse(out, id)
			if !ok || got != c.want {
				t.Errorf("%s %s: got %+v (found %v), want %+v", tool, c.name, got, ok, c.want)
			}
			if got.Done() != done || got.Failed() != failed {
				t.Errorf("%s %s: Done %v Failed %v, want %v %v", tool, c.name, got.Done(), got.Failed(), done, failed)
			}
			if _, ok := parse(out, id+"0"); ok {
				t.Errorf("%s %s: found under another job's ID", tool, c.name)
			}
		}
	}
}

// A job name with spaces does not disturb the fields after it.
func TestScontrolFieldsWithSpaces(t *testing.T) {
	f := scontrolFields(readTestdata(t, "scontrol-running.txt"))
	if f["JobName"] != "run with spaces" || f["UserId"] != "root(0)" || f["JobState"] != "RUNNING" {
		t.Errorf("JobName %q UserId %q JobState %q", f["JobName"], f["UserId"], f["JobState"])
	}
}

func TestNotFoundMessages(t *testing.T) {
	for _, name := range []string{"scontrol-notfound.txt", "squeue-notfound.txt"} {
		err := &CommandError{Command: "scontrol", Message: slurmMessage(readTestdata(t, name))}
		if !notFound(err) {
			t.Errorf("%s: %q not recognised as an unknown job", name, err.Message)
		}
	}
	if notFound(&CommandError{Message: slurmMessage(readTestdata(t, "sbatch-partition.txt"))}) {
		t.Error("an invalid partition read as an unknown job")
	}
}

func TestSlurmMessage(t *testing.T) {
	got := slurmMessage(readTestdata(t, "sbatch-partition.txt"))
	want := "sbatch: error: invalid partition specified: nosuch; sbatch: error: Batch job submission failed: Invalid partition name specified"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestExitCode(t *testing.T) {
	for raw, want := range map[string]string{"0": "0:0", "768": "3:0", "256": "1:0", "15": "0:15", "9": "0:9", "x": "x"} {
		if got := exitCode(raw); got != want {
			t.Errorf("exitCode(%s) = %s, want %s", raw, got, want)
		}
	}
}

func TestStateString(t *testing.T) {
	for _, c := range []struct {
		s    State
		want string
	}{
		{State{Name: "PENDING", Reason: "PartitionConfig", ExitCode: "0:0"}, "PENDING (PartitionConfig)"},
		{State{Name: "RUNNING", Reason: "None", Nodes: "node[01-02]", ExitCode: "0:0"}, "RUNNING on node[01-02]"},
		{State{Name: "FAILED", Reason: "NonZeroExitCode", Nodes: "n1", ExitCode: "3:0"}, "FAILED (NonZeroExitCode, exit 3:0)"},
		{State{Name: "COMPLETED", Reason: "None", Nodes: "n1", ExitCode: "0:0"}, "COMPLETED"},
		{State{Name: "CANCELLED", Reason: "Resources", ExitCode: "0:0"}, "CANCELLED while pending (it had waited for Resources)"},
		{State{Name: "CANCELLED", Reason: "None", Nodes: "n1", ExitCode: "0:15"}, "CANCELLED"},
	} {
		if got := c.s.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.s, got, c.want)
		}
	}
}

func TestAllocation(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if id, ok := Allocation(get); ok || id != "" {
		t.Errorf("no allocation: got %q %v", id, ok)
	}
	env["SLURM_JOBID"] = "7"
	if id, ok := Allocation(get); !ok || id != "7" {
		t.Errorf("SLURM_JOBID=7: got %q %v", id, ok)
	}
	env["SLURM_JOB_ID"] = "12"
	if id, ok := Allocation(get); !ok || id != "12" {
		t.Errorf("SLURM_JOB_ID=12: got %q %v", id, ok)
	}
}

func TestTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out")
	os.WriteFile(p, []byte("first line\nsecond line\nthird é\n"), 0o600)
	j := &Job{Output: p}
	if got := j.Tail(1000); got != "first line\nsecond line\nthird é\n" {
		t.Errorf("whole: %q", got)
	}
	if got := j.Tail(15); got != "third é\n" {
		t.Errorf("cut: %q", got)
	}
	if got := (&Job{Output: p + "x"}).Tail(10); got != "" {
		t.Errorf("missing file: %q", got)
	}
}

func TestSrunArgs(t *testing.T) {
	got := strings.Join(SrunArgs(Options{Tasks: 4, Nodes: 2, Partition: "p", Account: "a", MPI: "pmix", Extra: []string{"--exclusive"}}, "prog", "a", "b"), " ")
	want := "--exclusive --nodes=2 --ntasks=4 --mpi=pmix prog a b"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestParseMPIList(t *testing.T) {
	got := parseMPIList(readTestdata(t, "srun-mpi-list.txt"))
	if want := []string{"pmix", "none", "cray_shasta", "pmi2"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// sinfo lists a partition once per group of nodes alike: the groups'
// nodes are summed, and CPUs that differ read as the least with a "+".
func TestParsePartitions(t *testing.T) {
	got := parsePartitions("debug*|1|8|infinite\nbig|4|64|2-00:00:00\nbig|2|32|2-00:00:00\nbig|1|16|2-00:00:00\n\n")
	want := []string{
		"debug (the default: 1 node of 8 CPUs, time limit infinite)",
		"big (7 nodes of 16+ CPUs, time limit 2-00:00:00)",
	}
	var s []string
	for _, p := range got {
		s = append(s, p.String())
	}
	if !slices.Equal(s, want) {
		t.Errorf("parsePartitions: %q\nwant %q", s, want)
	}
}
