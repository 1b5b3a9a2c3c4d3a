package session

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/approxtune/approxtune/sweep"
)

// JournalName is the journal's file name in a session directory.
const JournalName = "results.jsonl"

// ProgramLogName is the file in the session directory that keeps what a
// program's launches printed, each under a heading.
const ProgramLogName = "program.log"

// record is one line of the journal.
type record struct {
	T       time.Time       `json:"t"`
	Kind    string          `json:"kind"` // sweep, resume, event, end, state (the settings a command changed), job (Message: a Slurm job the sweep ran in)
	Sweep   int             `json:"sweep"`
	Spec    *sweep.Spec     `json:"spec,omitempty"`
	State   *State          `json:"state,omitempty"`
	Configs []sweep.Config  `json:"configs,omitempty"`
	Event   json.RawMessage `json:"event,omitempty"`
	Status  Status          `json:"status,omitempty"`
	Message string          `json:"message,omitempty"`
	Hung    *int            `json:"hung,omitempty"` // end of a hung sweep: the configuration that hung
	Skip    []int           `json:"skip,omitempty"` // resume: configurations left out for good (they hung)
	// RanOn is the launcher an adopted sweep's runs ran with (its sweep
	// record has no state: a sweep's own is its state's launcher), or
	// the kind launcherConnected of a sweep whose agent dialled in; on a
	// resume record, the launcher the rest runs with.
	RanOn *Launcher `json:"ran_on,omitempty"`
}

// Journal appends records to results.jsonl, one write per line as they
// arrive, so a crash of the session, the agent or the machine's processes
// loses no finished result; Sync makes them durable against the machine's
// own crash (the session syncs at each sweep's end, and at an event when
// Options.SyncEvery has passed since the last sync). Lines are whole or absent: a
// write that fails (a full disk, a file-size limit, an I/O error) is cut
// back off the file, and its record waits in memory, written before the
// next one as soon as writing works again.
type Journal struct {
	Dir     string
	f       *os.File
	path    string    // the file f is: JournalName in Dir, unless Recover moved it
	size    int64     // the file's length up to its last whole line
	backlog [][]byte  // lines not written yet, oldest first
	syncs   int       // syncs made
	synced  time.Time // the last sync
	lock    *os.File  // LockName, held (flock) while the journal is open
}

// LockName is the file in a session directory that a session holds locked
// (flock) while it has the directory open: a second session on the same
// directory would number its sweeps as the first does and interleave its
// records with the first's, and a reopen would keep only one of each pair.
// The lock goes with the process, however it ends.
const LockName = ".approxtune.lock"

