package sweep

import "encoding/json"

// ProtocolVersion is the version of the agent's JSON-lines events and of the
// session <-> agent protocol. Every event carries it in "v". Version 2 added
// the gate of a run command and the session's acks (internal/protocol).
const ProtocolVersion = 2

// Event types.
const (
	TypeStart    = "start"
	TypeResult   = "result"
	TypeSummary  = "summary"
	TypeKernels  = "kernels"
	TypeTrace    = "trace"
	TypeError    = "error"
	TypeProgress = "progress"
	TypeRound    = "round"  // a search's round ended (spec search)
	TypeSearch   = "search" // a search's outcome (spec search)
	TypeRunStart = "run_start"
	TypeCarried  = "carried" // a carrying policy's statistics after a configuration
)

// Start announces a sweep: the normalized spec and the number of runs ahead.
type Start struct {
	Type    string   `json:"type"`
	V       int      `json:"v"`
	Spec    *Spec    `json:"spec"`
	Configs []Config `json:"configs"`
	Runs    int      `json:"runs"` // result events to expect
	Ranks   int      `json:"ranks"`
	BLAS    string   `json:"blas"`
	// Warnings says what in rank 0's environment makes timings or
	// predictions unreliable (as protocol.Hello's); an agent running a
	// sweep file (--sweep) also prints them on its standard error.
	Warnings []string `json:"warnings,omitempty"`
	// CopyCostSPerB is the core time per byte of a large transfer that
	// the engine measured when it started, where processes share cores
	// (the simulation then charges it to every transfer a selective run
	// predicts); absent where no core is shared.
	CopyCostSPerB *float64 `json:"copy_cost_s_per_b,omitempty"`
}

// Path is a critical-path time broken down.
type Path struct {
	CompS float64 `json:"comp_s"` // computation kernels
	CommS float64 `json:"comm_s"` // communication kernels
	IdleS float64 `json:"idle_s"` // everything else on the path: waiting and uninstrumented code
}

// Result is one run: a configuration's reference runs (Policy empty), or one
// selective run of a configuration under a policy and tolerance.
type Result struct {
	Type       string    `json:"type"`
	V          int       `json:"v"`
	Workload   string    `json:"workload"`
	Index      int       `json:"index"` // configuration index in the sweep
	Config     Config    `json:"config"`
	Policy     string    `json:"policy,omitempty"`
	Tolerance  *float64  `json:"tolerance,omitempty"`
	ReferenceS []float64 `json:"reference_s,omitempty"` // the configuration's full runs' wall times
	// Residual is the largest residual of the full runs' verification (a
	// built-in workload checks its result: a factorization's relative
	// residual); absent for a program's runs.
	Residual   *float64 `json:"residual,omitempty"`
	PredictedS *float64 `json:"predicted_s,omitempty"`
	// PredictedSE is the standard error of PredictedS: the uncertainty
	// of the skipped kernels' estimated means, propagated along the
	// critical path (0 when nothing was skipped).
	PredictedSE *float64 `json:"predicted_se_s,omitempty"`
	SelectiveS  *float64 `json:"selective_s,omitempty"`
	// Error is the prediction's error relative to the reference mean,
	// |predicted − reference| / reference, so never negative; absent
	// without references.
	Error    *float64 `json:"error,omitempty"`
	LocalS   *float64 `json:"local_s,omitempty"` // rank 0's own path, without what propagation brought in
	Executed *int64   `json:"executed,omitempty"`
	Skipped  *int64   `json:"skipped,omitempty"`
	Settled  *int64   `json:"settled,omitempty"`  // of the skipped, collectives skipped without the engine's records (replayed at the end)
	Promised *int64   `json:"promised,omitempty"` // of the executed, collectives run without the engine's records on a member's promise (charged at the end)
	Path     *Path    `json:"path,omitempty"`
	// CutShort: a search's round cut the run short once its prediction
	// had passed the round's fastest survivors (the engine's cutoff):
	// PredictedS is the part that ran, a lower bound of the whole.
	CutShort bool `json:"cut_short,omitempty"`
	// CountingS is the part of SelectiveS that a policy.Rehearser's
	// counting run (apriori's skeleton of the run) took.
	CountingS *float64 `json:"counting_s,omitempty"`
	// LaunchS is, for a program, the time its launches took beyond their
	// timed regions (mpirun, loading, MPI_Init, MPI_Finalize), the
	// references' and the selective run's together: real autotuning time
	// that SelectiveS and ReferenceS leave out.
	LaunchS *float64 `json:"launch_s,omitempty"`
	// Round is the search round the run belongs to (spec search), from 1:
	// selective runs in rounds 1..R, the survivors' full runs (no policy,
	// reference_s) in round R+1. 0: not a search's run (an evaluate
	// search's references, made to judge it, are round 0).
	Round int `json:"round,omitempty"`
	Done  int `json:"done"`  // results emitted so far, this one included
	Total int `json:"total"` // results the sweep will emit
}

