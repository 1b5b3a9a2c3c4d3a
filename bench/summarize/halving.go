package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/sweep"
)

// halvingSweep is one evaluate sweep of a search (spec "search"), judged
// by the references every configuration ran in round 0 (sweep.Judge).
type halvingSweep struct {
	sweep.Judgement
	configs    int
	chosen     int            // the search's choice
	survivors  []int          // configurations run in each round, the full round last
	tolerances []float64      // each round's tolerance (0: the full round)
	labels     map[int]string // the configurations, without the parameters they share
}

// judgeHalving reads one search sweep: the references of round 0, the
// rounds and the search event.
func judgeHalving(evs []event) (halvingSweep, error) {
	h := halvingSweep{chosen: -1}
	refs := map[int][]float64{}
	configs := map[int]json.RawMessage{}
	var search *event
	for _, e := range evs {
		switch e.Type {
		case "result":
			if e.Round == 0 && e.Policy == "" && len(e.ReferenceS) > 0 {
				refs[e.Index] = e.ReferenceS
				configs[e.Index] = e.Config
			}
		case "round":
			h.survivors = append(h.survivors, len(e.Ran))
			t := 0.0
			if e.Tolerance != nil {
				t = *e.Tolerance
			}
			h.tolerances = append(h.tolerances, t)
		case "search":
			search = &e
		}
	}
	if search == nil {
		return h, fmt.Errorf("no search event: want the output of an evaluate sweep with \"search\"")
	}
	if err := json.Unmarshal(search.Chosen, &h.chosen); err != nil {
		return h, fmt.Errorf("search event's chosen %s: %w", search.Chosen, err)
	}
	if len(refs) == 0 {
		return h, fmt.Errorf("no references in round 0: want mode evaluate, which runs every configuration's references to judge the search")
	}
	if search.SearchS <= 0 {
		return h, fmt.Errorf("the search event's search_s is %g: want the search's wall time", search.SearchS)
	}
	if _, n := sweep.RunErrorByIndex(refs); n == 0 {
		return h, fmt.Errorf("no noise floor: the best class needs two references of a configuration (reference_reps 2 or more)")
	}
	j, ok := sweep.Judge(refs, sweep.SearchEvent{Chosen: h.chosen, SearchS: search.SearchS})
	if !ok {
		return h, fmt.Errorf("the chosen configuration %d has no references", h.chosen)
	}
	h.Judgement, h.configs, h.labels = j, len(refs), configLabels(configs)
	return h, nil
}

// configLabels names each configuration by the parameters that vary over
// the sweep ("b=64 grid=2x2"), in the configuration's own order.
func configLabels(configs map[int]json.RawMessage) map[int]string {
	type kv struct{ k, v string }
	parsed := map[int][]kv{}
	values := map[string]map[string]bool{}
	for i, raw := range configs {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var pairs []kv
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			parsed[i] = []kv{{"config", string(raw)}}
			continue
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				break
			}
			var v any
			if err := dec.Decode(&v); err != nil {
				break
			}
			ks, vs := fmt.Sprint(k), fmt.Sprint(v)
			pairs = append(pairs, kv{ks, vs})
			if values[ks] == nil {
				values[ks] = map[string]bool{}
			}
			values[ks][vs] = true
		}
		parsed[i] = pairs
	}
	out := map[int]string{}
	for i, pairs := range parsed {
		var parts []string
		for _, p := range pairs {
			if len(values[p.k]) > 1 || len(configs) == 1 {
				parts = append(parts, p.k+"="+p.v)
			}
		}
		out[i] = strings.Join(parts, " ")
	}
	return out
}

// halvingMain judges the search sweeps in files: per sweep, the time
// ratio (one full run of every configuration over the search's own time),
// whether the chosen configuration is in the best class of the references
// and its quality; pooled, the mean ratio and quality with their 95%
// intervals and the share of sweeps whose choice is in the best class.
// With ratioGoal above 0 it also reads the targets: ratio at least
// ratioGoal, the choice in the best class in at least 90% of the sweeps,
// quality at least 0.98.
func halvingMain(files []string, ratioGoal float64, w io.Writer) error {
	sweeps, err := readSweeps(files)
	if err != nil {
		return fmt.Errorf("-halving: %w", err)
	}
	var hs []halvingSweep
	for i, evs := range sweeps {
		h, err := judgeHalving(evs)
		if err != nil {
			return fmt.Errorf("-halving: %s: %w", files[i], err)
		}
		hs = append(hs, h)
	}
	fmt.Fprintln(w, "| sweep | configurations | noise floor | full runs s | search s | time ratio | configurations per round | chosen | best | best class | chosen in it | quality |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | --- | ---: |")
	var ratios, quals, floors []float64
	in := 0
	for i, h := range hs {
		rounds := make([]string, len(h.survivors))
		for r, n := range h.survivors {
			rounds[r] = strconv.Itoa(n) + " at " + format.Tolerance(h.tolerances[r])
			if h.tolerances[r] == 0 {
				rounds[r] = strconv.Itoa(n) + " full"
			}
		}
		yes := "no"
		if h.InBestClass {
			yes, in = "yes", in+1
		}
		fmt.Fprintf(w, "| %d | %d | %.1f%% | %.2f | %.2f | %.2fx | %s | %s (%.3f s) | %s (%.3f s) | %d | %s | %.3f |\n", i+1, h.configs, 100*h.NoiseFloor, h.FullS, h.SearchS, h.Ratio,
			strings.Join(rounds, ", "), h.labels[h.chosen], h.ChosenS, h.labels[h.Best], h.BestS, len(h.BestClass), yes, h.Quality)
		ratios, quals, floors = append(ratios, h.Ratio), append(quals, h.Quality), append(floors, h.NoiseFloor)
	}
	share := float64(in) / float64(len(hs))
	fmt.Fprintf(w, "\n%s: time ratio %s, chosen in the best class in %d (%.0f%%), quality %s (mean ± half-width of the 95%% interval). %s\n",
		plural(len(hs), "sweep"), interval(ratios, "%.2fx ± %.2f", 1), in, 100*share, interval(quals, "%.3f ± %.3f", 1), floorLine(floors))
	fmt.Fprintln(w, "\nTime ratio: one full run of every configuration (its mean reference) summed, over the search's own runs (search_s: its selective runs and its survivors' full runs, not the references that judge it). A configuration's reference time: the median of its references (the mean of two). Best class: the configurations whose reference time is within the sweep's noise floor of the fastest's (time <= fastest's × (1 + floor)). Quality: the fastest's reference time over the chosen one's.")
	if ratioGoal <= 0 {
		return nil
	}
	fmt.Fprintf(w, "\nTargets:\n\n")
	target(w, fmt.Sprintf("time ratio >= %gx", ratioGoal), pool(ratios), 1, timesLayout, ratioGoal, true)
	v := "holds"
	if share < 0.9 {
		v = "fails"
	}
	fmt.Fprintf(w, "- chosen in the best class in >= 90%% of sweeps: %d of %d (%.0f%%): **%s**\n", in, len(hs), 100*share, v)
	target(w, "quality >= 0.98", pool(quals), 1, qualityLayout, 0.98, true)
	return nil
}
