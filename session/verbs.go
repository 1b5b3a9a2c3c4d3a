package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/approxtune/approxtune/internal/atomicfile"
	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

// verb is one command of the language.
type verb struct {
	name, syntax, summary, help, example string
	run                                  func(s *Session, ctx context.Context, c *Command, out Output) error
}

// verbs is the command table. It is a function so no package state exists.
func verbs() []verb {
	return []verb{
		{"help", "help [COMMAND]", "list the commands, or explain one",
			"Without a word, lists the commands. With one, gives its syntax, what it does, and an example.", "help space", cmdHelp},
		{"status", "status", "show the state and the agent",
			"Shows the workload, its space, the policies, tolerances, confidence, reference repetitions and ranks, how many configurations and runs a sweep would make, the agent (ranks, hosts, MPI and BLAS libraries) and the session directory.", "status", cmdStatus},
		{"workload", "workload [NAME [KEY=VALUES ...]]", "choose the workload to tune",
			"Chooses the workload and resets its space to the workload's defaults; KEY=VALUES fixes or lists parameters as 'space' does. Alone, lists the workloads with their parameters, defaults and valid values.", "workload summa n=2048", cmdWorkload},
		{"program", "program [CMD ARGS... [deck FILE=TEMPLATE ...]]", "tune your own MPI program instead of a workload",
			"Each run of a sweep becomes one launch of CMD (apriori's selective run two: a counting launch first) with approxtune's preload library (under the local mpirun; with 'launcher slurm', a job step, srun), which times the run from MPI_Init to MPI_Finalize (or, where the program calls APPROXTUNE_BEGIN() and APPROXTUNE_END() from include/approxtune.h on every rank, or from Fortran approxtune_begin() and approxtune_end() of include/approxtune_fortran.c, the region between them: leave out input generation and checks; what comes before the region runs in full in every launch) and, in selective runs, puts its BLAS, LAPACK and MPI calls through the engine. {NAME} in the arguments and in each deck template is the configuration's value of the space's parameter NAME ({grid_r}, {grid_c}, and {grid_d} in 3D, for a grid; {ranks}); a deck FILE is written from TEMPLATE in each launch's directory. The space's parameters are whatever 'space' sets; a grid or ranks=N gives the rank count. 'workload NAME' goes back to a built-in workload. 'approxtune program --check CMD' shows what a program calls. The program must make its MPI calls from one thread (BLAS and LAPACK from others run as they are), and 'deadline' stops a launch that hangs. 'tune search=halving' searches a program's space as a workload's, each run a launch. Alone, shows the program.", "program ./solver -nb {b} -p {grid_r} -q {grid_c}", cmdProgram},
		{"space", "space [KEY=V1,V2,... ...]", "set the values each parameter takes",
			"Every combination of the listed values is a configuration of the sweep. A parameter not listed keeps the values an earlier 'space' gave it, or its default (a workload command starts afresh; a program command after another program keeps the space). Values: integers, grids PRxPC (or PRxPCxPD), choices. Alone, shows the space. KEY=default puts one parameter back to its default (a program's parameter leaves the space, and cannot take the word default as a value); 'space reset' puts them all back.", "space b=64,128,256 grid=1x4,2x2,4x1", cmdSpace},
		{"grid", "grid [PRxPC[,PRxPC...]]", "shorthand for space grid=...",
			"Sets the processor grids of the space. Alone, shows them.", "grid 2x2,1x4,4x1", cmdGrid},
		{"policy", "policy [NAME[,NAME...]]", "choose the skipping policies to compare",
			"Alone, shows the policies set. Each policy makes one selective run per configuration and tolerance, and decides in its own way when a kernel's mean is known well enough to skip it: alpha, in the test of 'help tolerance', is how many times the policy takes the kernel to lie on the critical path. The policies:\n" + policyList(),
			"policy conditional,eager", cmdPolicy},
		{"tolerance", "tolerance [T[,T...]  |  2^A..2^B]", "set the confidence tolerances epsilon",
			"Alone, shows the tolerances set. A kernel is skipped once the half-width of its mean's confidence interval, relative to the mean and divided by sqrt(alpha), is at most epsilon. Numbers (0.125), powers of two (2^-3), and ranges of powers (2^0..2^-6, every power between). 0 skips nothing.", "tolerance 2^-1,2^-3,2^-5", cmdTolerance},
		{"confidence", "confidence [C]", "set the confidence level of the intervals",
			"A number strictly between 0 and 1; 0.95 by default. Alone, shows the setting.", "confidence 0.99", cmdConfidence},
		{"reps", "reps [N]", "set the full runs per configuration in evaluate",
			"How many times evaluate runs each configuration in full to get its reference time (1-1000, default 3), after one untimed warm-up run. Alone, shows the setting.", "reps 5", cmdReps},
		{"ranks", "ranks [N]", "set the agent's MPI ranks",
			"The number of ranks the agent runs with (default 4), under this machine's mpirun or as a Slurm job's tasks ('launcher slurm'; with nodes= and tasks-per-node= set, their product, which 'ranks' cannot change); a running agent is stopped and the next sweep starts one with N ranks. More ranks than cores is allowed (ranks then share cores). A program's launches do not take it: each runs on its configuration's grid or ranks= ('space ranks=2,4'), as 'status' shows. Alone, shows the setting.", "ranks 8", cmdRanks},
		{"deadline", "deadline [off | Kx | TIME]", "stop a sweep whose run hangs",
			"A rank that stops making progress (a deadlock, a livelock) is not a death: the agent still answers, and the sweep would wait for ever. With a deadline, a sweep in which no run ends in time is stopped as hung: the agent is stopped (for a program, the launch under way), the configuration that hung is named, and 'resume' retries it or, with hung=skip, goes on without it. In a program's search, which cannot be resumed, a selective launch or a finalist's full launch that hangs is stopped alone and its configuration leaves the search, which goes on (an evaluate search's reference run that hangs ends it). Kx (default 10x) allows a run K times its configuration's reference time (the mean of its reference runs so far, in the sweep or the results it resumes) or, while the configuration has none (tune; its first runs), K times its latest predicted time (a search's full runs), or before it has one K times the sweep's longest run so far; at least 5 s (the first run of a fresh sweep has nothing to go by, and no deadline: a program's tune search, whose first launch is a selective one, is safest with a TIME); TIME (90s, 5m, 2h) is a fixed time per run; off waits for ever. Alone, shows the setting.", "deadline 30s", cmdDeadline},
		{"trace", "trace [on|off]", "record the timelines of selective runs (plot gantt, anomalies)",
			"With trace on, every selective run of the next sweeps records on each rank every kernel and communication it intercepts (start, end, routine, size; skipped ones as the instant they were skipped, with their predicted time), and the agent sends the timelines after the run, outside its timed region. 'plot gantt' draws one; 'anomalies' finds in one the kernels slower than their size predicts. At most 20000 kernels per rank and run are kept (fewer with more than 10 ranks). Alone, shows the setting; off by default.", "trace on", cmdTrace},
		{"models", "models [on|off]", "predict kernels never measured from performance models",
			"With models on, a computation kernel of a size not measured yet (a new block size) is predicted from its routine's performance model, fitted as 'model' fits them over the sizes measured so far (by the process; under eager, also what the grid shared), and skipped from its first call, when that model rests on at least 4 distinct sizes, the new size lies among them or one step beyond, and the model's error (leave-one-out, its 95% prediction band, and beyond the sizes the error of predicting the last one from the others) is within the tolerance; otherwise it runs until its own samples settle it, as with models off. Communication is never predicted from a model. The kernels table shows such kernels as modelled. Alone, shows the setting; off by default.", "models on", cmdModels},
		{"messages", "messages [skip|run]", "let selective runs skip messages, or run them all",
			"With messages skip (the default), a selective run skips a message or collective its policy can predict, as it skips kernels (of a program's, a floating-point one over 4 KiB: its integer and small ones always run), which then arrives empty and leaves its receive buffer as it was. Some programs send what they compute with inside such data: HPL sends each row's index with the row it swaps, and a panel's pivots with the panel; a skipped one leaves the receiver stale indices, and its selective runs crash (a segmentation fault, MPI_ERR_TRUNCATE) where its full runs do not. With messages run, every message and collective runs, its time measured, and only computation kernels are skipped: such a program runs through, at a smaller speed-up. A sweep keeps the setting it started with: 'resume' runs the rest with it, and a new evaluate or tune takes the current one. Alone, shows the setting.", "messages run", cmdMessages},
		{"listen", "listen [ADDR | off]", "wait for a cluster agent to dial in",
			"Opens a listener (default on all interfaces, a free port) and prints the command to run under your batch system; the token the agent presents in APPROXTUNE_TOKEN is written to the session directory's agent-token file, readable by you only, never printed (so it stays out of notebooks and logs). Agents always dial in to the session; there is no 'connect'. The next sweep waits for an agent. 'listen off' goes back to local agents.", "listen 0.0.0.0:7077", cmdListen},
		{"launcher", "launcher [local | slurm [KEY=VALUE ...]]", "start agents on this machine or through Slurm",
			"local (the default) runs each agent under this machine's mpirun. slurm submits it as a Slurm batch job (sbatch) whose srun runs the agent's ranks, or, when the session itself runs inside an allocation (SLURM_JOB_ID is set), runs it as a job step with srun. The agent dials back to the session; its token travels in the job's environment, never on a command line or in a file. The sweep's display shows the job: pending with Slurm's reason, running on which nodes, finished; interrupting cancels it (scancel), as closing the session does. A job Slurm says will never start as it is (more than its partition has or allows: PartitionConfig, PartitionNodeLimit, PartitionTimeLimit) is cancelled at once, and the error lists the partitions with their nodes, CPUs and time limits. A job that fails, runs out of time or is cancelled by Slurm is reported with its state, exit code and the end of its output, and 'resume' runs the rest with a new job. The journal keeps the jobs each sweep ran in ('table best' and 'load' name them). A program sweep ('program') holds its nodes with a batch job that only waits, shown as the agent's is, and runs each launch of the program in it as a job step (srun --jobid; inside an allocation, a step of it), the preload library loaded into the ranks (env LD_PRELOAD=...), its settings in srun's environment; the job is cancelled when the sweep ends, and ends itself when a killed session has not been heard from for 3 minutes. The job runs 'ranks' ranks (a program's: the most its space asks for); its options: nodes=N, tasks-per-node=N (with nodes, sets ranks to their product), partition=NAME, time=LIMIT (in Slurm's format, e.g. 00:30:00; Slurm's partition default without it), account=NAME, extra=\"SBATCH OPTIONS\" (passed as they are; those approxtune sets itself, such as --output or --time, are refused, naming what sets them), mpi=PLUGIN (srun's --mpi; Open MPI needs pmix where the site's default differs), address=HOST[:PORT] (what the compute nodes dial to reach this session; default this machine's name and a free port), output=DIR (the jobs' output files and program sweeps' run directories, on a file system the nodes share; default ~/.local/state/approxtune/slurm). An option a command set stays when a later 'launcher slurm' sets others, and across 'launcher local'; KEY=default clears it, back to the defaults file's value where it has one. Defaults come from ~/.config/approxtune/launcher.json ({\"slurm\": {\"partition\": \"debug\", \"time\": \"00:30:00\"}}), then the command. Alone, shows the launcher and where its options came from. The agent stays up between sweeps, its job holding its nodes, until the session ends, the launcher or the ranks change, or its time limit.",
			"launcher slurm nodes=2 tasks-per-node=8 partition=debug time=00:30:00", cmdLauncher},
		{"connect", "connect", "(agents dial in: see listen)",
			"approxtune's agents always dial the session, which works through firewalls that allow outbound connections from compute nodes. Use 'listen' and run the command it prints.", "listen", cmdConnect},
		{"evaluate", "evaluate [search=halving|random budget=N [seed=S] policy=P]", "run full and selective runs: errors and speed-up",
			"For every configuration, runs the reference (full execution, 'reps' times) and one selective run per policy and tolerance; reports each prediction's error, the autotuning speed-up and whether the configuration picked from predictions is the truly best one. With search= (see 'help tune'), runs every configuration's references first, then the search, and judges its choice: the best class (configurations within the noise floor of the best reference time), whether the choice is in it, its quality, and how many times faster the search was than one full run of every configuration. Interrupt to stop at the next run boundary.", "evaluate search=halving", cmdEvaluate},
		{"tune", "tune [search=halving|random budget=N [seed=S] policy=P]", "run selective runs only and pick the best",
			"Runs every configuration under each policy and tolerance with skipping, and picks the one with the least predicted time: what you do in production. search=halving searches instead (successive halving): round 1 runs every configuration once at the loosest tolerance set, under one policy (policy=; else eager when it is among the policies set, or the first of them); a configuration whose predicted time is above the fastest's by more than the two predictions' uncertainty allows (their standard errors and an allowance of half the tolerance, at least 5%, at the confidence set) is dropped; each next round runs the survivors at the next tolerance (with 'tolerance 2^-1,2^-3,2^-5', the default, 2^-3 then 2^-5), keeping the samples measured so far; after the tightest tolerance, or once 7 or fewer survive, each round's leader and the fastest predicted survivors, 3 in all, and the fastest predicted survivor of each process count none of them runs, run once in full (a workload's each after a warm-up run), and the fastest is chosen; where the rounds ended before the tightest tolerance and survivors did not run in full, 'table best' names them (their loose predictions passed them over: start at a tighter tolerance for tighter rounds to rank them). A line per round says how many ran, were kept and dropped, and why, with the least prediction dropped ('each predicted at T s or more'; one kept, less certain, may lie above T); 'table best' shows the rounds, the choice and the search's time; 'plot search' draws the rounds. search=random budget=N does the same on N configurations drawn at random (for spaces too large to run whole); seed=S (default 1) draws another sample, the same one for the same seed. A program's search ('program') is the same, each run a launch: a launch is cut short only where the program asks (APPROXTUNE_CUT_SHORT(), include/approxtune.h), no finalist warms up (each launch starts as cold as the others), and a configuration whose launch fails (a selective one, or a finalist's full one) leaves the search (where every finalist leaves, the other survivors run in full in turn). A search cannot be resumed run by run.", "tune search=halving", cmdTune},
		{"controls", "controls", "widgets for policy, tolerance, grid, parameters and sweeps (Jupyter)",
			"In a Jupyter notebook (Notebook, JupyterLab), shows the sweep's settings as widgets under the cell: policy (select several), tolerance (a slider over 2^0..2^-10: moving it sets that one tolerance; when several are set, as typed with 'tolerance 2^-1,2^-3', it stands at the tightest and a note beside it lists those the sweep runs), grid (the grids of the rank count), a text box per workload parameter (values as 'space' takes them, like 64,128: applied on Enter, when the box loses focus, and before a sweep, also one typed in a cell), the buttons evaluate, tune and cancel, and an output area. Changing a control runs the command you would type (policy, tolerance, grid, space NAME=VALUES), which the transcript and the journal keep as typed, and shows it in the output area with its output or error; evaluate and tune show the sweep there as it runs; cancel stops it as an interrupt does. Commands typed in cells update the controls. Elsewhere (the REPL, jupyter console, approxtune run) it prints the commands to type.",
			"controls", cmdControls},
		{"load", "load SESSION [sweep=N]", "open a finished session's sweeps for analysis",
			"Reads another session's journal and adds its sweeps to this session, numbered after this session's own, without running anything: the last one loaded becomes the sweep that table, plot, save, export csv, rank, model and anomalies read. SESSION is the session's directory, or its id under the sessions directory (Tab completes the ids, the most recent first); sweep=N loads only its sweep N. For each sweep it says the mode, workload, configurations, runs with results, whether it has kernel statistics and timelines, and which analyses its data allows: rank needs 2 full runs per configuration or more (evaluate with reps 2 or more) or a tune sweep, model needs kernel statistics, anomalies needs timelines (trace on). The sweeps are copied into this session's journal, so loading or resuming this session later finds them too. An unfinished sweep is loaded as it is, and says so: 'resume SESSION' runs its missing runs.", "load 20261125-101500-a1b2c3", cmdLoad},
		{"resume", "resume [SESSION] [hung=retry|skip] [skip=N[,N...]]", "run the missing runs of an interrupted sweep",
			"Reruns only the runs of the last sweep that have no result (after a cancel, a crash, a dead agent, or a run that hung past its deadline), on the ranks the sweep ran on, judged against the references its configurations already have; eager starts from the kernel statistics it had when the sweep stopped. After a hang, hung=retry (the default) runs the configuration that hung again, hung=skip goes on without it for good (it has no results, and tables leave it out). skip=N leaves out configuration N the same way, as for one whose full run fails every time (the failure gives its number N; 'table configs' numbers those with results). SESSION is another session's directory or id (under the sessions directory), to finish a sweep a crashed session left: its last sweep is copied into this session and its missing runs are run, on the kind of launcher it ran on (local mpirun or Slurm): a session of the other kind takes the sweep's whole launcher, its time= too, and keeps it for later sweeps, so set 'launcher slurm time=...' first to run it otherwise. 'load SESSION' only reads a session's sweeps, to look at them or analyse them, and runs nothing.", "resume", cmdResume},
		{"table", "table configs|kernels|best [sweep=N]  |  table kernels [routine=R] [top=N|all] [config=N] [policy=P] [tolerance=T]", "print results as a table",
			"configs: one row per run: reference time, predicted time with its standard error (what the skipped kernels leave unknown), error, selective time, share skipped. kernels: the kernels of the last selective run (rank 0): samples, mean, half-width, calls, skipped, state; config=, policy= and tolerance= choose another run (the last that matches), routine= one routine (gemm) or family (gemm[NN]); more than 40 kernels, or top=N, list those that took the most time in the run (mean x calls) first, top=all every one. best: per policy and tolerance, the speed-up, mean and max error, the chosen and the best configuration and the quality of the choice; for a search (tune search=halving), its rounds (tolerance, configurations run, kept and dropped, the fastest, seconds), the choice and what the search cost, and after evaluate the choice judged by the references.", "table best", cmdTable},
		{"plot", "plot speedup|error|configs|kernels|path|gantt|rank|anomalies|search [FILE] [policy=P] [tolerance=T] [config=N]  |  plot model ROUTINE [FILE] [sweeps=all]  |  plot live [FILE|off]", "draw a figure of the last sweep, or every sweep's as it runs",
			"speedup: autotuning speed-up against tolerance, per policy (a program's also with each launch's start and end counted, dashed with hollow markers: for a program of seconds or less, what you wait for). error: mean prediction error against tolerance (max error as rings, the ideal error = tolerance dashed). configs: reference time (95% interval) and each policy's predicted time per configuration, best and chosen marked. kernels: each kernel's relative half-width against its samples, with the tolerance, on rank 0 in one selective run: config=, policy= and tolerance= choose it as for 'table kernels' (default the last). path: the predicted critical path per configuration (computation, communication, idle) with the reference time. rank: the 25 fastest configurations by mean, by performance class, then mean time, each with its 95% interval and minimum, the classes shaded and the best one green (see help rank; a tune sweep's predictions of policy= at tolerance=). In the REPL the figure goes to FILE (.png or .svg; default NAME-sweepN.png) and its path is printed; in a notebook it is shown. configs shows every policy's predictions at one tolerance, or policy='s alone, and marks that policy's choice (default the first policy); path shows one policy and tolerance; tolerance= chooses (default the smallest). gantt: one selective run's timeline, a lane per rank, a box per kernel colored by routine, skipped kernels pale under their lane (needs 'trace on' before the sweep); config= (the configuration's index, from 0 as in 'table configs'), policy= and tolerance= choose the run (default the last traced one); anomalous kernels are outlined. model ROUTINE (plot model gemm [FILE] [sweeps=all]): the routine's mean times per call against size with their 95% intervals, its performance model and 95% prediction band, on log-log axes, from the last sweep's kernels or with sweeps=all every sweep's, as 'model' reads them (see 'help model'). anomalies: per routine of that run, kernel durations against their size on log axes with the fit and its 95% prediction interval, anomalies ringed (see 'help anomalies'). search: a search's rounds (tune search=halving), a column each, every configuration it ran a dot at its predicted time (measured, in the full round), survivors blue, the dropped grey, the chosen green, the drop threshold dashed; an evaluate search adds a first column of every configuration's mean reference time and the best one dotted. live FILE: from now on every sweep redraws FILE (.png or .svg, replaced whole) as its results arrive, at most once a second and at its end: speedup and error side by side for evaluate, configs for tune; open it in an image viewer that reloads. 'plot live off' stops; alone, shows the setting. A notebook's sweep display draws them anyway.", "plot error error.svg", cmdPlot},
		{"rank", "rank [threshold=T] [reps=N] [draws=M] [k=A..B] [seed=S] [policy=P tolerance=T] [sweep=N]", "sort the last sweep's configurations into performance classes",
			"Sorts the last sweep's configurations into performance classes: configurations whose times are equivalent share a class, and class 1 is the fastest (relative performance, Sankaran and Bientinesi). Two configurations are compared by bootstrap: in each of draws= draws (default 30) K of each one's times are drawn, K at random in k= (default 5..10), and their minima compared (a tie is half a win); one is faster when it wins at least threshold= of the draws (from 0.5 up to, but not, 1; default 0.9: the higher, the more pairs are equivalent), slower when it wins fewer than 1 - threshold, equivalent otherwise. A bubble sort with these comparisons gives equivalent configurations one rank; it is repeated reps= times (default 100; not the 'reps' command's reference runs) from random orders, and the classes shown are those most sorts gave. A configuration's relative score is the share of the sorts that put it in class 1: near 1 it is reliably among the fastest, 0 never. Sources: an evaluate or reference sweep is ranked on each configuration's reference runs (2 or more each: 'reps 3' before evaluate; with fewer runs than K a draw nearly always holds a configuration's fastest run, and equivalence shows from about 20); a tune sweep, which runs nothing in full, on the predictions of one policy at one tolerance (policy=, tolerance=; default the first policy, the smallest tolerance), each the source of 50 times drawn from a normal distribution around its predicted time, of its standard error widened by the allowance a search grants the tolerance (half of it, at least 5%: the run-to-run noise and bias the standard error leaves out), compared one drawn time a side (unless k= says otherwise: the least of several draws would favour the least certain prediction). seed= (default 1) fixes the draws, so a ranking reproduces. Prints the best class, then per configuration its class, relative score, mean and minimum time (for a tune sweep the prediction and its standard error), class by class, each class's fastest first. 'plot rank' draws it; 'table best' and the end of a sweep name the best class among the 40 fastest by mean; 'plot rank' draws the 25 fastest.",
			"rank threshold=0.8 reps=500", cmdRank},
		{"save", "save FILE", "write the last sweep's results as JSON lines",
			"One JSON object per run, as the agent reported it.", "save results.jsonl", cmdSave},
		{"model", "model [ROUTINE [PARAM=SIZE ...]] [sweeps=all] [sweep=N]", "fit performance models of the kernels against their sizes",
			"Fits a performance model to each kernel family's mean time per call against its sizes: Extra-P's performance model normal form (Copik et al., \"Extracting Clean Performance Models from Tainted Programs\"), t = c0 + sum of c_k * product of x^i * log2(x)^j, i in {0, 1/4, 1/3, 1/2, ..., 11/4, 3}, j in {0, 1, 2}. The data are rank 0's kernel statistics (and, for a computation kernel rank 0 has no samples of, the rank's that measured it most) after each selective run of the last sweep (sweeps=all: every sweep of this session), pooled per size weighted by their samples (eager's, which carry over from one configuration to the next, from its last run). A family is a routine with its flags, gemm[NT] (sizes: gemm, larfb m, n, k; syrk, larft n, k; trsm, trmm, geqrf m, n; potrf, trtri n), or a communication routine, isend (message bytes and communicator size p, all communicators pooled); the synthetic workload's spins have no size and are left out. The search: for one parameter, every hypothesis c0 + c1*x^i*log2(x)^j is fitted by least squares on relative residuals and scored by its leave-one-out SMAPE, and the simplest within one standard error of the best wins; for several, Extra-P's heuristic combines each parameter's best terms into products and sums and scores those. A parameter constant at every size is dropped; parameters that vary together, as the m, n, k of a tile algorithm's b x b x b gemm (no 3 sizes along one with the others fixed), are modelled through one derived size, the kernel's flops (bytes for a communication), as is a family whose search keeps no term in a parameter that varies where the flops fit the sizes better; a parameter measured at two values apart from the others (an allreduce's p on 2 and 4 ranks) is held at the value most sizes have, a fit along one needing three. A fit needs at least 5 distinct sizes. Alone, model prints a line per family: the formula (t in seconds), its SMAPE (symmetric mean absolute percentage error of the fit) and adjusted R^2 (1: a perfect fit), and its sizes. model ROUTINE (gemm, or one family: gemm[NT]) shows each measured size's mean and 95% interval beside the model's prediction and 95% prediction band; model gemm m=512 n=512 k=512 predicts a size never measured, with its band, and says when that is an extrapolation, or that the model gives no time there (at or below zero). 'plot model ROUTINE [FILE] [sweeps=all]' draws the means, the model and its band against size; 'export extrap FILE' writes the measurements in Extra-P's text format.", "model gemm m=512 n=512 k=512", cmdModel},
		{"anomalies", "anomalies [config=N] [policy=P] [tolerance=T] [level=L] [sweep=N]", "find kernel executions slower than their size predicts (traced runs)",
			"Finds the kernel executions of a traced run slower than their size predicts (as Miletto et al. do for task-based solvers, \"Performance analysis of task-based multi-frontal sparse linear solvers\"). Per routine, log(duration) of its executed kernels is regressed on log(size), flops for computation and bytes per process for communication (a routine without sizes, like spin or barrier, is fitted as one duration), and an execution above the upper bound of the prediction interval for its size is anomalous. Prints those, computation first, then communication (whose time includes the wait for its partners: a late sender counts there as much as a slow transfer), each most above its expected duration first (rank, routine, start in the run, duration, expected duration, the upper bound, how many times the expected; the first 20 of each, then a count), and each routine's fit (duration = c · size^e, the spread of its residuals as a factor, its anomalies). config=, policy= and tolerance= choose the run as for 'plot gantt' (default the last traced one; it needs 'trace on' before evaluate or tune); level= sets the interval's level (default 0.95, as in the paper; 0.99 or 99% flags fewer: even without anomalies, a 95% interval leaves about 2.5% of log-normal times above it). Skipped kernels have no duration: trace a run at 'tolerance 0' to see every kernel. 'plot anomalies' draws the fits; 'plot gantt' outlines the anomalous kernels.", "anomalies", cmdAnomalies},
		{"export", "export csv|notebook|extrap FILE", "write results as CSV, kernel times for Extra-P, or this session as a notebook",
			"csv: the last sweep's results, one row per run with the configuration's parameters as columns, for pandas or a spreadsheet. extrap FILE [ROUTINE] [sweeps=all]: the kernel times 'model' fits, in Extra-P's text input format (PARAMETER, POINTS, METRIC time, a REGION per kernel family with a DATA line per point: the mean of each part pooled there, a selective run's kernel or kernels of that size on other communicators, in seconds per call; 'model' fits their mean weighted by their calls, Extra-P weighs them alike), with the parameters 'model' uses; an Extra-P file has one set of points for all its regions, so each routine (each family, where their sizes differ) goes to a file of its own, FILE's name with the routine added (FILE-gemm.txt) when there are several. notebook: a Jupyter notebook (.ipynb) of this session so far: each command that succeeded is a code cell, in order, with the output the Jupyter kernel shows for it (text, the sweep's final progress display, tables, figures), and consecutive comment lines become one markdown cell. Failed commands and 'export notebook' itself are left out. 'approxtune run FILE' executes it again.", "export notebook session.ipynb", cmdExport},
	}
}

