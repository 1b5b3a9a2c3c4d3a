// Command summarize turns an agent's JSON-lines events (stdin) into the
// markdown tables of docs/benchmarks.md.
//
//	approxtune agent --ranks 4 --sweep examples/summa-evaluate.json | tee summa-1.jsonl | go run ./bench/summarize
//	approxtune agent --ranks 4 --sweep bench/overhead.json | go run ./bench/summarize -overhead
//	go run ./bench/summarize -paired summa-1.jsonl summa-2.jsonl.gz ...
//	go run ./bench/summarize -pooled pdpotrf-1.jsonl pdpotrf-2.jsonl pdpotrf-3.jsonl
//	go run ./bench/summarize -compare plain-1/results.jsonl plain-2/results.jsonl vs live-1/results.jsonl live-2/results.jsonl
//	go run ./bench/summarize -ranking lookahead -policies conditional,eager cholesky2d-1.jsonl cholesky2d-2.jsonl ...
//	go run ./bench/summarize -halving halving-1.jsonl halving-2.jsonl ...
//	go run ./bench/summarize -bench summa summa-1.jsonl summa-2.jsonl ...   # what bench/run prints
//
// -paired and -ranking read the sweeps saved in the files named as
// arguments (JSON lines, gunzipped when the name ends in .gz).
//
// -pooled pools several evaluate sweeps of one space: per policy and
// tolerance, the mean speed-up (for a program, also with every launch's
// cost counted in both totals), mean error and their 95% intervals over
// the sweeps, each sweep's quality and noise floor.
//
// The files may also be session journals (results.jsonl), one sweep each.
// Every mode that pools sweeps refuses a file named twice (by path, or by
// content under another name) and a sweep cut short (no summary after its
// last result); -bench NAME also refuses a sweep whose start event's spec
// is not of NAME's kind (its workload, search, policies, models).
//
// -compare compares two groups of evaluate sweeps of one spec, run in
// alternation, named before and after the word vs: the second group's
// timed runs (full and selective, summed per sweep) over the first's,
// paired by position, with 95% intervals and the sweeps' noise floors.
//
// -paired pools several evaluate sweeps of one space and compares, per
// policy, each configuration's error at the tightest tolerance with its
// error at the loosest in the same sweep (the machine's drift is shared by
// the two), with the standard error of the mean difference.
//
// -ranking PARAM pools several evaluate sweeps and compares the
// configurations that differ only in PARAM: per policy and tolerance, how
// many such pairs the predictions order as their references do, and the
// prediction error at each value of PARAM. -policies and -tolerances
// (comma-separated, like 2^-1,2^-5) keep only some of the results.
//
// -halving judges evaluate sweeps of a search (spec "search": "halving")
// by the references every configuration ran: per sweep, one full run of
// every configuration over the search's own time, whether the chosen
// configuration is in the references' best class (within the noise floor
// of the fastest) and its quality; pooled with 95% intervals.
//
// -bench NAME prints the report of one of bench/run's benchmarks: its
// pooled tables, the noise floor of the same sweeps, and whether each of
// its targets holds (the 95% interval clears it), fails (the interval is
// wholly on the wrong side) or is undecided. cholesky3d-models takes the
// sweeps without models, the word vs, and those with models.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/sweep"
)

type event struct {
	Type         string          `json:"type"`
	Config       json.RawMessage `json:"config"`
	Policy       string          `json:"policy"`
	Tolerance    *float64        `json:"tolerance"`
	ReferenceS   []float64       `json:"reference_s"`
	SelectiveS   float64         `json:"selective_s"`
	PredictedS   float64         `json:"predicted_s"`
	Speedup      float64         `json:"speedup"`
	MeanError    *float64        `json:"mean_error"`
	MaxError     *float64        `json:"max_error"`
	Quality      *float64        `json:"quality"`
	RefTotal     float64         `json:"reference_total_s"`
	SelTotal     float64         `json:"selective_total_s"`
	Ranks        int             `json:"ranks"`
	BLAS         string          `json:"blas"`
	Spec         json.RawMessage `json:"spec"`
	ElapsedS     float64         `json:"elapsed_s"`
	Message      string          `json:"message"`
	Index        int             `json:"index"`
	Error        *float64        `json:"error"`
	LaunchS      *float64        `json:"launch_s"`
	CountingS    *float64        `json:"counting_s"` // apriori's counting pass, when the agent reports it
	Chosen, Best json.RawMessage // a configuration (summary) or an index (round, search)
	// A search's runs, rounds and outcome (sweep.Result.Round, sweep.Round,
	// sweep.SearchEvent).
	Round   int     `json:"round"`
	Ran     []int   `json:"ran"`
	SearchS float64 `json:"search_s"`
}

