// Package slurm submits, watches and cancels Slurm jobs through Slurm's own
// client commands (sbatch, srun, squeue, scontrol, scancel): approxtune never
// talks to slurmctld directly, so whatever the site's Slurm accepts from its
// users works here too.
package slurm

import (
	"context"
	"errors"
	"os/exec"
)

// Options are the resources and placement of a job, as a user writes them
// after `launcher slurm`. Zero values leave the choice to Slurm (or the
// site's defaults).
type Options struct {
	Nodes        int    // --nodes
	TasksPerNode int    // --ntasks-per-node
	Tasks        int    // --ntasks (the agent's ranks)
	Partition    string // --partition
	Time         string // --time, Slurm's format (e.g. 00:30:00)
	Account      string // --account
	// Extra are further sbatch/srun options, one per element
	// (e.g. "--constraint=haswell"), passed through unchanged.
	Extra []string
	// JobName is --job-name (default "approxtune").
	JobName string
}

// Job is a submitted batch job.
type Job struct {
	ID string
	// Output is the path of the job's standard output and error (the tail
	// shown when the job fails).
	Output string
}

// State is what Slurm says of a job now.
type State struct {
	// Name is Slurm's state: PENDING, RUNNING, COMPLETING, COMPLETED,
	// FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, ...
	Name string
	// Reason is Slurm's reason for a pending (or failed) job, e.g.
	// "Resources", "Priority", "PartitionConfig", "NonZeroExitCode"; "None"
	// or "" when there is none.
	Reason string
	// Nodes lists the nodes a running or finished job ran on (Slurm's
	// hostlist form, e.g. "node[01-02]").
	Nodes string
	// ExitCode is Slurm's "exit:signal" form, e.g. "0:0", "3:0", "0:9".
	ExitCode string
}

// Done reports whether the job has finished, whatever the outcome.
func (s State) Done() bool { panic("slurm: not implemented") }

// Failed reports whether the job finished in any state but COMPLETED.
func (s State) Failed() bool { panic("slurm: not implemented") }

// ErrNotFound is returned by Query for a job Slurm no longer knows (or never
// knew).
var ErrNotFound = errors.New("slurm: no such job")

// Submit runs sbatch with opts and the batch script script (given on sbatch's
// standard input, never written to a file others can read). env entries
// ("NAME=value") are added to sbatch's environment, from which Slurm passes
// them into the job: secrets travel this way, never on a command line. When
// sbatch refuses the job, the error carries Slurm's own message.
func Submit(ctx context.Context, opts Options, script string, env []string) (*Job, error) {
	panic("slurm: not implemented")
}

// Query returns the job's state (scontrol show job, falling back to squeue
// and the job's output for jobs that are gone from scontrol).
func Query(ctx context.Context, id string) (State, error) {
	panic("slurm: not implemented")
}

// Cancel cancels the job (scancel). Cancelling a finished job is not an
// error.
func Cancel(ctx context.Context, id string) error {
	panic("slurm: not implemented")
}

// Tail returns up to max bytes from the end of the job's output file.
func (j *Job) Tail(max int) string { panic("slurm: not implemented") }

// Allocation returns the ID of the job this process runs inside
// (SLURM_JOB_ID), if any: a session inside an allocation starts its agents
// with srun instead of submitting new jobs.
func Allocation(getenv func(string) string) (id string, ok bool) {
	panic("slurm: not implemented")
}

// Srun returns the command that runs prog with args as a job step of the
// current allocation with opts' tasks and placement; env entries are added to
// the current environment.
func Srun(ctx context.Context, opts Options, env []string, prog string, args ...string) *exec.Cmd {
	panic("slurm: not implemented")
}