func findVerb(name string) (verb, bool) {
	for _, v := range verbs() {
		if v.name == name {
			return v, true
		}
	}
	return verb{}, false
}

func verbList() string {
	var n []string
	for _, v := range verbs() {
		n = append(n, v.name)
	}
	return strings.Join(n, ", ")
}

// Verbs lists the command names (for completion).
func Verbs() []string {
	var n []string
	for _, v := range verbs() {
		n = append(n, v.name)
	}
	return n
}

// HelpFor returns the help of a command, or false. A verb's help is one
// paragraph, wrapped here; lines after its first newline are a list, kept
// as they are.
func HelpFor(name string) (string, bool) {
	name = strings.ToLower(name)
	lead := ""
	if name == "search" || name == "budget" || name == "halving" {
		// Options, not commands: tune's help explains them.
		lead = fmt.Sprintf("%s is an option of tune and evaluate (search=halving, search=random budget=N); from 'help tune':\n\n", name)
		name = "tune"
	}
	v, ok := findVerb(name)
	if !ok {
		return "", false
	}
	text, list, _ := strings.Cut(v.help, "\n")
	if readsSweep(v.name) {
		text += " It reads the session's last sweep with results; sweep=N (as numbered when it ran) reads sweep N instead."
	}
	if list != "" {
		list = "\n" + list
	}
	return fmt.Sprintf("%s%s\n\n  %s\n%s\nExample:\n  %s\n", lead, v.syntax, wrap(text, 76, "  "), list, v.example), true
}

