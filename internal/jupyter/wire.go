package jupyter

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// ProtocolVersion is the Jupyter messaging protocol version the kernel speaks.
const ProtocolVersion = "5.3"

// delimiter separates the routing identities from the message proper.
const delimiter = "<IDS|MSG>"

// dateLayout is ISO 8601 with microseconds (Jupyter clients parse at most 6
// fractional digits).
const dateLayout = "2006-01-02T15:04:05.000000Z07:00"

// Header is a message header.
type Header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// Message is one Jupyter message as received or about to be sent.
type Message struct {
	// Identities are the routing frames before the delimiter (on iopub: the topic).
	Identities [][]byte
	Header     Header
	// RawHeader is the header exactly as received; replies echo it as their
	// parent_header so fields this kernel does not know survive.
	RawHeader    json.RawMessage
	ParentHeader json.RawMessage
	Metadata     json.RawMessage
	Content      json.RawMessage
	Buffers      [][]byte
}

// Errors of a malformed message. They are logged and the message dropped.
var (
	ErrNoDelimiter  = errors.New("no <IDS|MSG> delimiter")
	ErrTruncated    = errors.New("truncated: fewer than the 5 frames signature, header, parent_header, metadata, content")
	ErrBadSignature = errors.New("bad signature")
)

// signer signs and verifies messages with the connection file's key.
type signer struct {
	key []byte
	new func() hash.Hash
}

// newSigner checks the signature scheme; an empty key turns signing off.
func newSigner(key, scheme string) (signer, error) {
	if key == "" {
		return signer{}, nil
	}
	var h func() hash.Hash
	switch strings.ToLower(scheme) {
	case "", "hmac-sha256":
		h = sha256.New
	case "hmac-sha1":
		h = sha1.New
	case "hmac-sha512":
		h = sha512.New
	default:
		return signer{}, fmt.Errorf("signature scheme %q is not supported: want hmac-sha256 (or hmac-sha1, hmac-sha512)", scheme)
	}
	return signer{key: []byte(key), new: h}, nil
}

// sign returns the hex HMAC of the four JSON frames, or "" without a key.
func (s signer) sign(frames ...[]byte) []byte {
	if s.key == nil {
		return nil
	}
	m := hmac.New(s.new, s.key)
	for _, f := range frames {
		m.Write(f)
	}
	sum := m.Sum(nil)
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum)
	return out
}

// verify compares a received signature in constant time.
func (s signer) verify(sig []byte, frames ...[]byte) bool {
	if s.key == nil {
		return true
	}
	return hmac.Equal(bytes.ToLower(sig), s.sign(frames...))
}

// decode parses the frames of a received message: identities, delimiter,
// signature, the four JSON frames, and buffers.
func decode(frames [][]byte, s signer) (*Message, error) {
	d := -1
	for i, f := range frames {
		if string(f) == delimiter {
			d = i
			break
		}
	}
	if d < 0 {
		return nil, ErrNoDelimiter
	}
	rest := frames[d+1:]
	if len(rest) < 5 {
		return nil, ErrTruncated
	}
	sig, h, p, md, c := rest[0], rest[1], rest[2], rest[3], rest[4]
	if !s.verify(sig, h, p, md, c) {
		return nil, ErrBadSignature
	}
	m := &Message{Identities: frames[:d], Buffers: rest[5:]}
	for _, part := range []struct {
		name string
		raw  []byte
		dst  *json.RawMessage
	}{{"header", h, &m.RawHeader}, {"parent_header", p, &m.ParentHeader}, {"metadata", md, &m.Metadata}, {"content", c, &m.Content}} {
		if err := object(part.raw); err != nil {
			return nil, fmt.Errorf("%s: %w", part.name, err)
		}
		*part.dst = json.RawMessage(part.raw)
	}
	if err := json.Unmarshal(h, &m.Header); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if m.Header.MsgType == "" {
		return nil, errors.New("header: no msg_type")
	}
	return m, nil
}

// object checks that raw is one JSON object. Only JSON's own white space
// may surround it: raw is kept as it is (a json.RawMessage), and a frame
// that Unicode white space (a vertical tab) made valid only once trimmed
// would fail when the message is encoded again.
func object(raw []byte) error {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return errors.New("not a JSON object")
	}
	if !json.Valid(raw) {
		return errors.New("invalid JSON")
	}
	return nil
}

// encode makes the frames of m, signed.
func encode(m *Message, s signer) [][]byte {
	h, p, md, c := nonEmpty(m.RawHeader), nonEmpty(m.ParentHeader), nonEmpty(m.Metadata), nonEmpty(m.Content)
	frames := make([][]byte, 0, len(m.Identities)+6+len(m.Buffers))
	frames = append(frames, m.Identities...)
	frames = append(frames, []byte(delimiter), s.sign(h, p, md, c), h, p, md, c)
	return append(frames, m.Buffers...)
}

// nonEmpty turns a missing or null JSON frame into {}.
func nonEmpty(raw json.RawMessage) []byte {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return []byte("{}")
	}
	return raw
}

// now is the current time as a Jupyter date.
func now() string { return time.Now().UTC().Format(dateLayout) }
