package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/approxtune/approxtune/internal/format"
)

// halvingSweep is one evaluate sweep of a search (spec "search"), judged
// by the references every configuration ran in round 0.
type halvingSweep struct {
	configs    int
	floor      float64         // noise floor of the references
	fullS      float64         // one full run of every configuration: the mean references, summed
	searchS    float64         // the search's own runs
	ratio      float64         // fullS / searchS
	chosen     int             // the search's choice
	best       int             // the fastest by its references
	class      []int           // the best class: mean reference within the floor of the best's
	inClass    bool            // chosen is in the best class
	quality    float64         // best's mean reference over chosen's
	survivors  []int           // configurations run in each round, the full round last
	tolerances []float64       // each round's tolerance (0: the full round)
	labels     map[int]string  // the configurations, without the parameters they share
	means      map[int]float64 // mean reference per configuration
}

// judgeHalving reads one search sweep: the references of round 0, the
// rounds and the search event.
func judgeHalving(evs []event) (halvingSweep, error) {
	h := halvingSweep{means: map[int]float64{}, chosen: -1}
	configs := map[int]json.RawMessage{}
	found := false
	for _, e := range evs {
		switch e.Type {
		case "result":
			if e.Round == 0 && e.Policy == "" && len(e.ReferenceS) > 0 {
				h.means[e.Index] = stat.Mean(e.ReferenceS, nil)
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
			if err := json.Unmarshal(e.Chosen, &h.chosen); err != nil {
				return h, fmt.Errorf("search event's chosen %s: %w", e.Chosen, err)
			}
			h.searchS = e.SearchS
			found = true
		}
	}
	if !found {
		return h, fmt.Errorf("no search event: want the output of an evaluate sweep with \"search\"")
	}
	if len(h.means) == 0 {
		return h, fmt.Errorf("no references in round 0: want mode evaluate, which runs every configuration's references to judge the search")
	}
	if _, ok := h.means[h.chosen]; !ok {
		return h, fmt.Errorf("the chosen configuration %d has no references", h.chosen)
	}
	if h.searchS <= 0 {
		return h, fmt.Errorf("the search event's search_s is %g: want the search's wall time", h.searchS)
	}
	h.configs = len(h.means)
	h.floor, _ = runError(evs)
	if math.IsNaN(h.floor) {
		return h, fmt.Errorf("no noise floor: the best class needs two references of a configuration (reference_reps 2 or more)")
	}
	idx := slices.Sorted(maps.Keys(h.means))
	h.best = idx[0]
	for _, i := range idx {
		h.fullS += h.means[i]
		if h.means[i] < h.means[h.best] {
			h.best = i
		}
	}
	for _, i := range idx {
		if h.means[i] <= h.means[h.best]*(1+h.floor) {
			h.class = append(h.class, i)
		}
	}
	h.ratio = h.fullS / h.searchS
	h.inClass = slices.Contains(h.class, h.chosen)
	h.quality = h.means[h.best] / h.means[h.chosen]
	h.labels = configLabels(configs)
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
		if h.inClass {
			yes, in = "yes", in+1
		}
		fmt.Fprintf(w, "| %d | %d | %.1f%% | %.2f | %.2f | %.2fx | %s | %s (%.3f s) | %s (%.3f s) | %d | %s | %.3f |\n", i+1, h.configs, 100*h.floor, h.fullS, h.searchS, h.ratio,
			strings.Join(rounds, ", "), h.labels[h.chosen], h.means[h.chosen], h.labels[h.best], h.means[h.best], len(h.class), yes, h.quality)
		ratios, quals, floors = append(ratios, h.ratio), append(quals, h.quality), append(floors, h.floor)
	}
	share := float64(in) / float64(len(hs))
	fmt.Fprintf(w, "\n%d sweeps: time ratio %s, chosen in the best class in %d (%.0f%%), quality %s (mean ± half-width of the 95%% interval). %s\n",
		len(hs), interval(ratios, "%.2fx ± %.2f", 1), in, 100*share, interval(quals, "%.3f ± %.3f", 1), floorLine(floors))
	fmt.Fprintln(w, "\nTime ratio: one full run of every configuration (its mean reference) summed, over the search's own runs (search_s: its selective runs and its survivors' full runs, not the references that judge it). Best class: the configurations whose mean reference is within the sweep's noise floor of the fastest's (mean <= fastest's × (1 + floor)). Quality: the fastest's mean reference over the chosen one's.")
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
