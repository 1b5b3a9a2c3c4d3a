package selective

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// simDump is a replay's logs (encodeLog) and placement as dumpLogs writes
// them, one JSON object per file.
type simDump struct {
	Group    []int       `json:"group"`
	Capacity []float64   `json:"capacity"`
	Members  []int       `json:"members"`
	CopyCost float64     `json:"copy_cost"`
	Logs     [][]float64 `json:"logs"`
}

// decode returns the dump's logs and placement (every process on one host).
func (d simDump) decode() ([][]event, placement) {
	logs := make([][]event, len(d.Logs))
	for r, l := range d.Logs {
		logs[r] = decodeLog(l)
	}
	return logs, placement{group: d.Group, capacity: d.Capacity, members: d.Members, oneHost: true, copyCost: d.CopyCost}
}

// dumpLogs writes a replay's logs and placement to a new file in dir, for
// calibrating simulate offline (APPROXTUNE_SIM_DUMP). Failures are ignored:
// it is a developer's instrument and must not fail a run.
func dumpLogs(dir string, logs [][]event, place placement) {
	d := simDump{Group: place.group, Capacity: place.capacity, Members: place.members, CopyCost: place.copyCost,
		Logs: make([][]float64, len(logs))}
	for r, l := range logs {
		d.Logs[r] = encodeLog(l)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return
	}
	name := filepath.Join(dir, fmt.Sprintf("%d-%d.json", time.Now().UnixNano(), os.Getpid()))
	_ = os.WriteFile(name, b, 0o644)
}
