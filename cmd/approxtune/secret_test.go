package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/protocol"
)

// tokenWatch watches the processes, until the returned stop is called, for
// agents whose environment holds marker (a test's own variable), collects
// the tokens their environment carries, and checks every process's
// command line for them. stop returns the tokens seen.
func tokenWatch(t *testing.T, marker string) (stop func() []string) {
	t.Helper()
	var mu sync.Mutex
	tokens := map[string]bool{}
	var leaks []string
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			procs, _ := filepath.Glob("/proc/[0-9]*")
			for _, p := range procs {
				env, err := os.ReadFile(filepath.Join(p, "environ"))
				if err != nil || !bytes.Contains(env, []byte(marker+"\x00")) {
					continue
				}
				for _, kv := range strings.Split(string(env), "\x00") {
					if v, ok := strings.CutPrefix(kv, protocol.TokenEnv+"="); ok && v != "" {
						mu.Lock()
						tokens[v] = true
						mu.Unlock()
					}
				}
			}
			mu.Lock()
			for _, p := range procs {
				cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
				if err != nil {
					continue
				}
				for tok := range tokens {
					if bytes.Contains(cmd, []byte(tok)) {
						leaks = append(leaks, strings.ReplaceAll(string(cmd), "\x00", " "))
					}
				}
			}
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		close(done)
		<-finished
		for _, l := range leaks {
			t.Errorf("a command line holds an agent's token: %s", l)
		}
		var out []string
		for tok := range tokens {
			out = append(out, tok)
		}
		return out
	}
}

// secretIn fails t if any of tokens is in text (named what).
func secretIn(t *testing.T, what, text string, tokens []string) {
	t.Helper()
	for _, tok := range tokens {
		if strings.Contains(text, tok) {
			t.Errorf("%s holds an agent's token", what)
		}
	}
}

// secretInFiles fails t if any file under dir holds one of tokens.
func secretInFiles(t *testing.T, dir string, tokens []string) {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Error(err)
				return nil
			}
			secretIn(t, p, string(b), tokens)
			n++
		}
		return nil
	})
	if n == 0 {
		t.Errorf("no file under %s to check", dir)
	}
}
