package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/approxtune/approxtune/internal/slurm"
)

// Launcher is how the session starts the agents it runs sweeps on (the
// 'launcher' command): "local", the default, runs them under this
// machine's mpirun; "slurm" submits each one as a Slurm batch job (sbatch),
// or runs it as a job step (srun) when the session itself runs inside an
// allocation, and runs each launch of a program sweep as a job step, of
// that allocation or of a batch job the sweep holds its nodes with. It is
// part of the session's State, journaled with every sweep; the zero value
// is local.
type Launcher struct {
	Kind string `json:"kind,omitempty"` // "slurm", or "" for local
	// The options of 'launcher slurm' (see launcherKeys); zero values leave
	// the choice to Slurm or to the site.
	Nodes        int      `json:"nodes,omitempty"`
	TasksPerNode int      `json:"tasks_per_node,omitempty"`
	Partition    string   `json:"partition,omitempty"`
	Time         string   `json:"time,omitempty"`
	Account      string   `json:"account,omitempty"`
	Extra        []string `json:"extra,omitempty"`
	MPI          string   `json:"mpi,omitempty"`
	Address      string   `json:"address,omitempty"`
	Output       string   `json:"output,omitempty"`
	// From says where each option set came from ("the command", or the
	// defaults file's path), for 'launcher' alone.
	From map[string]string `json:"-"`
}

// LauncherSlurm is the Kind of a Slurm launcher.
const LauncherSlurm = "slurm"

// launcherConnected is the Kind a sweep's Sweep.ranOn has where its agent
// dialled in to a listening session ('listen'): it ran where that agent
// ran, which no launcher of the session's says.
const launcherConnected = "connected"

// Slurm reports whether the launcher submits agents to Slurm.
func (l *Launcher) Slurm() bool { return l != nil && l.Kind == LauncherSlurm }

func (l *Launcher) clone() *Launcher {
	if l == nil {
		return nil
	}
	c := *l
	c.Extra = slices.Clone(l.Extra)
	c.From = map[string]string{}
	for k, v := range l.From {
		c.From[k] = v
	}
	return &c
}

// launcherKey is one option of 'launcher slurm'.
type launcherKey struct {
	name, doc string
	set       func(l *Launcher, v string) error // "" clears the option
	get       func(l *Launcher) string
}

// slurmTime matches Slurm's time limits: minutes, MM:SS, HH:MM:SS, D-HH,
// D-HH:MM, D-HH:MM:SS, or UNLIMITED/INFINITE.
var slurmTime = regexp.MustCompile(`^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}|\d+-\d{1,2}:\d{1,2}|\d+-\d{1,2}:\d{1,2}:\d{1,2}|(?i:unlimited|infinite))$`)

// slurmName matches partition and account names (a comma-separated list of
// partitions is allowed, as sbatch takes it).
var slurmName = regexp.MustCompile(`^[A-Za-z0-9_.,-]+$`)

// mpiPlugin matches the name of an MPI plugin of srun.
var mpiPlugin = regexp.MustCompile(`^[a-z0-9_]+$`)