// Lock takes the session directory for this journal, or says which process
// has it. It is taken when a session opens a directory that exists, and
// before a journal's first record otherwise.
func (j *Journal) Lock() error {
	if j.lock != nil {
		return nil
	}
	if err := os.MkdirAll(j.Dir, 0o700); err != nil {
		return fmt.Errorf("session directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(j.Dir, LockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("session directory: %w", err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		// Once more after a moment: another session's lockHolder may
		// hold the lock shared for an instant.
		time.Sleep(50 * time.Millisecond)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		holder := ""
		if b, rerr := io.ReadAll(io.LimitReader(f, 64)); rerr == nil && len(bytes.TrimSpace(b)) > 0 {
			holder = " (pid " + string(bytes.TrimSpace(b)) + ")"
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return &InUseError{Dir: j.Dir, Holder: holder}
		}
		return fmt.Errorf("session directory %s: lock: %w", j.Dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	j.lock = f
	return nil
}

// InUseError is the error of opening a session directory that another
// approxtune has open (its journal's lock).
type InUseError struct {
	Dir    string
	Holder string // " (pid N)" as the lock file names the holder, or ""
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("session directory %s is open in another approxtune%s: leave that one first, or load this session's sweeps into a new one ('load %s')", e.Dir, e.Holder, e.Dir)
}

// lockHolder says whether another approxtune holds the session directory
// dir open (its lock), and its pid as the lock file names it ("" when
// unknown): a session that died holds no lock, whatever its journal says.
func lockHolder(dir string) (held bool, pid string) {
	f, err := os.Open(filepath.Join(dir, LockName))
	if err != nil {
		return false, ""
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false, ""
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		return false, ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, 64))
	return true, string(bytes.TrimSpace(b))
}

// DefaultSessionsDir is $XDG_DATA_HOME/approxtune/sessions (or
// ~/.local/share/approxtune/sessions).
func DefaultSessionsDir() string {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "approxtune", "sessions")
}

// NewSessionID names a session: its start time and a random suffix.
func NewSessionID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return time.Now().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// OpenJournal prepares the journal in dir. The directory and the file are
// made with the first record, so a session that never sweeps leaves nothing.
func OpenJournal(dir string) (*Journal, error) {
	if dir == "" {
		return nil, fmt.Errorf("journal: no session directory")
	}
	return &Journal{Dir: dir}, nil
}

func (j *Journal) open() error {
	if j.f != nil {
		return nil
	}
	if err := j.Lock(); err != nil {
		return err
	}
	// The journal is the record of the user's tuning, with their
	// commands: theirs to read only.
	if err := os.MkdirAll(j.Dir, 0o700); err != nil {
		return fmt.Errorf("session directory: %w", err)
	}
	path := filepath.Join(j.Dir, JournalName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	size, err := wholeLines(f)
	if err == nil {
		err = f.Chmod(0o600) // one an older build made 0644
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	j.f, j.path, j.size = f, path, size
	return nil
}

// maxLine is the longest journal line ReadJournal takes.
const maxLine = 1 << 26

// wholeLines cuts a torn last line (a write the machine or the process
// died in) off f, so what is appended next starts a line of its own, and
// returns f's length. A last line that holds a whole record and lacks
// only its newline is ended instead: ReadJournal reads it, so it is kept.
func wholeLines(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, err
	}
	size := fi.Size()
	whole := int64(0) // not one whole line, unless a newline is found
	buf := make([]byte, 4096)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			whole = start + int64(i) + 1
			break
		}
		end = start
	}
	if whole == size {
		return size, nil
	}
	if size-whole <= maxLine {
		tail := make([]byte, size-whole)
		if _, err := f.ReadAt(tail, whole); err != nil {
			return 0, err
		}
		// Whole when it reads as a record, as ReadJournal reads it: other
		// JSON (a number, a list) is a torn line there, so it goes here.
		if json.Unmarshal(tail, &record{}) == nil {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return 0, err
			}
			return size + 1, nil
		}
	}
	return whole, f.Truncate(whole)
}

func (j *Journal) append(r record) error {
	r.T = time.Now().UTC()
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.backlog = append(j.backlog, append(b, '\n'))
	if err := j.flush(); err != nil {
		return j.failed(err)
	}
	return nil
}

// flush writes the records waiting in memory, oldest first, opening the
// file if need be; a write that fails is cut back off the file, so that it
// holds whole lines only, and it and those after it go on waiting.
func (j *Journal) flush() error {
	if err := j.open(); err != nil {
		return err
	}
	for len(j.backlog) > 0 {
		if _, err := j.f.Write(j.backlog[0]); err != nil {
			return errors.Join(fmt.Errorf("journal: %w", err), j.f.Truncate(j.size))
		}
		j.size += int64(len(j.backlog[0]))
		j.backlog = j.backlog[1:]
	}
	return nil
}

// failed says that the journal could not be written and what waits.
func (j *Journal) failed(err error) error {
	return &JournalError{Err: err, Waiting: len(j.backlog)}
}

// JournalError is a failure to write the journal: the records not written
// wait in the session's memory.
type JournalError struct {
	Err     error
	Waiting int // records in memory, not in the file
}

func (e *JournalError) Error() string {
	if e.Waiting == 0 {
		// The journal took them since (space was freed meanwhile).
		return fmt.Sprintf("%v (the records that waited are written since: the journal holds them all)", e.Err)
	}
	what := fmt.Sprintf("%d records wait", e.Waiting)
	if e.Waiting == 1 {
		what = "1 record waits"
	}
	return fmt.Sprintf("%v (%s in memory, written as soon as the journal can be: %s, then 'resume'; if the session ends first, they go to a file of their own, which it names)", e.Err, what, e.Fix())
}

// Fix says what lets the journal be written again: space on a full disk
// (or under a file-size limit), permission where writing it is not
// permitted, else what the error says.
func (e *JournalError) Fix() string {
	switch {
	case errors.Is(e.Err, syscall.ENOSPC), errors.Is(e.Err, syscall.EDQUOT), errors.Is(e.Err, syscall.EFBIG):
		return "free space"
	case errors.Is(e.Err, fs.ErrPermission), errors.Is(e.Err, syscall.EROFS):
		return "make the journal writable"
	}
	return "fix what stops it"
}

// dropLast takes the last record appended back out of the records waiting
// in memory, when it is still there: a sweep that could not journal its
// start does not start, and its record must not be written later.
func (j *Journal) dropLast() {
	if len(j.backlog) > 0 {
		j.backlog = j.backlog[:len(j.backlog)-1]
	}
}

