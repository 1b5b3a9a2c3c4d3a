package session

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

// Complete proposes completions for the word that ends at byte offset pos of
// line: verbs first, then what the verb takes (workload names, parameter keys,
// policies, table names, help topics, session ids for load and resume, the
// most recent first). It returns the candidates (whole
// words) and the byte offset where the word being completed starts.
func (s *Session) Complete(line string, pos int) ([]string, int) {
	if pos > len(line) {
		pos = len(line)
	}
	head := line[:pos]
	start := strings.LastIndexAny(head, " \t") + 1
	word := head[start:]
	fields := strings.Fields(head[:start])
	if len(fields) == 0 {
		return match(Verbs(), word), start
	}
	verb := strings.ToLower(fields[0])
	// Inside a list (a,b,c) or after KEY=, complete the last item.
	itemStart := start + strings.LastIndexAny(word, ",=") + 1
	item := head[itemStart:]
	key := ""
	if i := strings.IndexByte(word, '='); i >= 0 {
		key = strings.ToLower(word[:i])
	}
	ss := s.schemas()
	if key == "sweep" && readsSweep(verb) {
		var ids []string
		for _, sw := range s.sweeps {
			ids = append(ids, strconv.Itoa(sw.ID))
		}
		return match(ids, item), itemStart
	}
	switch verb {
	case "help":
		return match(Verbs(), word), start
	case "workload":
		if len(fields) == 1 && key == "" {
			return match(ss.names(), word), start
		}
		// "workload b=..." names no workload yet: nothing to complete.
		if len(fields) < 2 {
			break
		}
		if w, ok := ss.find(strings.ToLower(fields[1])); ok {
			return s.completeParam(w.Name, key, word, item, start, itemStart)
		}
	case "space":
		return s.completeParam(s.st.Workload, key, word, item, start, itemStart)
	case "policy":
		// The policies the list names already are not offered again.
		return match(slices.DeleteFunc(slices.Clone(policy.Names()), func(n string) bool {
			return slices.Contains(strings.Split(strings.ToLower(word[:len(word)-len(item)]), ","), n)
		}), item), itemStart
	case "program":
		return completePath(word), start // the program, then its files
	case "table":
		if len(fields) == 1 {
			return match([]string{"configs", "kernels", "best"}, word), start
		}
		if strings.ToLower(fields[1]) != "kernels" && key == "" {
			return match([]string{"sweep="}, word), start
		}
		if strings.ToLower(fields[1]) == "kernels" {
			switch key {
			case "":
				return match([]string{"routine=", "top=", "config=", "policy=", "tolerance=", "sweep="}, word), start
			case "routine":
				return match(s.lastRoutines(), item), itemStart
			case "top":
				return match([]string{"all"}, item), itemStart
			}
			return s.completeRead(key, item, itemStart)
		}
	case "export":
		if len(fields) == 1 {
			return match([]string{"csv", "notebook", "extrap"}, word), start
		}
		return completePath(word), start
	case "plot":
		if len(fields) == 1 {
			return match(append(FigureNames(), "live"), word), start
		}
		name := strings.ToLower(fields[1])
		if name == "model" {
			// plot model ROUTINE [FILE] [sweeps=all]: as model completes.
			return s.completeModel(fields[1:], key, word, item, start, itemStart)
		}
		if reads := figureReads[name]; len(reads) > 0 {
			if key == "" {
				var ks []string
				for _, r := range reads {
					ks = append(ks, r+"=")
				}
				return append(match(ks, word), completePath(word)...), start
			}
			return s.completeRead(key, item, itemStart)
		}
		if key == "" {
			return completePath(word), start // the figure's file
		}
	case "evaluate", "tune":
		switch key {
		case "policy":
			return match(policy.Names(), item), itemStart
		case "search":
			return match([]string{"halving", "random", "none"}, item), itemStart
		}
		return match([]string{"search=halving", "search=random", "budget=", "seed=", "policy="}, word), start
	case "rank":
		if key != "" {
			return s.completeRead(key, item, itemStart)
		}
		return match([]string{"threshold=", "reps=", "draws=", "k=", "seed=", "policy=", "tolerance="}, word), start
	case "anomalies":
		if key != "" {
			return s.completeRead(key, item, itemStart)
		}
		return match([]string{"policy=", "tolerance=", "config=", "level="}, word), start
	case "model":
		return s.completeModel(fields, key, word, item, start, itemStart)
	case "models":
		return match([]string{"on", "off"}, word), start
	case "messages":
		return match([]string{"skip", "run"}, word), start
	case "grid":
		return s.completeParam(s.st.Workload, "grid", "grid="+word, item, start, itemStart)
	case "tolerance":
		return match([]string{"2^0..2^-6", "2^-1,2^-3,2^-5", "0.125"}, word), start
	case "listen":
		return match([]string{"off", "0.0.0.0:7077"}, word), start
	case "launcher":
		if len(fields) == 1 {
			return match([]string{"local", LauncherSlurm}, word), start
		}
		if strings.ToLower(fields[1]) == LauncherSlurm && key == "" {
			var ks []string
			for _, k := range launcherKeyNames() {
				ks = append(ks, k+"=")
			}
			return match(ks, word), start
		}
	case "trace":
		return match([]string{"on", "off"}, word), start
	case "deadline":
		return match([]string{"off", "10x", "30s", "5m"}, word), start
	case "load", "resume":
		if fields[0] == "resume" && (strings.HasPrefix(word, "h") || strings.HasPrefix(word, "s")) {
			return match([]string{"hung=retry", "hung=skip", "skip="}, word), start
		}
		if len(fields) == 1 {
			if strings.ContainsAny(word, "/.~") { // a session directory by its path
				return completePath(word), start
			}
			return matchInOrder(recentSessions(s.Dir()), word), start
		}
	}
	return nil, start
}