// policyList lists the registered policies with what each does, a line
// each (wrapped under the description).
func policyList() string {
	var b strings.Builder
	for _, p := range policy.All() {
		fmt.Fprintf(&b, "  %-12s %s\n", p.Name(), wrap(p.Doc(), 62, strings.Repeat(" ", 15)))
	}
	return b.String()
}

func wrap(s string, width int, indent string) string {
	var b strings.Builder
	col := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && col+1+len(w) > width {
			b.WriteString("\n" + indent)
			col = 0
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

// agentGone reports whether a's connection has ended (its job reached its
// time limit while idle, say): 'status' says so rather than describe it.
func agentGone(a *Agent) bool {
	select {
	case <-a.Gone():
		return true
	default:
		return false
	}
}

func noArgs(c *Command) error {
	if len(c.Args) > 0 {
		return errAt(c.Args[0].Col, "%s takes no arguments (see help %s)", c.Verb, c.Verb)
	}
	return nil
}

func oneArg(c *Command, what string) (Arg, error) {
	if len(c.Args) != 1 || c.Args[0].Key != "" {
		col := c.VerbCol
		switch {
		case len(c.Args) > 0 && c.Args[0].Key != "":
			col = c.Args[0].Col
		case len(c.Args) > 1:
			col = c.Args[1].Col // the first word too many
		}
		v, _ := findVerb(c.Verb)
		if len(c.Args) > 1 && c.Args[0].Key == "" {
			// The first word was right: say what is too many ('table
			// kernels config=0' had been told to say what to tabulate).
			return Arg{}, errAt(col, "%s takes one word, %s, and no more: %s is one too many (%s)", c.Verb, what, c.Args[1], v.syntax)
		}
		return Arg{}, errAt(col, "%s takes %s: %s (e.g. %s)", c.Verb, what, v.syntax, v.example)
	}
	return c.Args[0], nil
}

func cmdHelp(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 {
		var b strings.Builder
		b.WriteString("Commands (one per line; # starts a comment):\n")
		for _, v := range verbs() {
			fmt.Fprintf(&b, "  %-34s %s\n", v.syntax, v.summary)
		}
		b.WriteString("\n'help COMMAND' explains one. A sweep: workload, space, policy, tolerance, then evaluate or tune.\nIn the REPL, exit or quit (or Ctrl-D) leaves.\n")
		out.Print(b.String())
		return nil
	}
	if len(c.Args) == 2 && strings.ToLower(c.Args[0].Value) == "plot" && slices.Contains(FigureNames(), strings.ToLower(c.Args[1].Value)) {
		c.Args = c.Args[:1] // 'help plot gantt' is plot's help
	}
	a, err := oneArg(c, "a command name")
	if err != nil {
		return err
	}
	if v := strings.ToLower(a.Value); v == "exit" || v == "quit" {
		out.Print("exit, quit\n  Leave the REPL (Ctrl-D too), stopping its agent; the session directory keeps the journal, and 'approxtune repl --dir DIR' opens it again. In a notebook, shut the kernel down from its menu.")
		return nil
	}
	h, ok := HelpFor(a.Value)
	if !ok && slices.Contains(FigureNames(), strings.ToLower(a.Value)) {
		// A figure is plot's: 'help gantt' had said there is no such
		// command.
		h, ok = HelpFor("plot")
		h = fmt.Sprintf("%s is a figure of plot ('plot %s'):\n\n%s", strings.ToLower(a.Value), strings.ToLower(a.Value), h)
	}
	if !ok {
		if n := format.Nearest(a.Value, Verbs()); n != "" {
			return errAt(a.Col, "no command %q: did you mean %s? The commands are %s", a.Value, n, verbList())
		}
		return errAt(a.Col, "no command %q: the commands are %s", a.Value, verbList())
	}
	out.Print(h)
	return nil
}

func cmdStatus(s *Session, ctx context.Context, c *Command, out Output) error {
	if err := noArgs(c); err != nil {
		return err
	}
	var b strings.Builder
	st := s.st
	fmt.Fprintf(&b, "workload    %s\n", st.Workload)
	if st.Program != nil {
		fmt.Fprintf(&b, "  %s\n", strings.ReplaceAll(describeProgram(st.Program), "\n", "\n  "))
	}
	if w, ok := s.schemas().find(st.Workload); ok {
		for _, p := range w.Params {
			vals, set := st.Space[p.Name]
			if !set {
				fmt.Fprintf(&b, "  %-10s %v (default)\n", p.Name, fmtValue(p.Default))
				continue
			}
			fmt.Fprintf(&b, "  %-10s %s\n", p.Name, fmtValues(vals))
		}
	}
	fmt.Fprintf(&b, "policies    %s\n", strings.Join(st.Policies, ", "))
	var ts []string
	for _, t := range st.Tolerances {
		ts = append(ts, format.Tolerance(t))
	}
	fmt.Fprintf(&b, "tolerances  %s\n", strings.Join(ts, ", "))
	trace := "off"
	if st.Trace {
		trace = "on (timelines for plot gantt)"
	}
	fmt.Fprintf(&b, "confidence  %g\nreps        %d\nranks       %s\ntrace       %s\ndeadline    %s\n", st.Confidence, st.Reps, statusRanks(st), trace, st.Deadline)
	switch {
	case st.Messages == sweep.MessagesRun:
		fmt.Fprintf(&b, "messages    run (every message and collective runs; kernels alone are skipped)\n")
	case st.Program != nil: // where it matters; a built-in workload's status leaves the default unsaid
		fmt.Fprintf(&b, "messages    skip (selective runs may skip messages as they skip kernels; 'messages run' runs them all)\n")
	}
	fmt.Fprintf(&b, "launcher    %s\n", strings.TrimPrefix(st.Launcher.Command(), "launcher "))
	if _, configs, err := validate(s.schemas(), st, sweep.ModeEvaluate, st.Ranks); err != nil {
		fmt.Fprintf(&b, "sweep       not runnable yet: %v\n", err)
	} else {
		fmt.Fprintf(&b, "sweep       %s x %s x %s = %s, plus %s in evaluate\n",
			format.Count(len(configs), "configuration", "configurations"), format.Count(len(st.Policies), "policy", "policies"),
			format.Count(len(st.Tolerances), "tolerance", "tolerances"), format.Count(len(configs)*len(st.Policies)*len(st.Tolerances), "selective run", "selective runs"),
			format.Count(len(configs)*st.Reps, "reference run", "reference runs"))
	}
	switch {
	case st.Program != nil && st.Launcher.Slurm():
		fmt.Fprintf(&b, "runs        each a launch of the program, a Slurm job step (srun) on its configuration's ranks\n")
	case st.Program != nil:
		fmt.Fprintf(&b, "runs        each a launch of the program on the local mpirun, on its configuration's ranks\n")
	case s.agent != nil && agentGone(s.agent):
		why := "its connection ended"
		if err := s.agent.Err(); err != nil {
			why = err.Error()
		}
		fmt.Fprintf(&b, "agent       gone (%s; it was run by %s): the next sweep starts another\n", why, s.agent.runBy())
	case s.agent != nil:
		fmt.Fprintf(&b, "agent       %s; run by %s\n", describeAgent(s.agent), s.agent.runBy())
	case s.ln != nil:
		fmt.Fprintf(&b, "agent       none: listening at %s for a cluster agent\n", s.ln.Addr())
	case st.Launcher.Slurm():
		fmt.Fprintf(&b, "agent       none: the next sweep submits one (%d ranks) to Slurm ('launcher')\n", st.Ranks)
	default:
		fmt.Fprintf(&b, "agent       none: a local one (%d ranks) starts with the next sweep\n", st.Ranks)
	}
	if c := lastCopyCost(s.sweeps); c > 0 {
		fmt.Fprintf(&b, "copy cost   %.2g s/B: core time per byte of a large transfer where processes share cores, measured by the agent at its start (the last sweep's)\n", c)
	}
	fmt.Fprintf(&b, "session     %s\n", s.opts.Dir)
	out.Print(b.String())
	return nil
}

// lastCopyCost is the copy cost the latest sweep that reported one
// carries (Sweep.CopyCost), 0 when none did.
func lastCopyCost(sweeps []*Sweep) float64 {
	for i := len(sweeps) - 1; i >= 0; i-- {
		if c := sweeps[i].CopyCost; c > 0 {
			return c
		}
	}
	return 0
}

func fmtValue(v any) string {
	if g, ok := v.(sweep.GridShape); ok {
		return g.String()
	}
	return fmt.Sprint(v)
}

func fmtValues(vs []any) string {
	var s []string
	for _, v := range vs {
		s = append(s, fmtValue(v))
	}
	return strings.Join(s, ",")
}

func cmdWorkload(s *Session, ctx context.Context, c *Command, out Output) error {
	ss := s.schemas()
	if len(c.Args) == 0 {
		var b strings.Builder
		for _, w := range ss {
			fmt.Fprintf(&b, "%s: %s\n", w.Name, w.Doc)
			for _, p := range w.Params {
				fmt.Fprintf(&b, "  %-11s %s; default %s; %s\n", p.Name, p.Doc, fmtValue(p.Default), p.Valid())
			}
		}
		out.Print(b.String())
		return nil
	}
	a := c.Args[0]
	if a.Key != "" {
		return errAt(a.Col, "workload takes a name first: workload NAME [KEY=VALUES ...] (workloads: %s)", strings.Join(ss.names(), ", "))
	}
	w, ok := ss.find(a.Value)
	if !ok {
		return errAt(a.Col, "unknown workload %q: the workloads are %s", a.Value, strings.Join(ss.names(), ", "))
	}
	next := s.st.clone()
	next.Workload, next.Space, next.Program = w.Name, map[string][]any{}, nil
	if err := setParams(&next, w, c.Args[1:]); err != nil {
		return err
	}
	msg := fmt.Sprintf("workload %s: %s", w.Name, w.Doc)
	if d := droppedSpace(s.st.Space, next.Space); d != "" {
		// A review's 'workload summa n=2048' after a space of b and grid
		// ran one default configuration, and nothing had said why.
		msg += fmt.Sprintf("\nthe space set before (%s) is back to the defaults: 'space' sets it again", d)
	}
	s.st = next
	out.Print(msg)
	s.noteSpace(out)
	return nil
}

// noteSpace says, as soon as the space is set, what evaluate and tune
// would refuse in it: more configurations than a sweep may have, a
// configuration a built-in workload cannot run (b that does not divide n:
// it had been accepted, and said only at the sweep), a program's grid and
// ranks both; and a program's parameter that nothing reads.
func (s *Session) noteSpace(out Output) {
	st := s.st
	n := 1.0
	for _, vs := range st.Space {
		n *= float64(len(vs))
	}
	if n > sweep.MaxConfigs {
		out.Print(fmt.Sprintf("note: this space has %.0f configurations, more than the %d a sweep may have: evaluate and tune will refuse it until it has fewer values", n, sweep.MaxConfigs))
		return
	}
	if st.Program == nil {
		// Any rank count: 'ranks' may well come next (a grid of 8 before
		// 'ranks 8').
		if _, _, err := validate(s.schemas(), st, sweep.ModeEvaluate, 1<<20); err != nil {
			out.Print("note: evaluate and tune would refuse this space: " + err.Error())
		}
		return
	}
	if _, ok := st.Space["ranks"]; ok {
		for _, k := range slices.Sorted(maps.Keys(st.Space)) {
			if vs := st.Space[k]; len(vs) > 0 {
				if _, grid := vs[0].(sweep.GridShape); grid {
					out.Print(fmt.Sprintf("note: the space has a grid (%s) and ranks: the grid sets the rank count (its product, also {ranks}), and evaluate and tune refuse it: 'space reset', then the space without ranks", k))
					break
				}
			}
		}
	}
	if _, _, err := validate(s.schemas(), st, sweep.ModeEvaluate, 1<<20); err != nil && (strings.Contains(err.Error(), "is not a grid") || strings.Contains(err.Error(), "is not a parameter of the space")) {
		// A mistyped grid (2x2x) is a word to a program's space: the note
		// below had said grid is in no argument. A placeholder the space
		// lacks (in a deck's template, say) had been told only at the
		// sweep.
		out.Print("note: evaluate and tune would refuse this space: " + err.Error())
		return
	}
	if note := st.Program.UnusedNote(st.Space); note != "" {
		out.Print(note)
	}
}

// spaceLine lists a space as KEY=VALUES, in name order.
func spaceLine(space map[string][]any) string { return droppedSpace(space, nil) }

// droppedSpace lists, as KEY=VALUES, the parameters old sets that next
// does not (a workload command starts the space afresh).
func droppedSpace(old, next map[string][]any) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if _, ok := next[k]; !ok {
			d = append(d, k+"="+fmtValues(old[k]))
		}
	}
	return strings.Join(d, " ")
}

