package jupyter

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/approxtune/approxtune/session"
)

// fuzzKey is the connection key FuzzWire's seeds are signed with.
const fuzzKey = "a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d"

// splitFrames cuts fuzz input into a message's frames at NUL bytes.
func splitFrames(data []byte) [][]byte { return bytes.Split(data, []byte{0}) }

// FuzzWire decodes the frames of a received message (NUL-separated in the
// input), as the kernel does on its shell and control sockets.
// Properties: with a key, a message is accepted only when its signature is
// the HMAC-SHA256 of its four JSON frames under that key, and changing one
// byte of its content then makes it a bad signature; a message accepted
// has a header with a msg_type and four JSON objects, and encodes to frames
// that decode to the same message and encode to the same frames; and the
// same frames signed right are accepted exactly when those properties
// hold. The seeds in testdata/fuzz/FuzzWire are requests as jupyter_client
// and JupyterLab send them, signed with fuzzKey.
func FuzzWire(f *testing.F) {
	s, err := newSigner(fuzzKey, "hmac-sha256")
	if err != nil {
		f.Fatal(err)
	}
	m := &Message{Identities: [][]byte{[]byte("client-1")}, RawHeader: json.RawMessage(`{"msg_id":"1","msg_type":"kernel_info_request","session":"s","username":"u","date":"2026-11-28T03:00:00.000000Z","version":"5.3"}`)}
	f.Add(bytes.Join(encode(m, s), []byte{0}))
	f.Fuzz(func(t *testing.T, data []byte) {
		frames := splitFrames(data)
		got, err := decode(frames, s)
		d := delimiterAt(frames)
		if err == nil {
			rest := frames[d+1:]
			mac := hmac.New(sha256.New, []byte(fuzzKey))
			for _, fr := range rest[1:5] {
				mac.Write(fr)
			}
			sig, herr := hex.DecodeString(string(rest[0]))
			if herr != nil || !hmac.Equal(sig, mac.Sum(nil)) {
				t.Fatalf("accepted signature %q of frames %q", rest[0], rest[1:5])
			}
			checkMessage(t, got, s)
			// One byte of content changed: a bad signature.
			bad := append([][]byte(nil), frames...)
			c := append([]byte(nil), rest[4]...)
			if len(c) == 0 {
				c = []byte{' '}
			} else {
				c[len(c)/2] ^= 0x20
			}
			bad[d+5] = c
			if _, err := decode(bad, s); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("content %q changed to %q: %v, want a bad signature", rest[4], c, err)
			}
		} else if d < 0 && !errors.Is(err, ErrNoDelimiter) || d >= 0 && len(frames)-d-1 < 5 && !errors.Is(err, ErrTruncated) {
			t.Fatalf("frames %q: error %v", frames, err)
		}
		if d < 0 || len(frames)-d-1 < 5 {
			return
		}
		// Signed right, the frames are accepted exactly when they are a
		// message: four JSON objects, a header with a msg_type.
		signed := append([][]byte(nil), frames...)
		signed[d+1] = s.sign(frames[d+2 : d+6]...)
		got, err = decode(signed, s)
		ok := true
		for _, fr := range frames[d+2 : d+6] {
			var obj map[string]json.RawMessage
			if json.Unmarshal(fr, &obj) != nil || obj == nil {
				ok = false
			}
		}
		var h Header
		ok = ok && json.Unmarshal(frames[d+2], &h) == nil && h.MsgType != ""
		if ok != (err == nil) {
			t.Fatalf("frames %q signed right: decoded %v, want accepted %v", frames[d+2:d+6], err, ok)
		}
		if err == nil {
			checkMessage(t, got, s)
		}
	})
}

// delimiterAt is the index of the first <IDS|MSG> frame, or -1.
func delimiterAt(frames [][]byte) int {
	for i, f := range frames {
		if string(f) == delimiter {
			return i
		}
	}
	return -1
}

// checkMessage checks a decoded message's parts and its round trip.
func checkMessage(t *testing.T, m *Message, s signer) {
	t.Helper()
	if m.Header.MsgType == "" {
		t.Fatalf("accepted a header without msg_type: %s", m.RawHeader)
	}
	for _, raw := range []json.RawMessage{m.RawHeader, m.ParentHeader, m.Metadata, m.Content} {
		// An object by JSON's grammar: a number beyond a float's range
		// (137e7891) is JSON, and the request's decoder reports it.
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			t.Fatalf("accepted %q: not a JSON object", raw)
		}
	}
	frames := encode(m, s)
	back, err := decode(frames, s)
	if err != nil {
		t.Fatalf("encoded %q does not decode: %v", frames, err)
	}
	if !reflect.DeepEqual(back.Header, m.Header) || !bytes.Equal(back.Content, m.Content) || !bytes.Equal(back.RawHeader, m.RawHeader) ||
		len(back.Identities) != len(m.Identities) || len(back.Buffers) != len(m.Buffers) {
		t.Fatalf("round trip changed the message:\n%+v\n%+v", m, back)
	}
	if again := encode(back, s); !reflect.DeepEqual(again, frames) {
		t.Fatalf("encode, decode, encode: %q, then %q", frames, again)
	}
}

