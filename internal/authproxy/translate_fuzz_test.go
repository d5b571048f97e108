package authproxy

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// FuzzTranslate: whatever a client on loopback sends and whatever memcached
// answers, translate neither panics nor hangs past its deadlines, and sends memcached nothing
// but STAT of an allowed group and VERSION.
func FuzzTranslate(f *testing.F) {
	f.Add([]byte("stats\r\nstats slabs\r\nversion\r\nquit\r\n"),
		append(binPacket(binResponse, opStat, 0, 1, "pid", "1"), binPacket(binResponse, opStat, 0, 1, "", "")...))
	f.Add([]byte("get foo\r\n"), []byte{})
	f.Add([]byte("stats\r\nset k 0 0 1\r\nx\r\n"), binPacket(binResponse, opStat, 0, 1, "", ""))
	f.Add([]byte("\x80\x01\x00\x03\n"), []byte{})
	f.Fuzz(func(t *testing.T, fromClient, fromMemcached []byte) {
		client, proxyClient := net.Pipe()
		proxyUp, up := net.Pipe()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ops []byte
		var bad []string
		wg.Add(3)
		go func() { // memcached: record each request, answer once with the fuzz bytes
			defer wg.Done()
			defer up.Close()
			_ = up.SetDeadline(time.Now().Add(2 * time.Second))
			answered := false
			for {
				var h [24]byte
				if _, err := io.ReadFull(up, h[:]); err != nil {
					return
				}
				body := make([]byte, binary.BigEndian.Uint32(h[8:]))
				if _, err := io.ReadFull(up, body); err != nil {
					return
				}
				key := string(body[h[4]:min(len(body), int(h[4])+int(binary.BigEndian.Uint16(h[2:])))])
				mu.Lock()
				ops = append(ops, h[1])
				if !(h[1] == opVersion || h[1] == opStat && statGroups[key]) {
					bad = append(bad, string(rune(h[1]))+" "+key)
				}
				mu.Unlock()
				if !answered {
					answered = true
					_, _ = up.Write(fromMemcached)
				}
			}
		}()
		go func() { // the client
			defer wg.Done()
			defer client.Close()
			_ = client.SetDeadline(time.Now().Add(2 * time.Second))
			go func() { _, _ = client.Write(fromClient) }()
			_, _ = io.Copy(io.Discard, client)
		}()
		done := make(chan struct{})
		go func() {
			defer wg.Done()
			defer close(done)
			p := &Proxy{}
			p.translate(proxyClient, proxyUp, 200*time.Millisecond, 200*time.Millisecond)
			_ = proxyClient.Close()
			_ = proxyUp.Close()
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("translate did not return within its deadlines")
		}
		wg.Wait()
		if len(bad) > 0 {
			t.Fatalf("the proxy sent memcached %q", bad)
		}
	})
}
