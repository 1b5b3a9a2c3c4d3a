package session

import "github.com/approxtune/approxtune/internal/protocol"

// Status is where a sweep stands: running, or how it ended.
type Status string

// The statuses of a sweep. A sweep ends with the status of the agent's
// answer (ok, cancelled, failed), or died when the agent was lost.
const (
	// StatusRunning is a sweep under way, or one whose end the journal
	// never recorded (the session crashed).
	StatusRunning Status = "running"
	// StatusOK is a sweep that made every run.
	StatusOK Status = protocol.StatusOK
	// StatusCancelled is a sweep stopped by the user; 'resume' runs the rest.
	StatusCancelled Status = protocol.StatusCancelled
	// StatusFailed is a sweep the agent or the session could not run.
	StatusFailed Status = protocol.StatusFailed
	// StatusDied is a sweep whose agent died (mpirun exited, the
	// connection was lost); 'resume' starts a new agent.
	StatusDied Status = "died"
	// StatusHung is a sweep stopped because no run ended within its
	// deadline ('deadline'); 'resume' retries or skips the configuration.
	StatusHung Status = "hung"
)