func cmdSpace(s *Session, ctx context.Context, c *Command, out Output) error {
	w, ok := s.schemas().find(s.st.Workload)
	if !ok {
		return errAt(c.VerbCol, "the workload %q is unknown to the agent: choose one with 'workload'", s.st.Workload)
	}
	if len(c.Args) == 1 && c.Args[0].Key == "" && c.Args[0].Value == "reset" {
		s.st.Space = map[string][]any{}
		out.Print("space reset to the defaults")
		return nil
	}
	if len(c.Args) == 0 {
		var b strings.Builder
		for _, p := range w.Params {
			if vs, ok := s.st.Space[p.Name]; ok {
				fmt.Fprintf(&b, "%s=%s\n", p.Name, fmtValues(vs))
			} else {
				fmt.Fprintf(&b, "%s=%s (default)\n", p.Name, fmtValue(p.Default))
			}
		}
		if b.Len() == 0 { // a program's, before any 'space'
			b.WriteString("the space is empty: 'space KEY=V1,V2 ...' sets a parameter's values (a program's: a grid or ranks=N, and its {placeholders})")
		}
		out.Print(b.String())
		return nil
	}
	next := s.st.clone()
	if err := setParams(&next, w, c.Args); err != nil {
		return err
	}
	s.st = next
	for _, a := range c.Args {
		if strings.EqualFold(a.Value, "default") {
			// Said, as the word could have been meant as a value.
			if w.Name == sweep.ProgramWorkload {
				out.Print(fmt.Sprintf("%s: out of the space (KEY=default takes a parameter out; a program's parameter cannot take the word default itself)", a.Key))
			} else {
				out.Print(fmt.Sprintf("%s: back to its default", a.Key))
			}
		}
	}
	s.noteSpace(out)
	return nil
}

