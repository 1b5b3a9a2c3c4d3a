package selective

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// dumpLogs writes a replay's logs and placement to a new file in dir, for
// calibrating simulate offline (APPROXTUNE_SIM_DUMP). Failures are ignored:
// it is a developer's instrument and must not fail a run.
func dumpLogs(dir string, logs [][]event, place placement) {
	enc := make([][]float64, len(logs))
	for r, l := range logs {
		enc[r] = encodeLog(l)
	}
	b, err := json.Marshal(struct {
		Group    []int       `json:"group"`
		Capacity []float64   `json:"capacity"`
		Members  []int       `json:"members"`
		CopyCost float64     `json:"copy_cost"`
		Logs     [][]float64 `json:"logs"`
	}{place.group, place.capacity, place.members, place.copyCost, enc})
	if err != nil {
		return
	}
	name := filepath.Join(dir, fmt.Sprintf("%d-%d.json", time.Now().UnixNano(), os.Getpid()))
	_ = os.WriteFile(name, b, 0o644)
}