// Requests FuzzRequest sends, by its selector.
var fuzzRequests = []string{"complete_request", "inspect_request", "is_complete_request", "history_request", "comm_msg", "comm_info_request"}

// FuzzRequest gives the content of the requests the kernel answers at once
// (complete, inspect, is_complete, history, comm_info) and of comm
// messages to their decoders, as the shell goroutine does. Properties:
// a content that does not decode is an error that names the request; a
// completion's cursor_start and cursor_end are in order and within the
// code (in the units the client counts in); an is_complete status is
// complete or invalid; history gives at most the cells there are (and at
// most n of them for tail); a comm message accepted has a comm_id. The
// seeds in testdata/fuzz/FuzzRequest are contents JupyterLab and
// jupyter_client send.
func FuzzRequest(f *testing.F) {
	f.Add(uint8(0), []byte(`{"code":"space b=64 grid=2","cursor_pos":20}`), "s1")
	sess, err := session.New(session.Options{Dir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { sess.Close() })
	f.Fuzz(func(t *testing.T, which uint8, content []byte, client string) {
		typ := fuzzRequests[int(which)%len(fuzzRequests)]
		k := &Kernel{sess: sess, comms: newComms(), utf16: map[string]bool{},
			history: []historyEntry{{1, "workload summa", nil}, {2, "space b=64,128", "ok"}, {3, "evaluate", nil}}}
		m := &Message{Header: Header{MsgType: typ, Session: client}, Content: content}
		var reply map[string]any
		switch typ {
		case "complete_request":
			reply, err = k.complete(m)
			if err == nil {
				var c cursorRequest
				json.Unmarshal(content, &c)
				units := utf8.RuneCountInString(c.Code)
				// The kernel counts in UTF-16 for a client known to, or
				// whose cursor lies past the code's characters but within
				// its UTF-16 units (a client with no session id is not
				// remembered as one).
				pastRunes := c.CursorPos != nil && *c.CursorPos > units && *c.CursorPos <= utf16Len(c.Code)
				if k.utf16[client] || pastRunes {
					units = utf16Len(c.Code)
				}
				start, end := reply["cursor_start"].(int), reply["cursor_end"].(int)
				if start < 0 || start > end || end > units {
					t.Fatalf("%s: cursor %d..%d of %d", content, start, end, units)
				}
				if reply["matches"] == nil {
					t.Fatalf("%s: no matches list", content)
				}
			}
		case "inspect_request":
			reply, err = k.inspect(m)
			if err == nil {
				if _, ok := reply["found"].(bool); !ok {
					t.Fatalf("%s: inspect reply %v", content, reply)
				}
			}
		case "is_complete_request":
			reply, err = isComplete(m)
			if err == nil && reply["status"] != "complete" && reply["status"] != "invalid" {
				t.Fatalf("%s: status %v", content, reply["status"])
			}
		case "history_request":
			reply, err = k.historyReply(m)
			if err == nil {
				h := reply["history"].([]any)
				var c struct {
					Access string `json:"hist_access_type"`
					N      *int   `json:"n"`
				}
				json.Unmarshal(content, &c)
				if len(h) > len(k.history) || (c.Access == "tail" || c.Access == "") && c.N != nil && *c.N >= 0 && len(h) > *c.N {
					t.Fatalf("%s: %d history entries", content, len(h))
				}
			}
		case "comm_msg":
			var data commData
			var c commContent
			c, err = parseComm(m, &data)
			if err == nil && c.CommID == "" {
				t.Fatalf("%s: accepted without a comm_id", content)
			}
		case "comm_info_request":
			reply, err = k.commInfo(m)
		}
		if err != nil {
			msg := err.Error()
			if msg == "" || strings.Contains(msg, "\n") || typ != "comm_msg" && !strings.HasPrefix(msg, typ) && typ != "comm_info_request" {
				t.Fatalf("%s %s: error %q: want one line that names the request", typ, content, msg)
			}
		}
	})
}
