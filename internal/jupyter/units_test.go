package jupyter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestKernelWireRoundTrip(t *testing.T) {
	s, err := newSigner("secret", "hmac-sha256")
	if err != nil {
		t.Fatal(err)
	}
	m := &Message{
		Identities: [][]byte{[]byte("id1"), []byte("id2")},
		RawHeader:  json.RawMessage(`{"msg_id":"a","msg_type":"execute_request","session":"s","username":"u","date":"2024-01-01T00:00:00.123456Z","version":"5.3","extra":1}`),
		Content:    json.RawMessage(`{"code":"status"}`),
		Buffers:    [][]byte{[]byte("buf")},
	}
	frames := encode(m, s)
	// Empty parent_header and metadata go out as {}.
	if string(frames[5]) != "{}" || string(frames[6]) != "{}" || string(frames[2]) != delimiter {
		t.Fatalf("frames %q", frames)
	}
	got, err := decode(frames, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Identities) != 2 || got.Header.MsgType != "execute_request" || string(got.RawHeader) != string(m.RawHeader) ||
		len(got.Buffers) != 1 || string(got.Content) != `{"code":"status"}` {
		t.Errorf("decoded %+v", got)
	}
	// Wrong key, unsupported scheme, and no key at all.
	other, _ := newSigner("other", "hmac-sha256")
	if _, err := decode(frames, other); !errors.Is(err, ErrBadSignature) {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := newSigner("k", "hmac-md5"); err == nil {
		t.Error("hmac-md5 accepted")
	}
	if _, err := decode(frames, signer{}); err != nil {
		t.Errorf("no key: %v", err)
	}
	if f := encode(m, signer{}); len(f[3]) != 0 {
		t.Errorf("signed without a key: %q", f[3])
	}
	// Uppercase hex signatures are accepted.
	up := append([][]byte(nil), frames...)
	up[3] = bytes.ToUpper(frames[3])
	if _, err := decode(up, s); err != nil {
		t.Errorf("uppercase signature: %v", err)
	}
	for name, f := range map[string][][]byte{"no delimiter": frames[3:], "truncated": frames[:6]} {
		if _, err := decode(f, s); err == nil {
			t.Errorf("%s decoded", name)
		}
	}
	if !dateRE.MatchString(now()) {
		t.Errorf("date %q", now())
	}
	if _, err := time.Parse(time.RFC3339Nano, now()); err != nil {
		t.Error(err)
	}
}

func TestKernelConnectionFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kernel.json")
	os.WriteFile(p, []byte(`{"shell_port": 5001, "iopub_port": 5002, "stdin_port": 5003, "control_port": 5004, "hb_port": 5005,
		"ip": "127.0.0.1", "key": "k", "transport": "tcp", "signature_scheme": "hmac-sha256", "kernel_name": "approxtune",
		"jupyter_session": "x", "unknown_field": [1, 2]}`), 0o600)
	c, err := ReadConnectionFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.ShellPort != 5001 || c.HBPort != 5005 || c.Key != "k" || c.Endpoint(c.IOPubPort) != "tcp://127.0.0.1:5002" {
		t.Errorf("%+v", c)
	}
	c.Transport, c.IP = "ipc", "/tmp/kernel-1"
	if got := c.Endpoint(5); got != "ipc:///tmp/kernel-1-5" {
		t.Errorf("ipc endpoint %q", got)
	}
	os.WriteFile(p, []byte(`{"transport": "udp"}`), 0o600)
	if _, err := ReadConnectionFile(p); err == nil {
		t.Error("udp accepted")
	}
}

func TestKernelCursorUnits(t *testing.T) {
	s := "aé😀b" // bytes: a(1) é(2) 😀(4) b(1); code points 4; UTF-16 units 5
	for _, tc := range []struct {
		pos   int
		utf16 bool
		b     int
	}{{0, false, 0}, {1, false, 1}, {2, false, 3}, {3, false, 7}, {4, false, 8}, {9, false, 8},
		{3, true, 7}, {4, true, 7}, {5, true, 8}, {2, true, 3}} {
		if got := toByte(s, tc.pos, tc.utf16); got != tc.b {
			t.Errorf("toByte(%d, utf16=%v) = %d, want %d", tc.pos, tc.utf16, got, tc.b)
		}
	}
	if fromByte(s, 7, false) != 3 || fromByte(s, 7, true) != 4 || fromByte(s, 8, true) != 5 || utf16Len(s) != 5 {
		t.Error("fromByte")
	}
}

func TestKernelHistoryGlob(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		ok   bool
	}{{"*", "", true}, {"*", "a\nb", true}, {"help*", "help reps", true}, {"help*", "xhelp", false},
		{"*reps*", "help reps\nstatus", true}, {"?", "é", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "aXbY", false},
		{"st?tus", "status", true}, {"a/b*", "a/b/c", true}} {
		if glob(tc.p, tc.s) != tc.ok {
			t.Errorf("glob(%q, %q) = %v", tc.p, tc.s, !tc.ok)
		}
	}
}

func TestKernelInstallSpec(t *testing.T) {
	dir := t.TempDir()
	d, err := InstallSpec(filepath.Join(dir, "kernels"), "/opt/bin/approxtune")
	if err != nil {
		t.Fatal(err)
	}
	var sp map[string]any
	b, _ := os.ReadFile(filepath.Join(d, "kernel.json"))
	if err := json.Unmarshal(b, &sp); err != nil {
		t.Fatal(err)
	}
	argv, _ := sp["argv"].([]any)
	if len(argv) != 3 || argv[0] != "/opt/bin/approxtune" || argv[1] != "kernel" || argv[2] != "{connection_file}" ||
		sp["display_name"] != "approxtune" || sp["language"] != "approxtune" || sp["interrupt_mode"] != "message" {
		t.Errorf("kernel.json %s", b)
	}
	for _, size := range []int{32, 64} {
		f, err := os.Open(filepath.Join(d, fmt.Sprintf("logo-%dx%d.png", size, size)))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() != size || img.Bounds().Dy() != size {
			t.Errorf("logo %d: %v %v", size, err, img.Bounds())
		}
	}
	// Reinstalling replaces it; SpecBinary says which binary ran before.
	if got := SpecBinary(filepath.Join(dir, "kernels")); got != "/opt/bin/approxtune" {
		t.Errorf("SpecBinary %q, want /opt/bin/approxtune", got)
	}
	if got := SpecBinary(filepath.Join(dir, "none")); got != "" {
		t.Errorf("SpecBinary of no spec %q, want none", got)
	}
	if _, err := InstallSpec(filepath.Join(dir, "kernels"), "/other/approxtune"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(d, "kernel.json"))
	if !strings.Contains(string(b), "/other/approxtune") {
		t.Errorf("not replaced: %s", b)
	}
	t.Setenv("JUPYTER_DATA_DIR", "/x/y")
	if u, _ := UserDataDir(); u != "/x/y" {
		t.Errorf("UserDataDir %s", u)
	}
	t.Setenv("JUPYTER_DATA_DIR", "")
	t.Setenv("XDG_DATA_HOME", "/xdg")
	if u, _ := UserDataDir(); u != "/xdg/jupyter" {
		t.Errorf("UserDataDir %s", u)
	}
}