func (e *JournalError) Unwrap() error { return e.Err }

// records counts journal records in words.
func records(n int) string {
	if n == 1 {
		return "1 journal record"
	}
	return fmt.Sprintf("%d journal records", n)
}

// Recover writes the journal again at its path when the file this session
// has open is no longer there: deleted, or its directory removed (a /tmp
// cleaner, an rm of the wrong folder). The open file still holds every
// record written, so all of them go into a new file at the path, with the
// directory and its lock made again, and the session goes on writing
// there; before, it had gone on writing into the deleted file, and every
// result was lost when it ended. A file put at the path meanwhile by
// someone else is left alone: the records go beside it, into
// results.recovered-PID.jsonl. It returns what it did, for the user, or "".
func (j *Journal) Recover() (string, error) {
	if j.f == nil {
		return "", nil
	}
	path := j.path
	ours, err := j.f.Stat()
	if err != nil {
		return "", fmt.Errorf("journal: %w", err)
	}
	st, err := os.Stat(path)
	if err == nil && os.SameFile(ours, st) {
		return "", nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("journal %s: %w", path, err)
	}
	what := "was deleted"
	if err == nil {
		// Someone else's file (an editor's save, another session): the
		// records go beside it, and on there (j.path), not over it.
		what = "was replaced by another file"
		path = filepath.Join(j.Dir, fmt.Sprintf("results.recovered-%d.jsonl", os.Getpid()))
	}
	if err := os.MkdirAll(j.Dir, 0o700); err != nil {
		return "", fmt.Errorf("the journal %s: session directory: %w", what, err)
	}
	if _, err := os.Stat(filepath.Join(j.Dir, LockName)); err != nil && j.lock != nil {
		// The directory went with its lock: take it again.
		j.lock.Close()
		j.lock = nil
	}
	if err := j.Lock(); err != nil {
		return "", fmt.Errorf("the journal %s: %w", what, err)
	}
	nf, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("the journal %s: %w", what, err)
	}
	if _, err := io.Copy(nf, io.NewSectionReader(j.f, 0, j.size)); err != nil {
		nf.Close()
		os.Remove(path)
		return "", fmt.Errorf("the journal %s: copying its records: %w", what, err)
	}
	if err := nf.Sync(); err != nil {
		nf.Close()
		return "", fmt.Errorf("the journal %s: %w", what, err)
	}
	j.f.Close()
	old := j.path
	j.f, j.path = nf, path
	if path != old {
		return fmt.Sprintf("the session's journal %s %s while the session had it open: every record was written to %s, and the session goes on there (a reopen reads %s: put the records back there to keep them with the session)", old, what, path, JournalName), nil
	}
	return fmt.Sprintf("the session's journal %s %s while the session had it open: every record was written again to it, and the session goes on there", path, what), nil
}

// Sync makes what was written durable (fsync).
func (j *Journal) Sync() error {
	if j.f == nil {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: sync: %w", j.f.Name(), err)
	}
	j.syncs++
	j.synced = time.Now()
	return nil
}

// Close closes the journal file. Records still waiting in memory (a write
// had failed) are tried once more; those that still cannot be written go
// to a file of their own in the system's temporary directory, which the
// error names with how to put them back: a session that ends (a script, a
// notebook run) had lost them.
func (j *Journal) Close() error {
	var err error
	if len(j.backlog) > 0 {
		err = j.rescue()
	}
	if j.lock != nil {
		j.lock.Close()
		j.lock = nil
	}
	if j.f == nil {
		return err
	}
	return errors.Join(err, j.f.Close())
}

// rescue writes the records waiting in memory to the journal, or, failing
// that, to a file of their own.
func (j *Journal) rescue() error {
	werr := j.flush()
	if werr == nil {
		return j.f.Sync()
	}
	journal := j.path
	if journal == "" {
		journal = filepath.Join(j.Dir, JournalName)
	}
	f, err := os.CreateTemp("", "approxtune-unsaved-*.jsonl")
	if err == nil {
		_, err = f.Write(bytes.Join(j.backlog, nil))
		err = errors.Join(err, f.Sync(), f.Close())
	}
	if err != nil {
		return fmt.Errorf("%s could not be written to %s (%v) nor kept elsewhere (%v): lost", records(len(j.backlog)), journal, werr, err)
	}
	next := "reopen the session and 'resume'"
	if j.settingsOnly() {
		next = "reopen the session" // nothing of a sweep to resume
	}
	return fmt.Errorf("%s could not be written to %s (%v): kept in %s; once the journal can be written, 'cat %s >> %s', then %s", records(len(j.backlog)), journal, werr, f.Name(), f.Name(), journal, next)
}