// launcherKeys are the options of 'launcher slurm', in the order shown.
func launcherKeys() []launcherKey {
	posInt := func(what string, p func(*Launcher) *int) (func(*Launcher, string) error, func(*Launcher) string) {
		return func(l *Launcher, v string) error {
				if v == "" {
					*p(l) = 0
					return nil
				}
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 1<<20 {
					return fmt.Errorf("%q is not %s: want a positive integer", v, what)
				}
				*p(l) = n
				return nil
			}, func(l *Launcher) string {
				if *p(l) == 0 {
					return ""
				}
				return strconv.Itoa(*p(l))
			}
	}
	str := func(p func(*Launcher) *string, check func(string) error) (func(*Launcher, string) error, func(*Launcher) string) {
		return func(l *Launcher, v string) error {
			if v != "" && check != nil {
				if err := check(v); err != nil {
					return err
				}
			}
			*p(l) = v
			return nil
		}, func(l *Launcher) string { return *p(l) }
	}
	name := func(what string) func(string) error {
		return func(v string) error {
			if !slurmName.MatchString(v) {
				return fmt.Errorf("%q is not a %s name: letters, digits, '_', '.', '-' (and ',' between several)", v, what)
			}
			return nil
		}
	}
	var keys []launcherKey
	add := func(name, doc string, set func(*Launcher, string) error, get func(*Launcher) string) {
		keys = append(keys, launcherKey{name, doc, set, get})
	}
	set, get := posInt("a node count", func(l *Launcher) *int { return &l.Nodes })
	add("nodes", "the job's nodes (sbatch --nodes)", set, get)
	set, get = posInt("a task count", func(l *Launcher) *int { return &l.TasksPerNode })
	add("tasks-per-node", "ranks per node (--ntasks-per-node); with nodes, sets ranks to nodes x tasks-per-node", set, get)
	set, get = str(func(l *Launcher) *string { return &l.Partition }, name("partition"))
	add("partition", "the partition (--partition)", set, get)
	set, get = str(func(l *Launcher) *string { return &l.Time }, func(v string) error {
		if !slurmTime.MatchString(v) {
			return fmt.Errorf("%q is not a Slurm time limit: want MINUTES, HH:MM:SS, D-HH:MM:SS (e.g. 00:30:00) or UNLIMITED", v)
		}
		return nil
	})
	add("time", "the job's time limit (--time, in Slurm's format: 00:30:00, 90 for minutes, 1-00:00:00)", set, get)
	set, get = str(func(l *Launcher) *string { return &l.Account }, name("account"))
	add("account", "the account charged (--account)", set, get)
	add("extra", `further sbatch options, passed as they are (extra="--constraint=haswell --qos=debug"); one approxtune sets itself is refused, naming what sets it`,
		func(l *Launcher, v string) error {
			if strings.ContainsAny(v, `"'`) {
				// --comment='hello world' had been refused as "world'"
				// being no option.
				return fmt.Errorf("%s: quotes are not supported in extra=: its options are split at spaces, so a value cannot hold one", v)
			}
			ws := strings.Fields(v)
			for _, w := range ws {
				if !strings.HasPrefix(w, "-") {
					return fmt.Errorf("%q is not an sbatch option: each word of extra= starts with - (e.g. --constraint=haswell)", w)
				}
				if instead := setByLauncher(w); instead != "" {
					// sbatch takes the last of an option given twice,
					// and approxtune's come after: --job-name and
					// --output had been echoed as passed, and ignored.
					return fmt.Errorf("%s: approxtune sets that option itself: %s", w, instead)
				}
			}
			l.Extra = ws
			return nil
		}, func(l *Launcher) string { return strings.Join(l.Extra, " ") })
	set, get = str(func(l *Launcher) *string { return &l.MPI }, func(v string) error {
		if !mpiPlugin.MatchString(v) {
			return fmt.Errorf("%q is not an MPI plugin of srun: 'srun --mpi=list' lists them (pmix for Open MPI)", v)
		}
		// Where srun can say which it has, a plugin it lacks is refused
		// now: every launch had failed with "Invalid MPI type", each
		// blamed on its configuration (a Slurm review).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if have, err := slurm.MPIPlugins(ctx); err == nil && len(have) > 0 && !slices.Contains(have, v) &&
			!(strings.HasPrefix(v, "pmix_") && slices.Contains(have, "pmix")) {
			return fmt.Errorf("srun here has no MPI plugin %q: it has %s (pmix for Open MPI)", v, strings.Join(have, ", "))
		}
		return nil
	})
	add("mpi", "srun's MPI plugin (--mpi; default the site's MpiDefault; Open MPI needs pmix)", set, get)
	set, get = str(func(l *Launcher) *string { return &l.Address }, func(v string) error {
		host, port := v, ""
		if h, p, err := net.SplitHostPort(v); err == nil {
			host, port = h, p
		}
		if host == "" || strings.ContainsAny(host, " /") {
			return fmt.Errorf("%q is not HOST or HOST:PORT (this machine's name or address as the compute nodes reach it)", v)
		}
		if port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
				return fmt.Errorf("%q: the port is not a number from 0 to 65535", v)
			}
		}
		return nil
	})
	add("address", "the address the agents dial, HOST or HOST:PORT (default this machine's name, a free port)", set, get)
	set, get = str(func(l *Launcher) *string { return &l.Output }, nil)
	add("output", "the directory of the jobs' output files and of program sweeps' runs, on a file system the nodes share (default ~/.local/state/approxtune/slurm)", set, get)
	return keys
}

func launcherKeyNames() []string {
	var n []string
	for _, k := range launcherKeys() {
		n = append(n, k.name)
	}
	return n
}