func cmdGrid(s *Session, ctx context.Context, c *Command, out Output) error {
	w, ok := s.schemas().find(s.st.Workload)
	if !ok {
		return errAt(c.VerbCol, "choose a workload first")
	}
	p, hasGrid := param(w, "grid")
	if !hasGrid && w.Name != sweep.ProgramWorkload {
		return errAt(c.VerbCol, "%s has no grid parameter: its parameters are %s", w.Name, paramNames(w))
	}
	if len(c.Args) == 0 {
		switch vs, ok := s.st.Space["grid"]; {
		case ok:
			out.Print("grid " + fmtValues(vs))
		case hasGrid:
			out.Print("grid " + fmtValue(p.Default) + " (default)")
		default:
			out.Print("grid: none set (the program's space has no grid)")
		}
		return nil
	}
	a, err := oneArg(c, "a grid list")
	if err != nil {
		return err
	}
	next := s.st.clone()
	a.Key = "grid"
	if err := setParams(&next, w, []Arg{a}); err != nil {
		return err
	}
	s.st = next
	return nil
}

func cmdPolicy(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 {
		// Alone, as 'space' and 'launcher' do: the current setting.
		out.Print(fmt.Sprintf("policies %s (the policies are %s)", strings.Join(s.st.Policies, ", "), strings.Join(sweep.Policies(), ", ")))
		return nil
	}
	a, err := oneArg(c, "a list of policies")
	if err != nil {
		return err
	}
	items, cols, err := splitList(a.Value, a.Col)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var ps []string
	for i, it := range items {
		p, err := policy.Lookup(strings.ToLower(it))
		if err != nil {
			return errAt(cols[i], "%v", err)
		}
		if !seen[p.Name()] {
			seen[p.Name()] = true
			ps = append(ps, p.Name())
		}
	}
	s.st.Policies = ps
	return nil
}

func cmdTolerance(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 {
		var ts []string
		for _, t := range s.st.Tolerances {
			ts = append(ts, format.Tolerance(t))
		}
		out.Print("tolerances " + strings.Join(ts, ", "))
		return nil
	}
	a, err := oneArg(c, "tolerances")
	if err != nil {
		return err
	}
	ts, err := parseTolerances(a.Value, a.Col)
	if err != nil {
		return err
	}
	s.st.Tolerances = ts
	if slices.Max(ts) > 1 {
		// Allowed (the rule is a half-width relative to the mean), but
		// most likely a typo for 2^-3: say what it means.
		out.Print(fmt.Sprintf("note: tolerance %s lets a kernel's 95%% interval be wider than its mean: it is skipped after its first samples, whatever their spread (the controls' slider stops at 2^0)", format.Tolerance(slices.Max(ts))))
	}
	return nil
}

func cmdConfidence(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 {
		out.Print(fmt.Sprintf("confidence %g", s.st.Confidence))
		return nil
	}
	a, err := oneArg(c, "a level")
	if err != nil {
		return err
	}
	v, err := strconv.ParseFloat(a.Value, 64)
	if err != nil || v <= 0 || v >= 1 {
		return errAt(a.Col, "%q is not a confidence level: want a number strictly between 0 and 1, like 0.95", a.Value)
	}
	s.st.Confidence = v
	return nil
}

func intArg(c *Command, lo, hi int, what string) (int, error) {
	a, err := oneArg(c, what)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(a.Value)
	if err != nil || v < lo || v > hi {
		return 0, errAt(a.Col, "%q is not valid: want %s, an integer from %d to %d", a.Value, what, lo, hi)
	}
	return v, nil
}

