//go:build calibrate

package selective

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestCalibrateCopy replays dumped logs at several copy costs (CopyCost) and
// prints each block size's and tolerance's mean signed error against the
// references, pooled over the sweeps. It is a calibration, not a test:
// build tag calibrate. Its input is sweeps run with APPROXTUNE_SIM_DUMP
// (rank 0 writes every replay's logs there):
//
//	APPROXTUNE_SIM_DUMP=/tmp/d1 approxtune agent --ranks 8 --sweep SPEC > /tmp/s1.jsonl
//	CALIB_SETS="/tmp/d1:/tmp/s1.jsonl /tmp/d2:/tmp/s2.jsonl" CALIB_C="0 2e-10 4e-10" \
//	  go test -tags calibrate -run TestCalibrateCopy -v ./internal/selective
//
// Each result is matched to the dump whose replay at the run's own cost gives its
// prediction (warm-ups replay too, and have no result).
func TestCalibrateCopy(t *testing.T) {
	sets := strings.Fields(os.Getenv("CALIB_SETS"))
	if len(sets) == 0 {
		t.Skip()
	}
	cs := strings.Fields(os.Getenv("CALIB_C"))
	if len(cs) == 0 {
		cs = []string{"0", "1e-10", "2e-10", "4e-10", "8e-10", "16e-10"}
	}
	all := map[string]map[string][]float64{} // c -> key -> per-sweep mean signed
	for _, set := range sets {
		dir, evf, _ := strings.Cut(set, ":")
		one := calibOne(t, dir, evf, cs)
		for c, m := range one {
			if all[c] == nil {
				all[c] = map[string][]float64{}
			}
			for k, v := range m {
				all[c][k] = append(all[c][k], v)
			}
		}
	}
	for _, c := range cs {
		var keys []string
		for k := range all[c] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var lines []string
		for _, k := range keys {
			v := all[c][k]
			m, sd := 0.0, 0.0
			for _, x := range v {
				m += x / float64(len(v))
			}
			for _, x := range v {
				sd += (x - m) * (x - m) / float64(len(v)-1)
			}
			hw := 2.776 * math.Sqrt(sd/float64(len(v)))
			var per []string
			for _, x := range v {
				per = append(per, fmt.Sprintf("%+.1f", 100*x))
			}
			lines = append(lines, fmt.Sprintf("%s %+6.1f%% ± %4.1f  (%s)", k, 100*m, 100*hw, strings.Join(per, " ")))
		}
		t.Logf("c=%s pooled over %d sweeps\n  %s", c, len(sets), strings.Join(lines, "\n  "))
	}
}

func calibOne(t *testing.T, dir, evf string, cs []string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(names)
	type res struct {
		B        int
		Strategy string
		Tol      float64
		Ref      float64
		Pred     float64
	}
	var rs []res
	f, err := os.Open(evf)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e struct {
			Type   string `json:"type"`
			Config struct {
				B        int    `json:"b"`
				Strategy string `json:"strategy"`
			} `json:"config"`
			Tol  *float64  `json:"tolerance"`
			Ref  []float64 `json:"reference_s"`
			Pred float64   `json:"predicted_s"`
		}
		json.Unmarshal(sc.Bytes(), &e)
		if e.Type != "result" || e.Tol == nil || e.Pred == 0 {
			continue
		}
		m := 0.0
		for _, x := range e.Ref {
			m += x / float64(len(e.Ref))
		}
		rs = append(rs, res{e.Config.B, e.Config.Strategy, *e.Tol, m, e.Pred})
	}
	type loaded struct {
		logs  [][]event
		place placement
	}
	var ds []loaded
	for _, n := range names {
		b, _ := os.ReadFile(n)
		var d simDump
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		var l loaded
		l.logs, l.place = d.decode()
		ds = append(ds, l)
	}
	// Match each result to the dump whose simulation (at the engine's own copy cost) gives its prediction.
	predOf := func(logs [][]event, place placement) float64 {
		paths, err := replayPaths(logs)
		if err != nil {
			t.Fatal(err)
		}
		ends, err := simulate(logs, place)
		if err != nil {
			t.Fatal(err)
		}
		p := 0.0
		for r := range ends {
			p = math.Max(p, math.Max(ends[r], paths[r].total))
		}
		return p
	}
	var matched []loaded
	used := map[int]bool{}
	dp := make([]float64, len(ds))
	for i, d := range ds {
		dp[i] = predOf(d.logs, d.place)
	}
	for _, r := range rs {
		found := -1
		for i := range ds {
			if !used[i] && math.Abs(dp[i]-r.Pred) < 1e-6*r.Pred {
				found = i
				break
			}
		}
		if found < 0 {
			t.Fatalf("no dump for %+v", r)
		}
		used[found] = true
		matched = append(matched, ds[found])
	}
	ds = matched
	t.Logf("%d results matched to dumps", len(rs))
	for _, cstr := range cs {
		var c float64
		fmt.Sscan(cstr, &c)
		type agg struct{ n, s, a float64 }
		by := map[string]*agg{}
		for i, d := range ds {
			logs := make([][]event, len(d.logs))
			for r := range d.logs {
				logs[r] = append([]event(nil), d.logs[r]...)
			}
			d.place.copyCost = c
			paths, err := replayPaths(logs)
			if err != nil {
				t.Fatal(err)
			}
			ends, err := simulate(logs, d.place)
			if err != nil {
				t.Fatal(err)
			}
			p := 0.0
			for r := range ends {
				p = math.Max(p, math.Max(ends[r], paths[r].total))
			}
			if c == 0 && math.Abs(p-rs[i].Pred) > 1e-6*p {
				t.Logf("run %d: sim %.4f, result %.4f", i, p, rs[i].Pred)
			}
			e := p/rs[i].Ref - 1
			k := fmt.Sprintf("tol=%-8g b=%-4d", rs[i].Tol, rs[i].B)
			if by[k] == nil {
				by[k] = &agg{}
			}
			by[k].n++
			by[k].s += e
			by[k].a += math.Abs(e)
		}
		out[cstr] = map[string]float64{}
		for k, a := range by {
			out[cstr][k] = a.s / a.n
		}
	}
	return out
}