func findLauncherKey(name string) (launcherKey, bool) {
	for _, k := range launcherKeys() {
		if k.name == name {
			return k, true
		}
	}
	return launcherKey{}, false
}

// Command is the launcher as the command that sets it, every option
// written out: what the transcript keeps, so that 'export notebook'
// reproduces it without the defaults file.
func (l *Launcher) Command() string {
	if !l.Slurm() {
		return "launcher local"
	}
	var b strings.Builder
	b.WriteString("launcher slurm")
	for _, k := range launcherKeys() {
		v := k.get(l)
		if v == "" {
			continue
		}
		if strings.ContainsAny(v, " \t#") {
			v = `"` + v + `"`
		}
		b.WriteString(" " + k.name + "=" + v)
	}
	return b.String()
}

// LauncherFile is the defaults file of 'launcher slurm':
// $XDG_CONFIG_HOME/approxtune/launcher.json, or
// ~/.config/approxtune/launcher.json.
func LauncherFile() string {
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "approxtune", "launcher.json")
}

// launcherDefaults reads the defaults file into l: {"slurm": {"partition":
// "debug", "time": "00:30:00", "nodes": 1, ...}}, the keys as 'launcher
// slurm' takes them. A missing file is no error.
func launcherDefaults(l *Launcher) error {
	path := LauncherFile()
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("launcher defaults: %w", err)
	}
	var f map[string]map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("launcher defaults %s: %v (want {\"slurm\": {\"partition\": \"debug\", \"time\": \"00:30:00\", ...}})", path, err)
	}
	for kind := range f {
		if kind != LauncherSlurm {
			return fmt.Errorf("launcher defaults %s: no launcher %q to set defaults for: want \"slurm\"", path, kind)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f[LauncherSlurm])) {
		k, ok := findLauncherKey(name)
		if !ok {
			return fmt.Errorf("launcher defaults %s: %q is not an option of launcher slurm: the options are %s", path, name, strings.Join(launcherKeyNames(), ", "))
		}
		var v string
		switch x := f[LauncherSlurm][name].(type) {
		case string:
			v = x
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		case []any:
			var ws []string
			for _, w := range x {
				ws = append(ws, fmt.Sprint(w))
			}
			v = strings.Join(ws, " ")
		default:
			return fmt.Errorf("launcher defaults %s: %s: want a string or a number, not %v", path, name, x)
		}
		if err := k.set(l, v); err != nil {
			return fmt.Errorf("launcher defaults %s: %s: %v", path, name, err)
		}
		l.From[name] = path
	}
	return nil
}

// cmdLauncher is the launcher verb: launcher [local | slurm [KEY=VALUE ...]].
func cmdLauncher(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 {
		out.Print(s.describeLauncher())
		return nil
	}
	kind := c.Args[0]
	if kind.Key != "" {
		return errAt(kind.Col, "launcher takes local or slurm first: launcher slurm %s (the options are %s)", kind.String(), strings.Join(launcherKeyNames(), ", "))
	}
	var next *Launcher
	switch strings.ToLower(kind.Value) {
	case "local":
		if len(c.Args) > 1 {
			return errAt(c.Args[1].Col, "launcher local takes no options (%s are launcher slurm's)", strings.Join(launcherKeyNames(), ", "))
		}
	case LauncherSlurm:
		next = &Launcher{Kind: LauncherSlurm, From: map[string]string{}}
		if err := launcherDefaults(next); err != nil {
			return &Error{Msg: err.Error()}
		}
		cur := s.st.Launcher
		if !cur.Slurm() {
			cur = s.st.SlurmSet // the options set before 'launcher local'
		}
		if cur.Slurm() {
			// The options commands set before stay (KEY=default clears
			// one): a reviewer's 'launcher slurm account=proj42' dropped
			// the time= set a command before.
			for _, k := range launcherKeys() {
				o, ok := cur.From[k.name]
				if v := k.get(cur); v != "" && (!ok || o == "the command") {
					if err := k.set(next, v); err == nil {
						next.From[k.name] = "the command"
					}
				}
			}
		}
		for _, a := range c.Args[1:] {
			if a.Key == "" {
				return errAt(a.Col, "%q is not KEY=VALUE: the options of launcher slurm are %s", a.Value, strings.Join(launcherKeyNames(), ", "))
			}
			k, ok := findLauncherKey(a.Key)
			if !ok {
				return errAt(a.Col, "launcher slurm has no option %q: the options are %s", a.Key, strings.Join(launcherKeyNames(), ", "))
			}
			v := a.Value
			if v == "default" {
				// Back to the defaults file's value, if it has one
				// (time=default had dropped it too, a Slurm review).
				def := &Launcher{Kind: LauncherSlurm, From: map[string]string{}}
				if launcherDefaults(def) == nil && k.get(def) != "" {
					if err := k.set(next, k.get(def)); err != nil {
						return errAt(a.ValueCol, "%s: %v", k.name, err)
					}
					next.From[k.name] = def.From[k.name]
					continue
				}
				v = ""
			}
			if err := k.set(next, v); err != nil {
				return errAt(a.ValueCol, "%s: %v", k.name, err)
			}
			next.From[k.name] = "the command"
			if v == "" {
				delete(next.From, k.name)
			}
		}
	default:
		return errAt(kind.Col, "no launcher %q: want local (this machine's mpirun) or slurm (a batch job; see help launcher)", kind.Value)
	}
	s.switchLauncher(next, out)
	if next.Slurm() && next.Nodes > 0 && next.TasksPerNode > 0 && s.st.Ranks != next.Nodes*next.TasksPerNode {
		s.st.Ranks = next.Nodes * next.TasksPerNode
		out.Print(fmt.Sprintf("ranks %d (nodes x tasks-per-node)", s.st.Ranks))
	}
	c.Line = next.Command()
	out.Print(s.describeLauncher())
	return nil
}