func cmdReps(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 {
		out.Print(fmt.Sprintf("reps %d (full runs per configuration in evaluate)", s.st.Reps))
		return nil
	}
	v, err := intArg(c, 1, 1000, "the number of reference runs")
	if err != nil {
		return err
	}
	s.st.Reps = v
	return nil
}

// setRanks sets the agent's rank count to v, stopping an agent this
// session started with another.
func (s *Session) setRanks(v int, out Output) {
	if v != s.st.Ranks && s.agent != nil && s.agent.proc != nil {
		what := "the local agent"
		if by := s.agent.runBy(); by != "mpirun" {
			what = "the agent (" + by + ")"
		}
		if s.stopAgent(out) {
			out.Print(fmt.Sprintf("stopped %s; the next sweep starts one with %d ranks", what, v))
		}
	}
	s.st.Ranks = v
}

// statusRanks is status's ranks line: the setting, or for a program the
// rank counts its configurations launch on (their grid or ranks=), which
// the setting does not change; status had shown 'ranks 4' beside a grid
// of 6.
func statusRanks(st State) string {
	if st.Program == nil {
		return strconv.Itoa(st.Ranks)
	}
	// From the space itself, not its configurations: a space that is not
	// runnable yet (a placeholder it lacks) still sets them.
	var ns []int
	for _, k := range slices.Sorted(maps.Keys(st.Space)) {
		for _, v := range st.Space[k] {
			switch v := v.(type) {
			case sweep.GridShape:
				ns = append(ns, v.Procs())
			case int:
				if k == "ranks" {
					ns = append(ns, v)
				}
			}
		}
	}
	slices.Sort(ns)
	ns = slices.Compact(ns)
	if len(ns) == 0 {
		return "each launch on its configuration's grid or ranks= (the space sets none yet)"
	}
	var ws []string
	for _, n := range ns {
		ws = append(ws, strconv.Itoa(n))
	}
	return strings.Join(ws, ", ") + " (each launch on its configuration's grid or ranks=; the 'ranks' setting is the built-in workloads' agent's)"
}

func cmdRanks(s *Session, ctx context.Context, c *Command, out Output) error {
	l := s.st.Launcher
	if len(c.Args) == 0 {
		whose := "the local agent's"
		if l.Slurm() {
			whose = "the Slurm agent's"
		}
		msg := fmt.Sprintf("ranks %d (%s)", s.st.Ranks, whose)
		if s.st.Program != nil {
			msg += "; a program's launches take their configuration's grid or ranks= instead"
		}
		out.Print(msg)
		return nil
	}
	v, err := intArg(c, 1, 4096, "the number of ranks")
	if err != nil {
		return err
	}
	if l.Slurm() && l.Nodes > 0 && l.TasksPerNode > 0 && v != l.Nodes*l.TasksPerNode {
		return errAt(c.Args[0].Col, "ranks %d, but the Slurm job is %d node(s) x %d tasks-per-node = %d ranks: change those ('launcher slurm nodes=N tasks-per-node=M' sets ranks to their product), or clear one ('launcher slurm tasks-per-node=default')",
			v, l.Nodes, l.TasksPerNode, l.Nodes*l.TasksPerNode)
	}
	s.setRanks(v, out)
	if s.st.Program != nil {
		out.Print("note: a program's launches take their configuration's grid or ranks=, not this setting ('space ranks=N' or a grid sets them)")
	}
	// Local ranks share this machine's CPUs: far more of them than CPUs
	// and a run's times say more of the scheduler than of its kernels.
	if cpus := runtime.NumCPU(); !s.st.Launcher.Slurm() && v > 8*cpus {
		out.Print(fmt.Sprintf("note: %d ranks on this machine's %d CPUs, %d to a CPU: the runs' times will say more of the scheduler than of the kernels ('launcher slurm' runs them on a cluster)", v, cpus, (v+cpus-1)/cpus))
	}
	return nil
}

// onOff is a setting's command: alone it shows the setting (on or off
// saying what that means), with "on" or "off" it sets it; what explains a
// wrong word.
func onOff(c *Command, out Output, name string, setting *bool, on, off, what string) error {
	if len(c.Args) == 0 {
		state := off
		if *setting {
			state = on
		}
		out.Print(name + " " + state)
		return nil
	}
	a, err := oneArg(c, "on or off")
	if err != nil {
		return err
	}
	switch strings.ToLower(a.Value) {
	case "on":
		*setting = true
	case "off":
		*setting = false
	default:
		return errAt(a.Col, "%q is not on or off: %s", a.Value, what)
	}
	return nil
}

func cmdTrace(s *Session, ctx context.Context, c *Command, out Output) error {
	if err := onOff(c, out, "trace", &s.st.Trace, "on: selective runs send their timelines ('plot gantt')", "off",
		"trace on records the timelines of the next sweeps' selective runs, trace off stops"); err != nil {
		return err
	}
	if s.st.Trace && s.st.Program != nil {
		// Said when set and when shown: 'trace' alone had said the
		// runs send timelines, which a program's do not.
		out.Print("note: a program's selective runs record no timelines yet (docs/programs.md, 'Not yet'): 'plot gantt' and 'anomalies' need a built-in workload's sweep")
	}
	return nil
}

func cmdModels(s *Session, ctx context.Context, c *Command, out Output) error {
	return onOff(c, out, "models", &s.st.Models,
		"on: kernels never measured are predicted from their routine's model when it is good enough",
		"off: kernels never measured run until their own samples settle them",
		"models on predicts kernels never measured from their routine's model, models off runs them")
}

func cmdMessages(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 {
		if s.st.Messages == sweep.MessagesRun {
			out.Print("messages run: every message and collective runs; kernels alone are skipped")
		} else {
			out.Print("messages skip: selective runs skip the messages and collectives their policy can predict, as they skip kernels")
		}
		return nil
	}
	a, err := oneArg(c, "skip or run")
	if err != nil {
		return err
	}
	switch m := sweep.Messages(strings.ToLower(a.Value)); m {
	case sweep.MessagesSkip:
		s.st.Messages = ""
	case sweep.MessagesRun:
		s.st.Messages = m
	default:
		return errAt(a.Col, "%q is not skip or run: messages skip lets selective runs skip messages as they skip kernels, messages run runs every one", a.Value)
	}
	return nil
}

func cmdListen(s *Session, ctx context.Context, c *Command, out Output) error {
	addr := "0.0.0.0:0"
	if len(c.Args) > 0 {
		a, err := oneArg(c, "an address")
		if err != nil {
			return err
		}
		if a.Value == "off" {
			if s.ln != nil {
				s.ln.Close()
				s.ln = nil
			}
			out.Print("not listening: sweeps start a local agent")
			return nil
		}
		if _, _, err := net.SplitHostPort(a.Value); err != nil {
			return errAt(a.Col, "%q is not HOST:PORT (e.g. 0.0.0.0:7077, or :7077)", a.Value)
		}
		addr = a.Value
	}
	token, err := NewToken()
	if err != nil {
		return err
	}
	ln, err := Listen(addr, token)
	if err != nil {
		return &Error{Msg: err.Error()}
	}
	if s.ln != nil {
		s.ln.Close()
	}
	s.ln = ln
	host, port, _ := net.SplitHostPort(ln.Addr())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	dial := net.JoinHostPort(host, port)
	file, err := writeToken(s.Dir(), token)
	if err != nil {
		s.ln.Close()
		s.ln = nil
		return &Error{Msg: err.Error()}
	}
	out.Print(fmt.Sprintf(`listening at %s. On the cluster, in your job script:

  export %s=$(cat %s)
  srun -n RANKS approxtune agent --connect %s
  # or: mpirun -n RANKS -x %s approxtune agent --connect %s

The next evaluate or tune waits for the agent. The token is in %s, readable by you only (the compute nodes must see that file, as they see your home directory; or copy it into the job's environment yourself): it is what lets an agent in, so it is never printed.`,
		ln.Addr(), protocol.TokenEnv, shellQuote(file), dial, protocol.TokenEnv, dial, file))
	return nil
}

func cmdConnect(s *Session, ctx context.Context, c *Command, out Output) error {
	return errAt(c.VerbCol, "agents dial in to the session: run 'listen' and start the agent with the command it prints")
}

func cmdEvaluate(s *Session, ctx context.Context, c *Command, out Output) error {
	se, err := searchArgs(s, c)
	if err != nil {
		return err
	}
	return s.sweepAndReport(ctx, sweep.ModeEvaluate, se, out)
}

func cmdTune(s *Session, ctx context.Context, c *Command, out Output) error {
	se, err := searchArgs(s, c)
	if err != nil {
		return err
	}
	return s.sweepAndReport(ctx, sweep.ModeTune, se, out)
}

func (s *Session) sweepAndReport(ctx context.Context, mode sweep.Mode, se Search, out Output) error {
	sw, err := s.RunSearch(ctx, mode, se, out)
	if sw != nil && len(sw.Results) > 0 {
		out.Print(tableBest(sw))
	}
	return err
}