// completePath completes word as a file name, from the working directory
// (or the directory it names): a directory's ends in "/". Hidden files are
// offered for a word that starts their name with ".".
func completePath(word string) []string {
	dir, base := filepath.Split(word)
	look := dir
	if look == "" {
		look = "."
	}
	if strings.HasPrefix(look, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			look = filepath.Join(home, look[2:])
		}
	}
	entries, err := os.ReadDir(look)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		c := dir + name
		if e.IsDir() || (e.Type()&os.ModeSymlink != 0 && isDir(filepath.Join(look, name))) {
			c += "/"
		}
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// isDir reports whether path is a directory (through links).
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// completeRead completes the value of a key that picks runs of the last
// sweep (plot, rank and anomalies read policy= and tolerance= the same
// way): its policies and tolerances.
func (s *Session) completeRead(key, item string, itemStart int) ([]string, int) {
	sw := s.Last()
	if sw == nil || sw.Spec == nil {
		return nil, itemStart
	}
	switch key {
	case "policy":
		return match(sw.Spec.Policies, item), itemStart
	case "tolerance":
		var ts []string
		for _, t := range sw.Spec.Tolerances {
			ts = append(ts, format.Tolerance(float64(t)))
		}
		return match(ts, item), itemStart
	}
	return nil, itemStart
}

// lastRoutines are the routines of the last sweep's kernel statistics, in
// order, for 'table kernels routine='.
func (s *Session) lastRoutines() []string {
	sw := s.Last()
	if sw == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, k := range sw.Kernels {
		for _, st := range k.Kernels {
			seen[st.Routine] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// completeParam completes "key=" names, or the values of a choice or grid parameter.
func (s *Session) completeParam(workload, key, word, item string, start, itemStart int) ([]string, int) {
	w, ok := s.schemas().find(workload)
	if !ok {
		return nil, start
	}
	if key == "" {
		var ks []string
		for _, p := range w.Params {
			ks = append(ks, p.Name+"=")
		}
		return match(ks, word), start
	}
	p, ok := param(w, key)
	if !ok {
		return nil, start
	}
	switch p.Kind {
	case sweep.Choice:
		return match(p.Choices, item), itemStart
	case sweep.Grid:
		if p.Dims == 3 {
			return match([]string{"1x1x1", "2x2x2", "3x3x3"}, item), itemStart
		}
		return match(gridsOf(s.st.Ranks), item), itemStart
	}
	return nil, itemStart
}

// gridsOf are the 2D grids of ranks processes (every PRxPC with PR·PC =
// ranks), or of 4 and 8 when the rank count is not set: a grid of another
// count is refused at evaluate.
func gridsOf(ranks int) []string {
	counts := []int{ranks}
	if ranks < 1 {
		counts = []int{4, 8}
	}
	var out []string
	for _, n := range counts {
		for r := 1; r <= n; r++ {
			if n%r == 0 {
				out = append(out, fmt.Sprintf("%dx%d", r, n/r))
			}
		}
	}
	return out
}

// matchInOrder is match keeping the candidates' order.
func matchInOrder(cands []string, prefix string) []string {
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func match(cands []string, prefix string) []string {
	var out []string
	lp := strings.ToLower(prefix)
	for _, c := range cands {
		if strings.HasPrefix(strings.ToLower(c), lp) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// completeModel completes model's words (fields from "model" on): the
// routines and families of the last sweep's kernels, then sweeps=.
func (s *Session) completeModel(fields []string, key, word, item string, start, itemStart int) ([]string, int) {
	if key == "sweeps" {
		return match([]string{"all", "last"}, item), itemStart
	}
	if len(fields) == 1 && key == "" {
		names := []string{"sweeps=all"}
		if sw := s.Last(); sw != nil && len(sw.Kernels) > 0 {
			for _, f := range collectKernels([]*Sweep{sw}).families {
				names = append(names, f.routine, f.name)
			}
		}
		slices.Sort(names[1:])
		return match(slices.Compact(names), word), start
	}
	if key == "" {
		return match([]string{"sweeps=all"}, word), start
	}
	return nil, start
}
