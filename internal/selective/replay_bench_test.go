package selective

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// replayDumps are logs of real runs that dumpLogs wrote (APPROXTUNE_SIM_DUMP),
// gzipped, in testdata/replay:
//
//   - cholesky2d-1x4-b32: cholesky2d n=4096, grid 1x4, b=32, lookahead 1,
//     eager at 2^-1 on 4 ranks over 2 cores, its fifth and fully skipped run
//     (about 96,000 entries: records and left-out messages, no collective);
//     times rounded to 6 significant digits to keep the file small.
//   - cholesky3d-2x2x2-s1-tol0, cholesky3d-2x2x2-s2-tol0.5: cholesky3d
//     n=1024, grid 2x2x2, b=64, strategies 1 and 2, eager at tolerance 0
//     (collectives run on promises) and 2^-1, on 8 ranks over 2 cores.
var replayDumps = []string{"cholesky2d-1x4-b32", "cholesky3d-2x2x2-s1-tol0", "cholesky3d-2x2x2-s2-tol0.5"}

// loadDump reads a gzipped dump of dumpLogs: the logs and the placement.
func loadDump(tb testing.TB, name string) ([][]event, placement) {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", "replay", name+".json.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	var d simDump
	if err := json.NewDecoder(z).Decode(&d); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return d.decode()
}

// copyLogs returns a deep copy of logs (chargePromised changes its input).
func copyLogs(logs [][]event) [][]event {
	out := make([][]event, len(logs))
	for r, l := range logs {
		out[r] = append([]event(nil), l...)
	}
	return out
}

// BenchmarkReplayAndSimulate times rank 0's work at End on the logs of real
// runs: decoding the gathered logs, matching them (linkLogs), charging
// promised collectives, the critical-path replay and the core-sharing
// simulation, each alone, then all together ("end", decoding into the
// buffers of the previous run as End does), and all together as they were
// done before linkLogs ("end-maps": replay_ref_test.go, fresh buffers).
func BenchmarkReplayAndSimulate(b *testing.B) {
	for _, name := range replayDumps {
		logs, place := loadDump(b, name)
		enc := make([][]float64, len(logs))
		for r, l := range logs {
			enc[r] = encodeLog(l)
		}
		lk := linkLogs(logs)
		b.Run(name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range enc {
					decodeLog(e)
				}
			}
		})
		b.Run(name+"/link", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				linkLogs(logs)
			}
		})
		b.Run(name+"/charge", func(b *testing.B) {
			lk := linkLogs(copyLogs(logs)) // charged over and over
			b.ReportAllocs()
			for b.Loop() {
				lk.chargePromised(place.oneHost)
			}
		})
		b.Run(name+"/replay", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := lk.replayPaths(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/simulate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := lk.simulate(place); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/end", func(b *testing.B) {
			var ends endBuffers // as End keeps them from run to run
			ends.inOf(len(enc), 0, 0)
			b.ReportAllocs()
			for b.Loop() {
				ls := make([][]event, len(enc))
				for r, e := range enc {
					ls[r] = ends.decode(r, e)
				}
				lk := linkLogs(ls)
				lk.chargePromised(place.oneHost)
				if _, err := lk.replayPaths(); err != nil {
					b.Fatal(err)
				}
				if _, err := lk.simulate(place); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/end-maps", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ls := make([][]event, len(enc))
				for r, e := range enc {
					ls[r] = decodeLog(e)
				}
				refChargePromised(ls, place.oneHost)
				if _, err := refReplayPaths(ls); err != nil {
					b.Fatal(err)
				}
				if _, err := refSimulate(ls, place); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