func cmdResume(s *Session, ctx context.Context, c *Command, out Output) error {
	var sessionArg *Arg
	skip := false
	var skipConfigs []int
	for i, a := range c.Args {
		switch {
		case a.Key == "hung" && (a.Value == "retry" || a.Value == "skip"):
			skip = a.Value == "skip"
		case a.Key == "hung":
			return errAt(a.ValueCol, "hung=%s: want hung=retry (run the configuration that hung again, the default) or hung=skip (go on without it)", a.Value)
		case a.Key == "skip":
			for _, v := range strings.Split(a.Value, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || n < 0 {
					return errAt(a.ValueCol, "skip=%s: want configuration numbers as 'table configs' shows them, like skip=3 or skip=3,5", a.Value)
				}
				skipConfigs = append(skipConfigs, n)
			}
		case a.Key != "":
			return errAt(a.Col, "resume takes a session, hung=retry|skip and skip=N[,N...], not %s=", a.Key)
		case sessionArg != nil:
			return errAt(a.Col, "resume takes one session, not %q and %q", sessionArg.Value, a.Value)
		default:
			sessionArg = &c.Args[i]
		}
	}
	resume := func(ctx context.Context, sw *Sweep, out Output) error {
		cfgs := skipConfigs
		if skip && sw.Hung != nil {
			cfgs = append(slices.Clone(cfgs), *sw.Hung)
		}
		if len(cfgs) > 0 {
			return s.ResumeSkipping(ctx, sw, cfgs, out)
		}
		return s.Resume(ctx, sw, out)
	}
	if sessionArg != nil && sameDir(sessionArg.Value, s.Dir()) {
		sessionArg = nil // this session's own directory: its last sweep
	}
	if sessionArg == nil {
		sw := s.Last()
		if sw == nil {
			return errAt(c.VerbCol, "no sweep in this session to resume; 'resume SESSION' finishes another session's (ids under %s)", DefaultSessionsDir())
		}
		if skip && (sw.Status != StatusHung || sw.Hung == nil) {
			return errAt(c.VerbCol, "sweep %d did not hang (%s): hung=skip has nothing to skip; skip=N leaves out configuration N ('table configs' numbers them)", sw.ID, sw.Status)
		}
		if err := checkSkip(sw, skipConfigs); err != nil {
			return err
		}
		err := resume(ctx, sw, out)
		if len(sw.Results) > 0 {
			out.Print(tableBest(sw))
		}
		return err
	}
	a := *sessionArg
	path := a.Value
	if _, err := os.Stat(filepath.Join(path, JournalName)); err != nil {
		// A path is a directory; a bare name may also be an id under
		// the sessions directory.
		if strings.ContainsRune(a.Value, filepath.Separator) {
			return errAt(a.Col, "no journal %s in %s: not a session directory", JournalName, a.Value)
		}
		path = filepath.Join(DefaultSessionsDir(), a.Value)
		if _, err := os.Stat(filepath.Join(path, JournalName)); err != nil {
			return errAt(a.Col, "no journal %s in %q nor in %s", JournalName, a.Value, path)
		}
	}
	sws, err := ReadJournal(filepath.Join(path, JournalName))
	if err != nil {
		return &Error{Msg: err.Error()}
	}
	if len(sws) == 0 {
		return errAt(a.Col, "the journal in %s holds no sweep", path)
	}
	old := sws[len(sws)-1]
	if held, pid := lockHolder(path); held && old.Status == StatusRunning {
		// Its runs would run twice, two agents on the same cores (a
		// review's second REPL resumed a sweep the first was running).
		return errAt(a.Col, "session %s is open in another approxtune%s, and its sweep %d is running there: let it finish, or stop it there, then 'resume %s'", path, pidNote(pid), old.ID, a.Value)
	}
	if err := checkSkip(old, skipConfigs); err != nil {
		return err
	}
	// Adopt the sweep: record it in this session's journal (its results,
	// kernel statistics and timelines), then resume it.
	sw, err := s.adopt(old, "adopted from "+path)
	if err != nil {
		return err
	}
	err = resume(ctx, sw, out)
	if len(sw.Results) > 0 {
		out.Print(tableBest(sw))
	}
	return err
}

// readsSweep says whether a command reads a sweep of the session, the
// last unless sweep=N says which (Command.Sweep).
func readsSweep(verb string) bool {
	switch verb {
	case "table", "plot", "rank", "anomalies", "model", "export", "save":
		return true
	}
	return false
}

// takeSweep takes a sweep=N argument out of a command that reads a sweep
// into c.Sweep, checking N: the tables and figures had read the last
// sweep with results only, and an earlier one of the session could not be
// looked at again (a review).
func (s *Session) takeSweep(c *Command) error {
	if !readsSweep(c.Verb) {
		return nil
	}
	for i, a := range c.Args {
		if a.Key != "sweep" {
			continue
		}
		first := ""
		if len(c.Args) > 0 && c.Args[0].Key == "" {
			first = strings.ToLower(c.Args[0].Value)
		}
		switch {
		case c.Verb == "export" && first == "notebook", c.Verb == "plot" && first == "live":
			return errAt(a.Col, "%s %s reads no sweep: sweep= is for the commands that read one", c.Verb, first)
		case c.Verb == "model" && slices.ContainsFunc(c.Args, func(x Arg) bool { return x.Key == "sweeps" }):
			return errAt(a.Col, "model takes sweep=N (one sweep) or sweeps=all (every one), not both")
		}
		n, err := strconv.Atoi(a.Value)
		if err != nil || n < 1 || n > len(s.sweeps) {
			if len(s.sweeps) == 0 {
				return errAt(a.ValueCol, "sweep=%s: this session has no sweeps yet", a.Value)
			}
			var ls []string
			for _, sw := range s.sweeps {
				mode := "sweep"
				if sw.Spec != nil {
					mode = string(sw.Spec.Mode)
				}
				ls = append(ls, fmt.Sprintf("%d (%s %s, %s)", sw.ID, mode, sw.Workload, sw.Status))
			}
			return errAt(a.ValueCol, "sweep=%s: this session's sweeps are %s", a.Value, listSome(ls, 12))
		}
		c.Sweep = n
		c.Args = slices.Delete(slices.Clone(c.Args), i, i+1)
		return nil
	}
	return nil
}

// lastSweep is the sweep table, plot, save, export, rank, model and
// anomalies read: sweep=N's (Command.Sweep), else the session's last, or,
// when that one ended with no result (cancelled, or dead, before its
// first), the last that has one, which out (when not nil) is told of: an
// interrupted second sweep had hidden the first's results, and nothing
// brought them back.
func lastSweep(s *Session, c *Command, out Output) (*Sweep, error) {
	if c.Sweep > 0 {
		sw := s.sweeps[c.Sweep-1]
		if len(sw.Results) == 0 && sw.Status != StatusRunning {
			return nil, &Error{Msg: fmt.Sprintf("sweep %d has no results (%s)", sw.ID, sw.Status)}
		}
		return sw, nil
	}
	sw := s.Last()
	if sw == nil {
		return nil, errAt(c.VerbCol, "no results yet: run evaluate or tune first, or read another session's with 'load SESSION'")
	}
	if len(sw.Results) > 0 || sw.Status == StatusRunning {
		return sw, nil
	}
	for i := len(s.sweeps) - 2; i >= 0; i-- {
		if prev := s.sweeps[i]; len(prev.Results) > 0 {
			if out != nil {
				out.Print(fmt.Sprintf("sweep %d has no results (%s): reading sweep %d, the last that has", sw.ID, sw.Status, prev.ID))
			}
			return prev, nil
		}
	}
	return sw, nil
}

func cmdTable(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) > 1 && c.Args[0].Key == "" && c.Args[0].Value == "kernels" {
		return tableKernelsCmd(s, c, out)
	}
	a, err := oneArg(c, "what to tabulate")
	if err != nil {
		return err
	}
	// The table's name first: 'table bset' had said "no results yet".
	if names := []string{"configs", "kernels", "best"}; !slices.Contains(names, a.Value) {
		if n := format.Nearest(a.Value, names); n != "" {
			return errAt(a.Col, "no table %q: did you mean %s? The tables are configs, kernels and best", a.Value, n)
		}
		return errAt(a.Col, "no table %q: want configs, kernels or best", a.Value)
	}
	sw, err := lastSweep(s, c, out)
	if err != nil {
		return err
	}
	switch a.Value {
	case "configs":
		out.Print(tableConfigs(sw))
	case "kernels":
		out.Print(tableKernels(sw))
	case "best":
		out.Print(tableBest(sw))
	default:
		return errAt(a.Col, "no table %q: want configs, kernels or best", a.Value)
	}
	return nil
}

// tableKernelsCmd is 'table kernels' with its options: routine=, top=,
// and config=, policy=, tolerance= choosing the run as for 'plot gantt'.
func tableKernelsCmd(s *Session, c *Command, out Output) error {
	var o KernelOptions
	for _, a := range c.Args[1:] {
		switch a.Key {
		case "":
			return errAt(a.Col, "table kernels takes routine=, top=, config=, policy= and tolerance=, not %q", a.Value)
		case "routine":
			o.Routine = a.Value
		case "top":
			n, err := strconv.Atoi(a.Value)
			switch {
			case a.Value == "all":
				o.Top = -1
			case err != nil || n < 1:
				return errAt(a.ValueCol, "top=%s: want a number of kernels from 1, or all", a.Value)
			default:
				o.Top = n
			}
		case "config", "policy", "tolerance":
			if err := runOption(a, &o.FigureOptions); err != nil {
				return err
			}
		default:
			return errAt(a.Col, "%q is not routine=, top=, config=, policy= or tolerance=", a.Key)
		}
	}
	sw, err := lastSweep(s, c, out)
	if err != nil {
		return err
	}
	t, err := tableKernelsOf(sw, o)
	if err != nil {
		return &Error{Msg: err.Error()}
	}
	out.Print(t)
	return nil
}

