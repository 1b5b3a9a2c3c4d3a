package session

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// otherSweeps lists the processes of this machine that run another
// approxtune sweep's work, other than own: an agent's ranks ('approxtune
// agent ...') and a program's ranks launched with the preload library
// (APPROXTUNE_RUN in their environment). Processes it cannot read are
// passed over; on a system without /proc it finds none.
func otherSweeps(own []int) []int {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self || slices.Contains(own, pid) {
			continue
		}
		if isSweepWork(filepath.Join("/proc", d.Name())) {
			out = append(out, pid)
		}
	}
	return out
}

// isSweepWork says whether the process whose /proc directory is dir is an
// approxtune agent's rank or a rank of a program launched for a sweep.
func isSweepWork(dir string) bool {
	cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
	if len(args) > 1 && filepath.Base(args[0]) == "approxtune" && args[1] == "agent" {
		return true
	}
	env, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil {
		return false
	}
	return bytes.HasPrefix(env, []byte("APPROXTUNE_RUN=")) || bytes.Contains(env, []byte("\x00APPROXTUNE_RUN="))
}

// othersWarning is the warning a sweep's start (when) gives where other
// approxtune sweeps' processes run on this machine (otherSweeps), or "".
// Two notebooks sweeping at once on one machine had each timed the other's
// work, and one read 10.78x at a noise floor of 247%, unwarned (a review).
func othersWarning(own []int, when string) string {
	pids := otherSweeps(own)
	if len(pids) == 0 {
		return ""
	}
	var names []string
	for _, p := range pids {
		names = append(names, strconv.Itoa(p))
	}
	return fmt.Sprintf("warning: %s, another approxtune session's agent or program runs on this machine (processes %s): sweeps that share its cores time each other's work, and the predictions, errors and speed-ups of both are then unreliable; run one at a time",
		when, listSome(names, 6))
}