// Summary closes a sweep, or one policy x tolerance of it.
type Summary struct {
	Type            string   `json:"type"`
	V               int      `json:"v"`
	Workload        string   `json:"workload"`
	Mode            Mode     `json:"mode"`
	Policy          string   `json:"policy,omitempty"`
	Tolerance       *float64 `json:"tolerance,omitempty"`
	Configs         int      `json:"configs"`
	ReferenceTotalS float64  `json:"reference_total_s,omitempty"`
	SelectiveTotalS float64  `json:"selective_total_s,omitempty"`
	Speedup         float64  `json:"speedup,omitempty"`
	MeanError       *float64 `json:"mean_error,omitempty"`
	MaxError        *float64 `json:"max_error,omitempty"`
	Chosen          *Config  `json:"chosen,omitempty"`
	Best            *Config  `json:"best,omitempty"`
	Quality         *float64 `json:"quality,omitempty"`
	// ReferenceError is RunError over the sweep's references: how far a
	// full run lands from its configuration's other full runs, on average.
	// A mean error at or below it is as close to the references as one more
	// full run would be. Set in evaluate (every policy's summary carries
	// the sweep's figure) and reference sweeps, with two references or more
	// for some configuration.
	ReferenceError *float64 `json:"reference_error,omitempty"`
	ElapsedS       float64  `json:"elapsed_s"`
}

// KernelsEvent lists one process's kernel statistics after a selective run
// (when the spec asks for "kernels": true).
type KernelsEvent struct {
	Type      string       `json:"type"`
	V         int          `json:"v"`
	Index     int          `json:"index"`
	Policy    string       `json:"policy"`
	Tolerance float64      `json:"tolerance"`
	Rank      int          `json:"rank"`
	Kernels   []KernelStat `json:"kernels"`
	// Others are the computation kernels Rank has no samples of in the
	// run's track, each as the rank with the most samples of it measured
	// it: what a kernel model of a routine that rank never ran at some
	// size (gemm at b=256 on a 2x2 grid, n=1024) reads there. Always
	// written ([] for none), so that null tells a journal from before it.
	Others []OtherKernel `json:"others"`
}

// OtherKernel is a kernel's statistics on the rank that measured it most
// (KernelsEvent.Others).
type OtherKernel struct {
	KernelStat
	Rank int `json:"rank"`
}

// KernelState says whether a kernel was still being executed (measured) at
// the end of a run, predictable (skipped, or known to the tolerance), or
// modelled (never measured: skipped with its time predicted from its
// routine's performance model, spec "models").
type KernelState string

// Kernel states.
const (
	KernelExecuting   KernelState = "executing"
	KernelPredictable KernelState = "predictable"
	KernelModelled    KernelState = "modelled"
)

// KernelStat is one kernel signature's statistics on one process after a
// selective run: the record the engine reports, the kernels event carries
// and the session tables and plots.
type KernelStat struct {
	Key     string      `json:"key"`
	Routine string      `json:"routine"`
	Count   int64       `json:"count"`       // samples measured (executions), all runs of the track
	MeanS   float64     `json:"mean_s"`      // their mean (modelled: the predicted time)
	HalfS   float64     `json:"halfwidth_s"` // confidence half-width of the mean (-1 when infinite; modelled: the prediction's)
	Calls   int64       `json:"calls"`       // calls in the last run
	Skipped int64       `json:"skipped"`     // of which skipped
	State   KernelState `json:"state"`
}