func cmdSave(s *Session, ctx context.Context, c *Command, out Output) error {
	a, err := oneArg(c, "a file name")
	if err != nil {
		return err
	}
	sw, err := lastSweep(s, c, out)
	if err != nil {
		return err
	}
	path, err := writeFile(a.Value, func(f *os.File) error { return writeJSONL(f, sw) })
	if err != nil {
		return errAt(a.Col, "%v", err)
	}
	out.Print(fmt.Sprintf("wrote %d results to %s", len(sw.Results), path))
	return nil
}

func cmdExport(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) > 0 && c.Args[0].Key == "" && c.Args[0].Value == "extrap" {
		return exportExtrap(s, c, out)
	}
	if len(c.Args) != 2 || c.Args[0].Key != "" || c.Args[1].Key != "" || (c.Args[0].Value != "csv" && c.Args[0].Value != "notebook") {
		col := c.VerbCol
		if len(c.Args) > 0 {
			col = c.Args[0].Col
		}
		return errAt(col, "export takes a format and a file: export csv FILE, export notebook FILE, or export extrap FILE [ROUTINE]")
	}
	a := c.Args[1]
	if c.Args[0].Value == "notebook" {
		return exportNotebook(s, c, out)
	}
	sw, err := lastSweep(s, c, out)
	if err != nil {
		return err
	}
	path, err := writeFile(a.Value, func(f *os.File) error { return writeCSV(f, sw) })
	if err != nil {
		return errAt(a.Col, "%v", err)
	}
	out.Print(fmt.Sprintf("wrote %d rows to %s", len(sw.Results), path))
	return nil
}

// exportNotebook writes the transcript through Options.Notebook.
func exportNotebook(s *Session, c *Command, out Output) error {
	a := c.Args[1]
	write := s.notebookFunc()
	if write == nil {
		return errAt(c.Args[0].Col, "export notebook: this session has no notebook writer (the REPL, the Jupyter kernel and 'approxtune run' have one; a Go program sets Options.Notebook)")
	}
	path, err := filepath.Abs(a.Value)
	if err != nil {
		return errAt(a.Col, "%v", err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		// Said plainly: the writer's error had named its temporary file.
		return errAt(a.Col, "export notebook: cannot write %s: the folder %s does not exist", path, filepath.Dir(path))
	}
	s.mu.Lock()
	ours := s.exported[path]
	s.mu.Unlock()
	if _, err := os.Stat(path); err == nil && !ours {
		// A notebook open in Jupyter (the quickstart, say) was replaced by
		// a one-cell export without a word.
		return errAt(a.Col, "export notebook: %s exists and this session did not write it: give another name, or remove it first", a.Value)
	}
	steps := s.Transcript()
	if s.reopened != "" {
		// The sweeps from before the session was reopened are in its
		// journal, not its transcript: the notebook loads them first, so
		// that the commands after it (a plot, a table, resume) find them
		// (a reviewer's export after a reopen failed on its first plot).
		dir, err := filepath.Abs(s.opts.Dir)
		if err != nil {
			dir = s.opts.Dir
		}
		if strings.ContainsAny(dir, " \t#") {
			dir = `"` + dir + `"`
		}
		// Said in the notebook: it is not self-contained (a reviewer
		// handed one to a colleague).
		steps = append([]Step{{Line: "# this session was reopened: its earlier sweeps come from its journal in " + dir + ", which the next cell loads; this notebook needs that directory, and does not run those sweeps again", Comment: true},
			{Line: "load " + dir}}, steps...)
	}
	if err := write(steps, path); err != nil {
		return errAt(a.Col, "export notebook: %v", err)
	}
	s.mu.Lock()
	if s.exported == nil {
		s.exported = map[string]bool{}
	}
	s.exported[path] = true
	s.mu.Unlock()
	n := 0
	for _, st := range steps {
		if !st.Comment {
			n++
		}
	}
	out.Print(fmt.Sprintf("wrote %d commands to %s", n, path))
	return nil
}

// isExportNotebook reports whether c is 'export notebook ...', which the
// transcript leaves out.
func isExportNotebook(c *Command) bool {
	return c.Verb == "export" && len(c.Args) > 0 && c.Args[0].Key == "" && c.Args[0].Value == "notebook"
}

// writeFile writes name whole or not at all (atomicfile.Write), and says
// which folder is missing or not writable.
func writeFile(name string, write func(*os.File) error) (string, error) {
	path, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	path, err = atomicfile.Write(path, write)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("write %s: the folder %s does not exist", path, filepath.Dir(path))
	case errors.Is(err, fs.ErrPermission):
		return "", fmt.Errorf("write %s: the folder %s is not writable", path, filepath.Dir(path))
	}
	return "", fmt.Errorf("write %s: %w", path, err)
}

// paramKeys lists the configuration parameter names of a sweep, in order.
func paramKeys(sw *Sweep) []string {
	if len(sw.Configs) > 0 {
		return sw.Configs[0].Names()
	}
	seen := map[string]bool{}
	var ks []string
	for _, r := range sw.Results {
		for _, k := range r.Config.Names() {
			if !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	sort.Strings(ks)
	return ks
}

func cmdPlot(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 || c.Args[0].Key != "" {
		return errAt(c.VerbCol, "plot takes a figure name: one of %s (or live FILE.png)", strings.Join(FigureNames(), ", "))
	}
	name := strings.ToLower(c.Args[0].Value)
	if name == "live" {
		return plotLive(s, c, out)
	}
	var file string
	var o FigureOptions
	for _, a := range c.Args[1:] {
		switch a.Key {
		case "":
			if name == "model" && o.Routine == "" && file == "" && imageFormat(a.Value) == "" {
				o.Routine = a.Value // plot model ROUTINE [FILE]
				o.sessionSweeps = s.sweeps
				continue
			}
			if file != "" {
				return errAt(a.Col, "one file only: plot NAME [FILE]")
			}
			file = a.Value
		case "policy", "tolerance", "config":
			if err := runOption(a, &o); err != nil {
				return err
			}
		case "sweeps":
			if name != "model" {
				return errAt(a.Col, "sweeps= is plot model's (plot model ROUTINE [FILE] [sweeps=all]), not plot %s's", name)
			}
			if a.Value != "all" && a.Value != "last" {
				return errAt(a.ValueCol, "sweeps= takes all or last, not %q", a.Value)
			}
			if a.Value == "all" {
				sws, err := modelSweeps(s, c, true, nil)
				if err != nil {
					return err
				}
				o.modelSweeps = sws
			}
		default:
			if reads := figureReads[name]; len(reads) > 0 {
				return errAt(a.Col, "plot %s has no option %q: want %s=", name, a.Key, strings.Join(reads, "=, "))
			}
			if draws, ok := figureDraws[name]; ok {
				return errAt(a.Col, "plot %s takes no options: it draws %s", name, draws)
			}
			return errAt(a.Col, "plot has no option %q: want policy=, tolerance= or config= (as the figure reads them)", a.Key)
		}
	}
	sw, err := lastSweep(s, c, out)
	if err != nil {
		return err
	}
	f, err := MakeFigure(sw, name, o)
	if err != nil {
		col := c.Args[0].Col
		if oe := (*optionError)(nil); errors.As(err, &oe) {
			// At the option, or its value, that is wrong.
			for _, a := range c.Args[1:] {
				if a.Key == oe.Key {
					col = a.Col
					if oe.Value {
						col = a.ValueCol
					}
				}
			}
		}
		return errAt(col, "%v", err)
	}
	if fo, ok := out.(FigureOutput); ok {
		// A notebook shows the figure; with a file, it writes it too (it
		// had only written it, and the cell showed no figure).
		if file != "" {
			path, err := writeFigure(f, file)
			if err != nil {
				return errAt(c.Args[len(c.Args)-1].Col, "%v", err)
			}
			fo.Figure(f)
			out.Print("wrote " + path)
			return nil
		}
		fo.Figure(f)
		return nil
	}
	shown := file == "" // where a notebook would have shown it
	if file == "" {
		file = fmt.Sprintf("%s-sweep%d.png", name, sw.ID)
		if o.Routine != "" {
			of := fmt.Sprintf("sweep%d", sw.ID)
			if o.modelSweeps != nil {
				of = "sweeps-all"
			}
			file = fmt.Sprintf("%s-%s-%s.png", name, strings.NewReplacer("[", "-", "]", "").Replace(o.Routine), of)
		}
	}
	path, err := writeFigure(f, file)
	if err != nil {
		return errAt(c.Args[len(c.Args)-1].Col, "%v", err)
	}
	// The transcript keeps the figure, so 'export notebook' shows it as
	// the kernel does: without the file where the notebook would show it,
	// with "wrote FILE" where it writes one too (the figure had been left
	// out, its summary in its place).
	recordFigure(out, f)
	if shown {
		printAside(out, fmt.Sprintf("%swrote %s", f.Summary, path))
		return nil
	}
	printAside(out, strings.TrimRight(f.Summary, "\n"))
	out.Print("wrote " + path)
	return nil
}

// TokenFile is the file in the session directory that holds the token of
// the session's listener, readable by its owner only.
const TokenFile = "agent-token"

// writeToken writes token to dir's TokenFile (mode 0600, the directory
// 0700 when made here) and returns the file's path.
func writeToken(dir, token string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("session directory: %w", err)
	}
	path := filepath.Join(dir, TokenFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	// A file left by an older build may be more open than 0600.
	err = errors.Join(f.Chmod(0o600), func() error { _, err := f.WriteString(token + "\n"); return err }(), f.Close())
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	return path, nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
