// Package agent is the MPI side of approxtune: the program every rank runs
// under mpirun. Rank 0 reads the sweep (from a file, or later from the
// session's socket), validates it before anything runs, and broadcasts it; all
// ranks run it through the engine; rank 0 emits the events.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// Exit statuses of the agent.
const (
	ExitOK      = 0
	ExitFailure = 1 // a run failed
	ExitUsage   = 2 // the sweep spec is invalid
)

// Options configure an agent process.
type Options struct {
	Sweep   string    // path of a sweep spec, "-" for standard input
	Connect string    // HOST:PORT of a session to dial instead
	Version string    // approxtune's version, announced to the session
	Stdout  io.Writer // rank 0's events
	Stderr  io.Writer // rank 0's messages
}

// setProcs keeps each rank to a couple of OS threads unless GOMAXPROCS is
// set: ranks share the node's cores, and the MPI goroutine is the only busy one.
func setProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(min(2, runtime.NumCPU()))
	}
}

// Main runs the agent and returns its exit status. It must be called from the
// main goroutine, which it locks to its OS thread for MPI.
func Main(ctx context.Context, o Options) int {
	setProcs()
	if _, err := mpi.Init(); err != nil {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		return ExitFailure
	}
	code := run(ctx, o)
	if err := mpi.Finalize(); err != nil && code == ExitOK {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		code = ExitFailure
	}
	return code
}

func run(ctx context.Context, o Options) int {
	world, err := mpi.World()
	if err != nil {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		return ExitFailure
	}
	if o.Connect != "" {
		return connect(ctx, world, o)
	}
	spec, configs, code, err := receiveSpec(world, o.Sweep)
	if err != nil {
		if world.Rank() == 0 {
			fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		}
		return code
	}
	backend, err := kernels.DefaultBackend()
	if err != nil {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		return ExitUsage
	}
	eng, err := selective.New(world, kernels.New(backend))
	if err != nil {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		return ExitFailure
	}
	enc := json.NewEncoder(o.Stdout)
	r := &runner{world: world, eng: eng, backend: backend, emit: func(ev any) error { return enc.Encode(ev) }}
	if world.Rank() == 0 {
		r.warnings = environmentWarnings(backend)
		for _, w := range r.warnings {
			fmt.Fprintf(o.Stderr, "approxtune agent: warning: %s\n", w)
		}
	}
	if err := r.sweep(ctx, spec, configs); err != nil {
		if world.Rank() == 0 {
			enc.Encode(sweep.ErrorEvent{Type: sweep.TypeError, V: sweep.ProtocolVersion, Message: err.Error()})
			fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		}
		if errors.Is(err, context.Canceled) {
			return ExitFailure
		}
		// A failure on some ranks may leave others blocked in MPI: end the job.
		mpi.Abort(world, ExitFailure)
		return ExitFailure
	}
	return ExitOK
}

// receiveSpec reads and validates the spec on rank 0 and broadcasts it. Every
// rank returns the same spec and configurations, or the same error and exit
// status, before anything runs.
func receiveSpec(world *mpi.Comm, path string) (*sweep.Spec, []sweep.Config, int, error) {
	var data []byte
	head := []int64{ExitOK, 0}
	if world.Rank() == 0 {
		var err error
		data, err = readSpec(path)
		if err == nil {
			err = CheckSpec(data, world.Size())
		}
		if err != nil {
			data = []byte(err.Error())
			head[0] = ExitUsage
		}
		head[1] = int64(len(data))
	}
	if err := mpi.Bcast(world, head, 0); err != nil {
		return nil, nil, ExitFailure, fmt.Errorf("broadcast spec: %w", err)
	}
	if world.Rank() != 0 {
		data = make([]byte, head[1])
	}
	if err := mpi.Bcast(world, data, 0); err != nil {
		return nil, nil, ExitFailure, fmt.Errorf("broadcast spec: %w", err)
	}
	if head[0] != ExitOK {
		return nil, nil, int(head[0]), errors.New(string(data))
	}
	s, err := sweep.Parse(data)
	if err != nil {
		return nil, nil, ExitUsage, err
	}
	configs, err := s.Validate(catalog.Schema, catalog.Names(), world.Size())
	if err != nil {
		return nil, nil, ExitUsage, err
	}
	return s, configs, ExitOK, nil
}

// CheckSpec parses and validates a sweep spec for an agent of ranks
// ranks, as the agent's rank 0 does before anything runs: the error says
// what is wrong with it.
func CheckSpec(data []byte, ranks int) error {
	s, err := sweep.Parse(data)
	if err != nil {
		return err
	}
	_, err = s.Validate(catalog.Schema, catalog.Names(), ranks)
	return err
}

func readSpec(path string) ([]byte, error) {
	if path == "-" {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("read sweep spec from standard input: %w", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read sweep spec: %w", err)
	}
	return data, nil
}