// TraceEvent is the timeline of one selective run on every rank (when the
// spec asks for "trace": true): what each process did from the run's start.
type TraceEvent struct {
	Type      string      `json:"type"`
	V         int         `json:"v"`
	Index     int         `json:"index"` // configuration index in the sweep
	Policy    string      `json:"policy"`
	Tolerance float64     `json:"tolerance"`
	Ranks     []RankTrace `json:"ranks"` // in rank order
}

// RankTrace is one process's timeline: its intercepted kernels in time
// order, the first ones up to a cap, and how many past the cap were dropped.
type RankTrace struct {
	Rank    int    `json:"rank"`
	Events  []Span `json:"events"`
	Dropped int64  `json:"dropped"`
}

// Span is one intercepted kernel on a timeline: a computation routine
// ("gemm") or a communication ("bcast", "send", the wait of an "irecv"),
// in seconds from the run's start. An executed kernel spans its execution; a
// skipped one is the instant it was skipped (start_s = end_s), with the
// predicted time it was charged instead.
type Span struct {
	Routine    string  `json:"routine"`
	StartS     float64 `json:"start_s"`
	EndS       float64 `json:"end_s"`
	PredictedS float64 `json:"predicted_s,omitempty"` // skipped: the time charged
	Skipped    bool    `json:"skipped"`
	Comm       bool    `json:"comm"`
	// Size is the kernel's work: flops for a computation routine
	// (kernels.Signature.Flops), bytes per process for a communication;
	// 0 when it has none (a spin).
	Size float64 `json:"size,omitempty"`
	// Procs is a communication's communicator size (0: a computation, or
	// a trace from before this field).
	Procs int `json:"procs,omitempty"`
}

// Carried is what the tracks of a policy that carries its kernels'
// statistics from one configuration to the next (policy.Carrier: eager)
// hold after configuration Index, every rank's (selective.Track.Snapshot;
// null for a rank that has none). The agent sends it after the
// configuration's results; the session keeps the latest of each policy and
// tolerance beside its journal and gives them back in a resumed sweep's
// spec (Spec.Carried), so that the resumed runs start where the stopped
// sweep was rather than afresh.
type Carried struct {
	Type      string            `json:"type,omitempty"`
	V         int               `json:"v,omitempty"`
	Index     int               `json:"index"`
	Policy    string            `json:"policy"`
	Tolerance float64           `json:"tolerance"`
	Ranks     []json.RawMessage `json:"ranks"`
}

// Rank returns rank r's snapshot, or nil when it has none.
func (c *Carried) Rank(r int) []byte {
	if r < 0 || r >= len(c.Ranks) || len(c.Ranks[r]) == 0 || string(c.Ranks[r]) == "null" {
		return nil
	}
	return c.Ranks[r]
}

// ProgressEvent says that a selective run ended whose result line waits for
// its configuration's last reference run (evaluate mode). Pending counts the
// runs made and not yet reported; the result lines that follow report them.
type ProgressEvent struct {
	Type    string `json:"type"`
	V       int    `json:"v"`
	Index   int    `json:"index"` // configuration index in the sweep
	Pending int    `json:"pending"`
}

// RunKind says what a RunStart begins.
type RunKind string

// Kinds of RunStart.
const (
	// RunSetup is a configuration's set-up before its first run: its
	// grid, its data.
	RunSetup RunKind = "setup"
	// RunWarmUp is the untimed full run after a set-up (evaluate and
	// reference sweeps, and a search's finalists).
	RunWarmUp RunKind = "warm-up"
	// RunReference is a full run with the engine off: a reference, or a
	// search's finalist's full run.
	RunReference RunKind = "reference"
	// RunSelective is a run under a policy at a tolerance (with, for a
	// policy.Rehearser, its counting run).
	RunSelective RunKind = "selective"
)

