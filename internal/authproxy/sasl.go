package authproxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// Protocol is how memcached wants its clients to authenticate, which decides what the proxy
// does with a connection.
type Protocol string

const (
	// ProtocolText is memcached's text-protocol authentication (--auth-file): the proxy
	// authenticates each connection with a "set" and then relays bytes, unchanged.
	ProtocolText Protocol = "text"
	// ProtocolSASL is memcached's SASL authentication (-S), which turns memcached's text
	// protocol off: the proxy authenticates each connection with SASL PLAIN over the binary
	// protocol and then answers the exporter's text-protocol stats commands by translating
	// them into binary requests. It refuses every other command, so that the proxy is a way
	// to read memcached's statistics and nothing else.
	ProtocolSASL Protocol = "sasl"
)

// The binary protocol's magic bytes, opcodes and statuses the proxy uses.
const (
	binRequest  = 0x80
	binResponse = 0x81

	opVersion  = 0x0b
	opStat     = 0x10
	opSASLList = 0x20
	opSASLAuth = 0x21

	statusOK             = 0x00
	statusAuthError      = 0x20
	statusAuthContinue   = 0x21
	statusUnknownCommand = 0x81
)

// Bounds on what the proxy reads, so that neither side can make it hold much memory.
const (
	// maxCommandLine is the longest text command line read from a client; the exporter's
	// longest is "stats settings".
	maxCommandLine = 256
	// maxPacketBody is the largest binary response body read from memcached; one statistic,
	// a version or a list of SASL mechanisms is far smaller.
	maxPacketBody = 64 << 10
	// maxAnswer is the largest text answer built for one command; "stats items" with every
	// slab class in use is about 100 KiB.
	maxAnswer = 1 << 20
)

// binConn speaks memcached's binary protocol on a connection to memcached.
type binConn struct {
	w      io.Writer
	r      io.Reader
	opaque uint32
}

// packet is one binary response.
type packet struct {
	status     uint16
	key, value []byte
}

// do sends a request with opcode op, key and value, and returns its first response.
func (b *binConn) do(op byte, key, value string) (packet, error) {
	if err := b.send(op, key, value); err != nil {
		return packet{}, err
	}
	return b.receive(op)
}

// send writes a request with opcode op, key and value, and no extras.
func (b *binConn) send(op byte, key, value string) error {
	b.opaque++
	msg := make([]byte, 24, 24+len(key)+len(value))
	msg[0], msg[1] = binRequest, op
	binary.BigEndian.PutUint16(msg[2:], uint16(len(key))) //nolint:gosec // The proxy's own keys are short.
	binary.BigEndian.PutUint32(msg[8:], uint32(len(key)+len(value)))
	binary.BigEndian.PutUint32(msg[12:], b.opaque)
	msg = append(append(msg, key...), value...)
	if _, err := b.w.Write(msg); err != nil {
		return fmt.Errorf("cannot send a request to memcached: %w", err)
	}
	return nil
}

// receive reads one response to the last request sent, whose opcode was op.
func (b *binConn) receive(op byte) (packet, error) {
	var h [24]byte
	if _, err := io.ReadFull(b.r, h[:]); err != nil {
		return packet{}, fmt.Errorf("cannot read memcached's answer: %w", err)
	}
	keyLen, extLen := int(binary.BigEndian.Uint16(h[2:])), int(h[4])
	bodyLen, opaque := binary.BigEndian.Uint32(h[8:]), binary.BigEndian.Uint32(h[12:])
	switch {
	case h[0] != binResponse:
		return packet{}, fmt.Errorf("memcached answered with magic byte %#x, not a binary-protocol response", h[0])
	case h[1] != op || opaque != b.opaque:
		return packet{}, fmt.Errorf("memcached answered opcode %#x to request %d, want %#x to request %d", h[1], opaque, op, b.opaque)
	case bodyLen > maxPacketBody:
		return packet{}, fmt.Errorf("memcached's answer has %d bytes, more than the %d the proxy reads", bodyLen, maxPacketBody)
	case uint32(keyLen+extLen) > bodyLen: //nolint:gosec // Both are small and positive.
		return packet{}, fmt.Errorf("memcached's answer has a %d-byte key and %d bytes of extras in a %d-byte body", keyLen, extLen, bodyLen)
	}
	body := make([]byte, bodyLen)
	if _, err := io.ReadFull(b.r, body); err != nil {
		return packet{}, fmt.Errorf("cannot read memcached's answer: %w", err)
	}
	return packet{status: binary.BigEndian.Uint16(h[6:]), key: body[extLen : extLen+keyLen], value: body[extLen+keyLen:]}, nil
}

