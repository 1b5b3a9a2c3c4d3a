package main

import (
	"strings"
	"testing"
)

// A program sweep's selective run that failed while the sweep went on (an
// error event with its configuration's index) is set apart for the plain
// table, which had ended at it with no table; a sweep's own error is
// refused, and read, which the pooled modes use, refuses both.
func TestReadFailedRuns(t *testing.T) {
	const result = `{"type":"result","index":0,"config":{"b":32},"policy":"conditional","tolerance":0.5,"reference_s":[1],"selective_s":0.5,"predicted_s":1,"error":0}` + "\n"
	const failed = `{"type":"error","message":"configuration b=64: conditional at 2^-1: prog exited: exit status 1","index":1,"reference_s":[2]}` + "\n"
	evs, fs, err := readFailed(strings.NewReader(result + failed))
	if err != nil || len(evs) != 1 || len(fs) != 1 || !strings.HasPrefix(fs[0], "configuration b=64: conditional at 2^-1") {
		t.Errorf("a failed run: %d events, failed %q, %v", len(evs), fs, err)
	}
	if _, err := read(strings.NewReader(result + failed)); err == nil || !strings.Contains(err.Error(), "the sweep reported: configuration b=64") {
		t.Errorf("read of a failed run: %v", err)
	}
	if _, _, err := readFailed(strings.NewReader(result + `{"type":"error","message":"the agent died"}` + "\n")); err == nil || !strings.Contains(err.Error(), "the sweep reported: the agent died") {
		t.Errorf("a sweep's own error: %v", err)
	}
}