// RunStart says that a run of a configuration (or its set-up) begins: the
// session's deadline judges the wait until the next event by that
// configuration's reference time. An agent connected to a session sends
// one before every run; a sweep file's output (agent --sweep) has none,
// and the session keeps them out of its journal. It is sent just before
// the run, and a gated command does not wait for its acknowledgement.
type RunStart struct {
	Type      string   `json:"type"`
	V         int      `json:"v"`
	Index     int      `json:"index"` // configuration index in the sweep
	Kind      RunKind  `json:"kind"`
	Policy    string   `json:"policy,omitempty"`    // a selective run's
	Tolerance *float64 `json:"tolerance,omitempty"` // a selective run's
	Round     int      `json:"round,omitempty"`     // a search's round, as Result.Round
	// ReferenceS are the configuration's reference times measured so far
	// in this sweep, which its results bring only at its end (evaluate);
	// empty when there are none or they came in a result already.
	ReferenceS []float64 `json:"reference_s,omitempty"`
	// LaunchS is, for a program's launch, the longest time a launch of
	// the sweep took so far beyond its timed region (mpirun's start and
	// end, which the reference times leave out); 0 for an agent's run.
	LaunchS float64 `json:"launch_s,omitempty"`
}

// StoppableInSearch says whether, in a program's search, the launch r
// starts may be stopped alone when it hangs, its configuration leaving the
// search: a selective launch of a round, or a finalist's full launch (a
// full run in a round after round 0; not an evaluate search's references,
// round 0, which end the search).
func (r *RunStart) StoppableInSearch() bool {
	return r.Kind == RunSelective || r.Kind == RunReference && r.Round > 0
}

// ErrorEvent reports a failure of the agent or of a run.
type ErrorEvent struct {
	Type    string `json:"type"`
	V       int    `json:"v"`
	Message string `json:"message"`
	// Index and ReferenceS are, for a program's selective run that
	// failed (or, in a search, a finalist's full run), its configuration
	// and the configuration's full runs (none in tune): a result would
	// have carried them.
	Index      *int      `json:"index,omitempty"`
	ReferenceS []float64 `json:"reference_s,omitempty"`
}

// Round ends a search round: which configurations ran at which tolerance,
// which survive into the next round and which were dropped, with why.
type Round struct {
	Type      string  `json:"type"`
	V         int     `json:"v"`
	Round     int     `json:"round"` // from 1; the last is the survivors' full runs
	Policy    string  `json:"policy,omitempty"`
	Tolerance float64 `json:"tolerance"` // 0: the full runs
	Ran       []int   `json:"ran"`       // configuration indices run this round
	Kept      []int   `json:"kept"`      // survivors, fastest first
	Dropped   []int   `json:"dropped"`   // eliminated this round
	// Capped are the configurations of Dropped that the round's budget
	// dropped (at most the fastest quarter go on), not the confidence
	// rule. Those cut short are in Dropped only; their results say
	// cut_short.
	Capped []int `json:"capped,omitempty"`
	Best   int   `json:"best"` // the round's fastest (predicted, or measured in the full round)
	// Threshold is the least prediction the round drops (every
	// configuration dropped was predicted at it or above; one kept, less
	// certain, may be too): the confidence rule's boundary for a
	// prediction without standard error, the budget's edge, or a run cut
	// short there, whichever is lowest (analysis.Cut.Threshold). 0: none.
	ThresholdS float64 `json:"threshold_s,omitempty"`
	ElapsedS   float64 `json:"elapsed_s"` // the round's runs' wall time, summed
}

// SearchEvent is a search's outcome: the configuration chosen and what
// the search cost.
type SearchEvent struct {
	Type    string  `json:"type"`
	V       int     `json:"v"`
	Method  Search  `json:"method"`
	Policy  string  `json:"policy"`
	Chosen  int     `json:"chosen"` // configuration index
	Config  Config  `json:"config"`
	ChosenS float64 `json:"chosen_s"` // its mean full-run time in the last round
	// Finalists are the configurations of the full round, fastest first:
	// the search's estimate of the best class.
	Finalists  []int   `json:"finalists"`
	Rounds     int     `json:"rounds"`
	Considered int     `json:"considered"` // configurations in round 1
	SearchS    float64 `json:"search_s"`   // wall time of every run the search made
}