// errNoSASL is memcached not offering SASL PLAIN, which is its configuration's fault, not
// the credentials'.
var errNoSASL = errors.New("memcached does not offer SASL PLAIN")

// AuthenticateSASL authenticates conn, a fresh connection to memcached running with SASL
// (-S), with c: it checks that memcached offers SASL PLAIN, so that a memcached set up
// otherwise is told apart from wrong credentials, and authenticates with PLAIN. It reads
// nothing beyond the answers, so conn is ready for binary requests afterwards. It honours
// conn's deadline.
func AuthenticateSASL(conn net.Conn, c Credentials) error {
	return authenticateSASL(&binConn{w: conn, r: conn}, c)
}

func authenticateSASL(b *binConn, c Credentials) error {
	if strings.ContainsRune(c.Username+c.Password, 0) {
		return errors.New("the username or password holds a NUL byte, which SASL PLAIN cannot carry")
	}
	mechs, err := b.do(opSASLList, "", "")
	if err != nil {
		return fmt.Errorf("cannot list memcached's SASL mechanisms: %w", err)
	}
	if mechs.status == statusUnknownCommand {
		return fmt.Errorf("%w: it does not speak SASL at all (is it running with -S?)", errNoSASL)
	}
	if mechs.status != statusOK || !contains(strings.Fields(string(mechs.value)), "PLAIN") {
		return fmt.Errorf("%w: it offers %q (status %#x); its SASL configuration needs mech_list: plain", errNoSASL, mechs.value, mechs.status)
	}
	// PLAIN's message is the authorization identity (none), the user and the password,
	// separated by NUL bytes (RFC 4616).
	a, err := b.do(opSASLAuth, "PLAIN", "\x00"+c.Username+"\x00"+c.Password)
	if err != nil {
		return fmt.Errorf("cannot authenticate with SASL PLAIN: %w", err)
	}
	switch a.status {
	case statusOK:
		return nil
	case statusAuthError:
		return fmt.Errorf("memcached answered %q to user %q: %w", a.value, c.Username, ErrAuthentication)
	case statusAuthContinue:
		return errors.New("memcached asked for a second SASL step, which PLAIN does not have")
	default:
		return fmt.Errorf("memcached answered SASL PLAIN with status %#x, %q", a.status, a.value)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// A command is what a client may ask through the proxy in SASL mode.
type command int

const (
	cmdRefused command = iota
	cmdQuit
	cmdVersion
	cmdStats
)

// statGroups are the "stats" groups memcached_exporter v0.14 and v0.15 read (through
// github.com/grobie/gomemcache: Client.Stats sends "stats", "stats slabs" and "stats items",
// Client.StatsSettings "stats settings"). Groups that change memcached ("stats reset",
// "stats detail on") or show keys ("stats cachedump") are refused.
var statGroups = map[string]bool{"": true, "settings": true, "slabs": true, "items": true}

// parseCommand returns what line asks for and, for stats, the group.
func parseCommand(line string) (command, string) {
	f := strings.Split(line, " ")
	switch {
	case len(f) == 1 && f[0] == "quit":
		return cmdQuit, ""
	case len(f) == 1 && f[0] == "version":
		return cmdVersion, ""
	case len(f) == 1 && f[0] == "stats":
		return cmdStats, ""
	case len(f) == 2 && f[0] == "stats" && f[1] != "" && statGroups[f[1]]:
		return cmdStats, f[1]
	}
	return cmdRefused, ""
}

// errRefused is a client asking for something the proxy does not pass on.
var errRefused = errors.New("refused")

// translate answers client's text-protocol commands from up, an authenticated binary
// connection, until the client quits or sends a command the proxy refuses, stays idle
// longer than idle, or either side fails. Each command's exchange with memcached and the
// writing of its answer are bounded by timeout.
func (p *Proxy) translate(client, upConn net.Conn, timeout, idle time.Duration) {
	up := &binConn{w: upConn, r: bufio.NewReader(upConn)}
	r := bufio.NewReaderSize(client, maxCommandLine)
	for {
		_ = client.SetReadDeadline(time.Now().Add(idle))
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			p.refuse(client, timeout, "CLIENT_ERROR line too long", fmt.Sprintf("a line longer than %d bytes", maxCommandLine))
			return
		}
		if err != nil {
			// The client is done, or idle past the deadline: the exporter opens a new
			// connection every scrape and leaves the old one open.
			return
		}
		cmd, group := parseCommand(strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r"))
		var answer []byte
		_ = upConn.SetDeadline(time.Now().Add(timeout))
		switch cmd {
		case cmdQuit:
			return
		case cmdRefused:
			p.refuse(client, timeout, "CLIENT_ERROR the memcached auth proxy answers only stats and version", verb(line))
			return
		case cmdVersion:
			answer, err = version(up)
		case cmdStats:
			answer, err = stats(up, group)
		}
		if err != nil {
			p.log("Cannot answer the client from memcached", "upstream", p.Upstream, "command", strings.TrimSpace(string(line)), "error", err.Error())
			_ = client.SetWriteDeadline(time.Now().Add(timeout))
			_, _ = io.WriteString(client, "SERVER_ERROR the memcached auth proxy cannot answer from memcached\r\n")
			return
		}
		_ = client.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := client.Write(answer); err != nil {
			return
		}
	}
}

// refuse tells the client why it is closed, and logs what it asked for.
func (p *Proxy) refuse(client net.Conn, timeout time.Duration, answer, asked string) {
	p.log("Refused a client's command: in SASL mode the proxy only answers the exporter's stats and version", "command", asked)
	_ = client.SetWriteDeadline(time.Now().Add(timeout))
	_, _ = io.WriteString(client, answer+"\r\n")
}

// verb is the first word of a refused line, quoted and cut short: enough to tell what a client
// tried, without logging the keys or data it sent.
func verb(line []byte) string {
	v, _, _ := strings.Cut(strings.TrimRight(string(line), "\r\n"), " ")
	if len(v) > 16 {
		v = v[:16] + "…"
	}
	return fmt.Sprintf("%q", v)
}

// version answers "version": "VERSION <version>".
func version(up *binConn) ([]byte, error) {
	p, err := up.do(opVersion, "", "")
	if err != nil {
		return nil, err
	}
	if p.status != statusOK {
		return nil, fmt.Errorf("memcached answered VERSION with status %#x, %q", p.status, p.value)
	}
	if !printable(p.value) {
		return nil, fmt.Errorf("memcached's version %q is not one line of text", p.value)
	}
	return []byte("VERSION " + string(p.value) + "\r\n"), nil
}

// stats answers "stats <group>": memcached sends one response per statistic and an empty one
// at the end, which become the text protocol's "STAT <name> <value>" lines and "END".
func stats(up *binConn, group string) ([]byte, error) {
	if err := up.send(opStat, group, ""); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for {
		p, err := up.receive(opStat)
		if err != nil {
			return nil, err
		}
		if p.status != statusOK {
			return nil, fmt.Errorf("memcached answered STAT %q with status %#x, %q", group, p.status, p.value)
		}
		if len(p.key) == 0 {
			out.WriteString("END\r\n")
			return out.Bytes(), nil
		}
		if !printable(p.key) || bytes.IndexByte(p.key, ' ') >= 0 || !printable(p.value) {
			return nil, fmt.Errorf("memcached's statistic %q = %q is not one line of text", p.key, p.value)
		}
		if out.Len()+len(p.key)+len(p.value)+len("STAT  \r\nEND\r\n") > maxAnswer {
			return nil, fmt.Errorf("memcached's statistics %q are longer than the %d bytes the proxy answers", group, maxAnswer)
		}
		out.WriteString("STAT ")
		out.Write(p.key)
		out.WriteByte(' ')
		out.Write(p.value)
		out.WriteString("\r\n")
	}
}

// printable reports whether b can stand in a text-protocol line: no CR, LF or other control
// bytes that would end the line early or confuse the client.
func printable(b []byte) bool {
	for _, c := range b {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}