// switchLauncher makes next the session's launcher (nil: local), stopping
// an agent the old one had started.
func (s *Session) switchLauncher(next *Launcher, out Output) {
	if !next.Slurm() {
		next = nil
	}
	if s.agent != nil && s.agent.proc != nil && s.st.Launcher.Command() != next.Command() {
		by := s.agent.runBy()
		if s.stopAgent(out) {
			freed := ""
			if strings.HasPrefix(by, "Slurm job ") {
				// Its nodes are free now: that had gone unsaid (a Slurm
				// review's second session waited for them).
				freed = " (" + by + ", cancelled: its nodes are free)"
			}
			out.Print("stopped the agent the session had started" + freed + "; the next sweep starts one with the new launcher")
		}
	}
	if s.st.Launcher.Slurm() && !next.Slurm() {
		s.st.SlurmSet = s.st.Launcher
	}
	s.st.Launcher = next
}

// ranOn is the launcher a sweep ran with, as Sweep.ranOn keeps it: a copy
// of l, or one of Kind "" for local.
func ranOn(l *Launcher) *Launcher {
	if l == nil {
		return &Launcher{}
	}
	return l.clone()
}

// describeLauncher is 'launcher' alone: the launcher as its command, where
// its options came from, and how the next agent starts.
func (s *Session) describeLauncher() string {
	l := s.st.Launcher
	var b strings.Builder
	b.WriteString(l.Command() + "\n")
	if !l.Slurm() {
		if s.st.Program != nil {
			b.WriteString("  each launch of the program runs under this machine's mpirun, on its configuration's ranks\n")
		} else {
			fmt.Fprintf(&b, "  agents run under this machine's mpirun, %d ranks ('ranks')\n", s.st.Ranks)
		}
		if s.st.SlurmSet.Slurm() {
			b.WriteString("  'launcher slurm' takes back the options set before 'launcher local'\n")
		}
		if f := LauncherFile(); f != "" {
			if _, err := os.Stat(f); err == nil {
				fmt.Fprintf(&b, "  'launcher slurm' takes its defaults from %s\n", f)
			}
		}
		return b.String()
	}
	from := map[string][]string{}
	var origins []string
	for _, k := range launcherKeys() {
		o, ok := l.From[k.name]
		if !ok {
			// Set before the session was reopened: the journal keeps the
			// options, not where they came from.
			o = "the session's state"
		}
		if k.get(l) != "" {
			if from[o] == nil {
				origins = append(origins, o)
			}
			from[o] = append(from[o], k.name)
		}
	}
	for _, o := range origins {
		fmt.Fprintf(&b, "  %s: from %s\n", strings.Join(from[o], ", "), o)
	}
	if len(origins) == 0 {
		file := LauncherFile()
		if _, err := os.Stat(file); err != nil {
			fmt.Fprintf(&b, "  every option is Slurm's default (a defaults file, %s, would set the site's; there is none)\n", file)
		} else {
			fmt.Fprintf(&b, "  every option is Slurm's default (defaults file: %s)\n", file)
		}
	}
	id, inside := slurm.Allocation(os.Getenv)
	switch {
	case inside && s.st.Program != nil:
		fmt.Fprintf(&b, "  this session runs inside Slurm job %s: each launch of the program is a job step (srun)\n", id)
	case inside:
		fmt.Fprintf(&b, "  this session runs inside Slurm job %s: each agent is a job step (srun) of %d ranks ('ranks')\n", id, s.st.Ranks)
	case s.st.Program != nil:
		b.WriteString("  a program sweep submits a batch job (sbatch) that holds the nodes, runs each launch of the program in it as a job step (srun), and cancels it at the end\n")
	default:
		fmt.Fprintf(&b, "  each agent is a batch job (sbatch) of %d ranks ('ranks'), started with srun\n", s.st.Ranks)
	}
	if inside {
		// A job step runs in the allocation: these had been shown as
		// set, silently unused (a Slurm review).
		var unused []string
		for _, k := range []string{"partition", "account"} { // extra= goes to each step's srun
			if kk, ok := findLauncherKey(k); ok && kk.get(l) != "" {
				unused = append(unused, k)
			}
		}
		if len(unused) > 0 {
			fmt.Fprintf(&b, "  %s: for a batch job only, unused here: a job step runs in the allocation's partition and account (extra= goes to each step's srun)\n", strings.Join(unused, ", "))
		}
	}
	if s.agent != nil && s.agent.proc != nil {
		if by := s.agent.runBy(); strings.HasPrefix(by, "Slurm job ") {
			// The job holds its nodes between sweeps (a Slurm review's
			// 'launcher' had not said which job, nor how to free it).
			fmt.Fprintf(&b, "  the session's agent runs now as %s, holding its nodes between sweeps until the session ends or the launcher changes ('launcher local' frees them)\n", by)
		}
	}
	if s.st.Program != nil {
		return b.String() // no agent dials a program's session
	}
	host, port := s.dialHost(l)
	if port == "" {
		port = "a free port"
	}
	fmt.Fprintf(&b, "  the agents dial this session at %s, %s (address= sets it)\n", host, port)
	return b.String()
}

