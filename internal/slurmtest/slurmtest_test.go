package slurmtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestHold starts a cluster and keeps it for SLURMTEST_HOLD seconds (for
// experiments by hand); skipped otherwise.
func TestHold(t *testing.T) {
	hold := os.Getenv("SLURMTEST_HOLD")
	if hold == "" {
		t.Skip("SLURMTEST_HOLD not set")
	}
	c := Start(t)
	os.WriteFile("/tmp/slurmtest-hold.env", []byte(strings.Join(c.Env, "\n")+"\n"), 0o644)
	d, _ := time.ParseDuration(hold + "s")
	t.Logf("cluster in %s, holding %v", c.Dir, d)
	time.Sleep(d)
	_ = context.Background
}