func main() {
	overhead := flag.Bool("overhead", false, "print the engine-overhead table (tolerance-0 runs against references)")
	paired := flag.Bool("paired", false, "pool the evaluate sweeps named as arguments: per policy, the error at the tightest tolerance minus that at the loosest, paired by sweep and configuration")
	pooled := flag.Bool("pooled", false, "pool the evaluate sweeps named as arguments: per policy and tolerance, speed-up (also with a program's launches counted), mean error and quality, with 95% intervals over the sweeps")
	compare := flag.Bool("compare", false, "compare the timed runs of two groups of evaluate sweeps named as arguments, separated by the word vs")
	ranking := flag.String("ranking", "", "pool the evaluate sweeps named as arguments and compare the configurations that differ only in this parameter")
	policies := flag.String("policies", "", "with -ranking: keep only these policies (comma-separated)")
	tolerances := flag.String("tolerances", "", "with -ranking: keep only these tolerances (comma-separated, like 2^-1,2^-5)")
	bench := flag.String("bench", "", "print the report and targets of the named benchmark of bench/run over the sweeps named as arguments")
	halving := flag.Bool("halving", false, "judge the search sweeps named as arguments by their references: time ratio, best class, quality")
	flag.Parse()
	if err := oneMode(map[string]bool{"-overhead": *overhead, "-paired": *paired, "-pooled": *pooled, "-compare": *compare,
		"-ranking": *ranking != "", "-bench": *bench != "", "-halving": *halving}); err != nil {
		fmt.Fprintln(os.Stderr, "summarize:", err)
		os.Exit(2)
	}
	if *bench != "" || *halving {
		var err error
		if *bench != "" {
			err = benchMain(*bench, flag.Args(), os.Stdout)
		} else {
			err = halvingMain(flag.Args(), 0, os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", err)
			os.Exit(1)
		}
		return
	}
	if *ranking != "" {
		f, err := parseRankFilter(*policies, *tolerances)
		if err == nil {
			err = rankingMain(flag.Args(), *ranking, f, os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", err)
			os.Exit(1)
		}
		return
	}
	if *policies != "" || *tolerances != "" {
		fmt.Fprintln(os.Stderr, "summarize: -policies and -tolerances go with -ranking")
		os.Exit(2)
	}
	if *compare {
		args := flag.Args()
		split := slices.Index(args, "vs")
		err := fmt.Errorf("-compare takes two groups of sweep files separated by the word vs")
		if split >= 0 {
			err = compareMain(args[:split], args[split+1:], os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", err)
			os.Exit(1)
		}
		return
	}
	if *pooled {
		if err := pooledMain(flag.Args(), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", err)
			os.Exit(1)
		}
		return
	}
	if *paired {
		if err := pairedMain(flag.Args(), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() > 1 {
		fmt.Fprintln(os.Stderr, "summarize: without a mode, one sweep's events (a file, or standard input); to pool several: -pooled, -paired, -bench NAME, -halving")
		os.Exit(2)
	}
	in := io.Reader(os.Stdin)
	if flag.NArg() == 1 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	// A program sweep whose selective runs failed in part goes on with
	// the others, whose table is worth reading: its first failure had
	// ended summarize with no table.
	evs, failed, err := readFailed(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "summarize:", err)
		os.Exit(1)
	}
	if slices.ContainsFunc(evs, func(e event) bool { return e.Type == "round" || e.Type == "search" }) {
		// A search's events make no policy table (it had printed an empty
		// one): its judgement is -halving's.
		fmt.Fprintln(os.Stderr, "summarize: these are a search's events (spec \"search\"): judge it with -halving FILE (an evaluate search's references judge its choice)")
		os.Exit(2)
	}
	if *overhead {
		overheadTable(evs)
	} else {
		policyTable(evs)
	}
	if len(failed) > 0 {
		have := "have"
		if len(failed) == 1 {
			have = "has"
		}
		fmt.Fprintf(os.Stderr, "summarize: %s failed and %s no result; the table is the other runs':\n", plural(len(failed), "selective run"), have)
		for _, f := range failed {
			fmt.Fprintln(os.Stderr, "  "+strings.ReplaceAll(f, "\n", "\n  "))
		}
		os.Exit(1)
	}
}

// oneMode says which of the modes given (a flag's name: whether it was
// given) go together: none do, each reading its files in its own way; one
// of them would have been used and the others passed over in silence.
func oneMode(given map[string]bool) error {
	var all, set []string
	for m, on := range given {
		all = append(all, m)
		if on {
			set = append(set, m)
		}
	}
	if len(set) < 2 {
		return nil
	}
	slices.Sort(all)
	slices.Sort(set)
	return fmt.Errorf("%s: one mode at a time: want one of %s", strings.Join(set, " and "), strings.Join(all, ", "))
}

// read reads one sweep's events (an agent's JSON lines, or a session's
// journal), passing over the events summarize does not read; a sweep that
// reported an error, a failed run's too, is refused.
func read(r io.Reader) ([]event, error) {
	evs, failed, err := readFailed(r)
	if err == nil && len(failed) > 0 {
		err = fmt.Errorf("the sweep reported: %s", failed[0])
	}
	return evs, err
}

// readFailed is read, but the errors of runs that failed while the sweep
// went on (a program's selective launch: an error event with the
// configuration's index) are returned apart, as failed, for a table of the
// other runs. A sweep's own error is refused, as read does.
func readFailed(r io.Reader) (evs []event, failed []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		// A session's journal (results.jsonl) wraps the agent's events.
		var j struct {
			Kind  string          `json:"kind"`
			Event json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			return nil, nil, fmt.Errorf("bad event %q: %w", clip(line), err)
		}
		raw := []byte(line)
		switch {
		case j.Kind == "event" && len(j.Event) > 0:
			raw = j.Event
		case j.Kind != "":
			continue // the journal's own records (sweep, end)
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, nil, fmt.Errorf("bad event %q: %w", clip(line), err)
		}
		if !readTypes[head.Type] {
			continue // a timeline (trace on), a kernels table, a run's start
		}
		var e event
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, nil, fmt.Errorf("bad event %q: %w", clip(line), err)
		}
		if e.Type == "error" {
			var at struct {
				Index *int `json:"index"`
			}
			if json.Unmarshal(raw, &at) == nil && at.Index != nil {
				failed = append(failed, e.Message)
				continue
			}
			return nil, nil, fmt.Errorf("the sweep reported: %s", e.Message)
		}
		evs = append(evs, e)
	}
	return evs, failed, sc.Err()
}

// readTypes are the events summarize reads; it passes over the others.
var readTypes = map[string]bool{"start": true, "result": true, "summary": true, "round": true, "search": true, "error": true}

// clip is the start of a line for an error: a timeline's is 100 KB.
func clip(line string) string {
	if len(line) > 200 {
		return line[:200] + "..."
	}
	return line
}

func policyTable(evs []event) {
	fmt.Println("| policy | tolerance | speed-up | mean error | max error | quality | selective s | reference s |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, e := range evs {
		if e.Type != "summary" || e.Policy == "" || e.MeanError == nil {
			continue
		}
		// format.Seconds: a short program's selective runs had read 0.00.
		fmt.Printf("| %s | %s | %.2fx | %.1f%% | %.1f%% | %.3f | %s | %s |\n", e.Policy, format.Tolerance(*e.Tolerance), e.Speedup,
			100**e.MeanError, 100**e.MaxError, *e.Quality, format.Seconds(e.SelTotal), format.Seconds(e.RefTotal))
	}
	if floor, n := runError(evs); n > 0 {
		fmt.Printf("\nA full run against its configuration's other full runs: %.1f%% mean error (%d runs), the noise floor of the errors above.\n", 100*floor, n)
	}
}

// runError is sweep.RunError over the references of the result events (the
// first result of each configuration carries them). A search's own full
// runs (round 1 and later) are not references.
func runError(evs []event) (float64, int) {
	refs := map[int][]float64{}
	for _, e := range evs {
		if e.Type == "result" && len(e.ReferenceS) > 0 && e.Round == 0 {
			if _, ok := refs[e.Index]; !ok {
				refs[e.Index] = e.ReferenceS
			}
		}
	}
	return sweep.RunErrorByIndex(refs)
}

// overheadTable compares, per configuration, the median wall time of the
// selective runs that skipped nothing (tolerance 0) with the median of the
// reference runs (engine off).
func overheadTable(evs []event) {
	type row struct {
		ref, sel []float64
	}
	rows := map[string]*row{}
	var order []string
	for _, e := range evs {
		if e.Type != "result" || e.Tolerance == nil || *e.Tolerance != 0 {
			continue
		}
		k := string(e.Config)
		r := rows[k]
		if r == nil {
			r = &row{ref: e.ReferenceS}
			rows[k] = r
			order = append(order, k)
		}
		r.sel = append(r.sel, e.SelectiveS)
	}
	fmt.Println("| configuration | engine off: median s (runs) | engine on, nothing skipped: median s (runs) | overhead |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	var ratios []float64
	for _, k := range order {
		r := rows[k]
		mo, mn := sweep.Median(r.ref), sweep.Median(r.sel)
		ratios = append(ratios, mn/mo)
		fmt.Printf("| `%s` | %.4f (%d) | %.4f (%d) | %+.1f%% |\n", k, mo, len(r.ref), mn, len(r.sel), 100*(mn/mo-1))
	}
	if len(ratios) > 0 {
		fmt.Printf("| **median over configurations** | | | **%+.1f%%** |\n", 100*(sweep.Median(ratios)-1))
	}
}
