package memcachedtest

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Status is a binary-protocol response status: what a SASL client sees memcached answer.
type Status uint16

// The statuses the tests look for (memcached's protocol_binary.h).
const (
	StatusOK           Status = 0x00
	StatusKeyNotFound  Status = 0x01
	StatusAuthError    Status = 0x20
	StatusAuthContinue Status = 0x21
)

// String names s the way a failing test should report it.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "OK"
	case StatusKeyNotFound:
		return "key not found"
	case StatusAuthError:
		return "authentication error"
	case StatusAuthContinue:
		return "authentication continue"
	}
	return fmt.Sprintf("status %#x", uint16(s))
}

// Binary-protocol opcodes the tests send.
const (
	opGet      = 0x00
	opSet      = 0x01
	opSASLList = 0x20
	opSASLAuth = 0x21
)

// BinaryConn speaks memcached's binary protocol, the only one memcached speaks with SASL on:
// just enough to authenticate as a SASL client does and to store and read a key. It is
// written from the protocol's description, apart from the auth proxy's, so that each checks
// the other.
type BinaryConn struct {
	c      net.Conn
	opaque uint32
}

// NewBinaryConn wraps c (a net.Conn or a *tls.Conn), with a deadline of 5 seconds for
// everything done on it.
func NewBinaryConn(c net.Conn) *BinaryConn {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return &BinaryConn{c: c}
}

// Close closes the connection.
func (b *BinaryConn) Close() error { return b.c.Close() }

// NoDeadline lifts the connection's deadline, for a benchmark's many requests.
func (b *BinaryConn) NoDeadline() { _ = b.c.SetDeadline(time.Time{}) }

// SASLMechanisms returns the SASL mechanisms memcached offers, space-separated.
func (b *BinaryConn) SASLMechanisms() (string, Status, error) {
	_, value, s, err := b.do(opSASLList, nil, "", "")
	return value, s, err
}

// SASLPlain authenticates with SASL PLAIN (RFC 4616: no authorization identity, the user and
// the password, separated by NUL bytes) and returns memcached's answer.
func (b *BinaryConn) SASLPlain(user, password string) (Status, error) {
	_, _, s, err := b.do(opSASLAuth, nil, "PLAIN", "\x00"+user+"\x00"+password)
	return s, err
}

// Set stores value under key, without flags or expiry, and returns memcached's answer.
func (b *BinaryConn) Set(key, value string) (Status, error) {
	_, _, s, err := b.do(opSet, make([]byte, 8), key, value)
	return s, err
}

// Get returns the value under key and memcached's answer.
func (b *BinaryConn) Get(key string) (string, Status, error) {
	extras, value, s, err := b.do(opGet, nil, key, "")
	if err == nil && s == StatusOK && len(extras) != 4 {
		return "", s, errors.Errorf("get %s: %d bytes of extras, want the item's 4 bytes of flags", key, len(extras))
	}
	return value, s, err
}

// do sends one request and reads its response: the response's extras, value and status.
func (b *BinaryConn) do(op byte, extras []byte, key, value string) ([]byte, string, Status, error) {
	b.opaque++
	req := make([]byte, 24, 24+len(extras)+len(key)+len(value))
	req[0], req[1] = 0x80, op
	binary.BigEndian.PutUint16(req[2:], uint16(len(key))) //nolint:gosec // The tests' keys are short.
	req[4] = byte(len(extras))
	binary.BigEndian.PutUint32(req[8:], uint32(len(extras)+len(key)+len(value))) //nolint:gosec // Small.
	binary.BigEndian.PutUint32(req[12:], b.opaque)
	req = append(append(append(req, extras...), key...), value...)
	if _, err := b.c.Write(req); err != nil {
		return nil, "", 0, errors.Wrapf(err, "cannot send opcode %#x", op)
	}
	var h [24]byte
	if _, err := io.ReadFull(b.c, h[:]); err != nil {
		return nil, "", 0, errors.Wrapf(err, "cannot read the answer to opcode %#x", op)
	}
	keyLen, extLen := int(binary.BigEndian.Uint16(h[2:])), int(h[4])
	bodyLen := int(binary.BigEndian.Uint32(h[8:]))
	switch {
	case h[0] != 0x81:
		return nil, "", 0, errors.Errorf("answer to opcode %#x has magic byte %#x, not a binary response's", op, h[0])
	case h[1] != op || binary.BigEndian.Uint32(h[12:]) != b.opaque:
		return nil, "", 0, errors.Errorf("answer is to opcode %#x, request %d; want %#x, request %d", h[1], binary.BigEndian.Uint32(h[12:]), op, b.opaque)
	case bodyLen > 1<<20 || keyLen+extLen > bodyLen:
		return nil, "", 0, errors.Errorf("answer to opcode %#x has a %d-byte body with a %d-byte key and %d bytes of extras", op, bodyLen, keyLen, extLen)
	}
	body := make([]byte, bodyLen)
	if _, err := io.ReadFull(b.c, body); err != nil {
		return nil, "", 0, errors.Wrapf(err, "cannot read the answer to opcode %#x", op)
	}
	return body[:extLen], string(body[extLen+keyLen:]), Status(binary.BigEndian.Uint16(h[6:])), nil
}
