package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/approxtune/approxtune/internal/atomicfile"
	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/sweep"
)

// carriedName is the file, beside the journal, that holds the statistics a
// sweep's carrying policies (eager) had after its last configuration
// (sweep.Carried): the latest of each policy and tolerance, rewritten
// whole at each configuration's end, rather than a journal line each (a
// grid's kernel statistics, every rank's, at every configuration). A
// resume gives them back to the agent; a sweep that ends with every run
// made has no more use for them, and its file is removed.
func carriedName(id int) string { return fmt.Sprintf("carried-%d.json", id) }

// keepCarried records a sweep.Carried event of sw: in the sweep and in its
// file. A file that cannot be written costs a resume its head start only,
// and stops nothing.
func (s *Session) keepCarried(sw *Sweep, e Event) {
	var c sweep.Carried
	if e.Decode(&c) != nil {
		return
	}
	sw.setCarried(c)
	_ = writeCarried(filepath.Join(s.opts.Dir, carriedName(sw.ID)), sw.carried)
}

// setCarried replaces the statistics sw keeps for c's policy and tolerance
// with c's.
func (sw *Sweep) setCarried(c sweep.Carried) {
	c.Type, c.V = "", 0
	i := slices.IndexFunc(sw.carried, func(k sweep.Carried) bool { return k.Policy == c.Policy && k.Tolerance == c.Tolerance })
	if i < 0 {
		sw.carried = append(sw.carried, c)
		return
	}
	sw.carried[i] = c
}

// writeCarried writes cs to path, whole or not at all.
func writeCarried(path string, cs []sweep.Carried) error {
	b, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	_, err = atomicfile.WritePerm(path, 0o600, func(f *os.File) error { // as private as the journal
		_, err := f.Write(b)
		return err
	})
	return err
}

// readCarried reads the statistics of sweep id of the session whose
// journal is in dir: none when there is no such file, and none with why
// when it does not read (a resume then starts those policies afresh, and
// says so).
func readCarried(dir string, id int) (cs []sweep.Carried, why string) {
	path := filepath.Join(dir, carriedName(id))
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	if err == nil {
		err = json.Unmarshal(b, &cs)
	}
	if err != nil {
		return nil, fmt.Sprintf("%s does not read, and was left aside: %v", path, err)
	}
	return cs, ""
}

// dropCarried forgets sw's carried statistics once it has every run: no
// resume will want them.
func (s *Session) dropCarried(sw *Sweep) {
	if sw.Status != StatusOK || len(sw.carried) == 0 || len(sw.Missing()) > 0 {
		return
	}
	sw.carried = nil
	_ = os.Remove(filepath.Join(s.opts.Dir, carriedName(sw.ID)))
}

// maxCarriedSpec is the most carried statistics a resumed sweep's spec
// takes, all policies and tolerances together: the command that sends it
// to the agent is one protocol line, at most 64 MiB.
const maxCarriedSpec = 48 << 20

// carriedFor returns the statistics sw keeps for the carrying policies of
// runs, to start a resume from: those that follow a run the journal has (a
// file written ahead of a journal that then failed, or was not synced
// before a crash, would hand the rerun of a configuration its own samples),
// within maxCarriedSpec.
// within maxCarriedSpec; why says what it left aside, and why.
func (sw *Sweep) carriedFor(runs []sweep.RunRef) (cs []sweep.Carried, why []string) {
	if sw.carriedBad != "" {
		why = append(why, sw.carriedBad)
	}
	size := 0
	for _, c := range sw.carried {
		if !slices.ContainsFunc(runs, func(r sweep.RunRef) bool { return r.Policy == c.Policy && r.Tolerance == c.Tolerance }) {
			continue
		}
		what := c.Policy + " at " + format.Tolerance(c.Tolerance)
		// A configuration left out since (leftOut) ran before: the
		// statistics that follow its result still hold.
		if !slices.ContainsFunc(slices.Concat(sw.Results, sw.leftOut), func(r sweep.Result) bool {
			return r.Index == c.Index && r.Policy == c.Policy && r.Tolerance != nil && *r.Tolerance == c.Tolerance
		}) {
			why = append(why, fmt.Sprintf("%s's follow configuration %d, which has no result of it in the journal", what, c.Index))
			continue
		}
		n := 0
		for _, r := range c.Ranks {
			n += len(r)
		}
		if size += n; size > maxCarriedSpec {
			why = append(why, fmt.Sprintf("%s's are more than a resume takes (%d MiB in all)", what, maxCarriedSpec>>20))
			continue
		}
		cs = append(cs, c)
	}
	return cs, why
}

// carriedNote says, when some of the runs to resume are of a policy that
// keeps its kernels' statistics from one configuration to the next
// (eager), where they start: from the statistics the sweep had after the
// configuration it last finished (carried), or, where those were not kept
// (a journal from before they were, a file lost), afresh: they then
// execute more than in an uninterrupted sweep, and predict from other
// samples (a review's resumed synthetic sweep: eager 51.8x where the
// uninterrupted one had 64x).
func carriedNote(sw *Sweep, runs []sweep.RunRef, carried []sweep.Carried, why []string) string {
	ran := map[string]bool{} // policies with results
	for _, res := range sw.Results {
		ran[res.Policy] = true
	}
	var from, fresh []string
	for _, p := range sw.Spec.Policies { // in the spec's order
		if !ran[p] || !carries(p) {
			continue
		}
		for _, tol := range sw.Spec.Tolerances {
			t := float64(tol)
			if !slices.ContainsFunc(runs, func(r sweep.RunRef) bool { return r.Policy == p && r.Tolerance == t }) {
				continue
			}
			i := slices.IndexFunc(carried, func(c sweep.Carried) bool { return c.Policy == p && c.Tolerance == t })
			switch {
			case i >= 0:
				from = append(from, fmt.Sprintf("%s at %s (after configuration %d)", p, format.Tolerance(t), carried[i].Index))
			case !slices.Contains(fresh, p):
				fresh = append(fresh, p)
			}
		}
	}
	var lines []string
	if len(from) > 0 {
		lines = append(lines, "the resumed runs start from the kernel statistics carried from before the stop: "+strings.Join(from, ", "))
	}
	if len(fresh) > 0 {
		lines = append(lines, fmt.Sprintf("note: %s carries its kernels' statistics from one configuration to the next, and those of the runs made before the sweep stopped were not kept: the resumed runs start without them, so they execute more, and predict from other samples, than in a sweep that was not stopped", strings.Join(fresh, ", ")))
		for _, w := range why {
			lines = append(lines, "  ("+w+")")
		}
	}
	return strings.Join(lines, "\n")
}