// dialHost is the host (and port, "" for any) agents of launcher l dial:
// address= or this machine's name.
func (s *Session) dialHost(l *Launcher) (host, port string) {
	if l.Address != "" {
		if h, p, err := net.SplitHostPort(l.Address); err == nil {
			return h, p
		}
		return l.Address, ""
	}
	h, err := os.Hostname()
	if err != nil {
		return "localhost", ""
	}
	return h, ""
}

// setByLauncher says, for an sbatch option of extra= that approxtune sets
// itself, what to use instead; "" for any other option.
func setByLauncher(opt string) string {
	name, _, _ := strings.Cut(opt, "=")
	if len(name) > 2 && name[1] != '-' {
		name = name[:2] // a short option with its value: -Jmytune
	}
	// sbatch takes a long option's unique prefix too (--part=debug).
	if len(name) >= 5 && strings.HasPrefix(name, "--") {
		for _, full := range []string{"--job-name", "--output", "--error", "--time", "--partition", "--account", "--nodes", "--ntasks", "--ntasks-per-node", "--export", "--mpi"} {
			if strings.HasPrefix(full, name) {
				name = full
				break
			}
		}
	}
	switch name {
	case "--job-name", "-J":
		return "it names its jobs approxtune"
	case "--output", "-o":
		return "set output=DIR, the folder of the jobs' output files"
	case "--error", "-e":
		return "the job's errors go to its output file, whose end the session quotes when the job fails: set output=DIR for its folder"
	case "--time", "-t":
		return "set time="
	case "--partition", "-p":
		return "set partition="
	case "--account", "-A":
		return "set account="
	case "--nodes", "-N":
		return "set nodes="
	case "--ntasks", "-n":
		return "set 'ranks N' (a program's space's ranks=)"
	case "--ntasks-per-node":
		return "set tasks-per-node="
	case "--export":
		return "the session's environment is passed (--export=ALL), with the agent's token"
	case "--mpi":
		return "set mpi="
	}
	return ""
}