// settingsOnly says whether every record waiting in memory is settings
// (kind state): none of a sweep.
func (j *Journal) settingsOnly() bool {
	for _, b := range j.backlog {
		var r struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(b, &r) != nil || r.Kind != "state" {
			return false
		}
	}
	return true
}

// ReadJournal rebuilds the sweeps recorded in a journal file. A torn last
// line (the session died writing it) is left out; any other line that is
// not a record, or a record of the wrong shape, is an error that names the
// line and what is wrong with it (see damagedLine).
func ReadJournal(path string) ([]*Sweep, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	byID := map[int]*Sweep{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	var torn error // the last line read did not decode
	for n := 1; sc.Scan(); n++ {
		if torn != nil {
			return nil, torn // not the last line: damage, not a torn write
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			torn = damagedLine(path, n, sc.Bytes(), err)
			continue
		}
		if r.Kind == "state" {
			continue // the settings typed after a sweep (lastState reads them)
		}
		s := byID[r.Sweep]
		if s == nil && r.Kind != "sweep" && r.Kind != "" {
			return nil, damagedLine(path, n, sc.Bytes(), fmt.Errorf("a record of sweep %d, which no line before it starts", r.Sweep))
		}
		switch r.Kind {
		case "":
			return nil, damagedLine(path, n, sc.Bytes(), errors.New("a record with no kind"))
		case "sweep":
			if r.Spec == nil {
				// The session writes every sweep with its spec.
				return nil, damagedLine(path, n, sc.Bytes(), errors.New("a sweep record with no spec"))
			}
			s = &Sweep{ID: r.Sweep, Spec: r.Spec, Configs: r.Configs, Status: StatusRunning, Started: r.T, Workload: r.Spec.Workload, origin: r.Message, ranOn: r.RanOn.clone()}
			if r.State != nil && r.RanOn == nil {
				s.ranOn = ranOn(r.State.Launcher)
			}
			byID[r.Sweep] = s
		case "event":
			var head struct {
				Type string `json:"type"`
			}
			err := json.Unmarshal(r.Event, &head)
			if err == nil && head.Type == sweep.TypeResult {
				err = json.Unmarshal(r.Event, &sweep.Result{})
			}
			if ute := (*json.UnmarshalTypeError)(nil); errors.As(err, &ute) {
				ute.Field = strings.TrimSuffix("event."+ute.Field, ".")
			}
			if err != nil {
				return nil, damagedLine(path, n, sc.Bytes(), err)
			}
			s.apply(Event{Type: head.Type, Raw: r.Event})
		case "end":
			s.Status, s.Message, s.Hung = r.Status, r.Message, r.Hung
		case "resume":
			s.Status = StatusRunning
			for _, i := range r.Skip {
				s.leaveOut(i)
			}
			if r.RanOn != nil {
				s.ranOn = r.RanOn.clone()
			}
		case "job":
			s.addJob(r.Message)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	if torn != nil && endsWithNewline(f) {
		return nil, torn // a whole line: written damaged, or damaged since
	}
	var out []*Sweep
	for _, s := range byID {
		if s.Status != StatusOK || len(s.Missing()) > 0 {
			s.carried, s.carriedBad = readCarried(filepath.Dir(path), s.ID)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// endsWithNewline reports whether f's last byte is a newline: its last
// line is whole.
func endsWithNewline(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return false
	}
	b := make([]byte, 1)
	_, err = f.ReadAt(b, fi.Size()-1)
	return err == nil && b[0] == '\n'
}

// damagedLine is the error for line n of a journal that is not a record
// the session wrote: where it is, what is wrong, and how to read the rest.
func damagedLine(path string, n int, line []byte, err error) error {
	var why string
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ute) && ute.Field != "":
		why = fmt.Sprintf("%s holds a JSON %s where a journal has %s", ute.Field, ute.Value, kindWords(ute.Type))
	case errors.As(err, &ute):
		why = fmt.Sprintf("a JSON %s where a journal has a record (an object)", ute.Value)
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		why = "not a JSON record"
	default:
		why = err.Error()
	}
	start := string(line)
	if len(start) > 40 {
		start = strings.ToValidUTF8(start[:40], "") + "..."
	}
	return fmt.Errorf("journal %s, line %d is damaged: %s (it starts %q); nothing was read: delete the line to read the others (sed -i '%dd' %s)", path, n, why, start, n, path)
}

// kindWords says what values of type t are, for a user.
func kindWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Pointer:
		return kindWords(t.Elem())
	}
	return "an object"
}
