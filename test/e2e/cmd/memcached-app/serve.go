package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// tallyPrefix starts the line a serving client prints every second with its tally so far.
const tallyPrefix = "tally: "

// serveEvery is how often a serving client sets and gets a key: ten requests a second, each
// a set then a get of the same key, enough to meet every moment of a rollout.
const serveEvery = 100 * time.Millisecond

// tally counts what a serving client met, by what a user of the cache would notice. moved
// are gets that missed because the server list changed between the set and the get, so that
// the key was looked for on another replica: what every sharding client meets at a change of
// its servers, like a key set before it, and no failure of the rollout.
type tally struct {
	requests, refused, timeouts, misses, other int
	moved, servers                             int
}

func (t tally) failed() int { return t.refused + t.timeouts + t.misses + t.other }

func (t tally) String() string {
	return fmt.Sprintf("%d requests, %d failed (%d refused, %d timed out, %d missed, %d other), %d moved by a server list change, %d server lists",
		t.requests, t.failed(), t.refused, t.timeouts, t.misses, t.other, t.moved, t.servers)
}

// serve is an application in steady use during a rollout: the sharding client of follow,
// refreshing its ServerList from the Secret's srv every second in the background, sets a key
// and gets it back every serveEvery for d, and counts what went wrong: connections refused
// (a replica that stopped accepting while still listed), timeouts, a get that missed the
// value just set, and any other error. It prints each failure as it happens, its tally every
// second (tallyPrefix) and a summary at the end, and fails when any request failed.
func serve(dir string, d time.Duration) (string, error) {
	srv, list, c, err := shardingClient(dir, time.Second)
	if err != nil {
		return "", err
	}

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var t tally
	changes := make(chan []string, 16)
	go refreshServers(ctx, list, srv, changes)
	select {
	case <-ctx.Done():
		return "", errors.Errorf("DNS named no servers for %s in %s", srv, d)
	case addrs := <-changes:
		fmt.Printf("servers from %s: %v\n", srv, addrs)
	}
	fmt.Printf("serving: a set and a get every %s for %s\n", serveEvery, d)
	tick := time.NewTicker(serveEvery)
	defer tick.Stop()
	report := time.NewTicker(time.Second)
	defer report.Stop()
	for i := 0; ; i++ {
		select {
		case <-report.C:
			// What it met so far, for a reader who need not wait for the end.
			fmt.Printf("%s%s\n", tallyPrefix, t)
		case <-ctx.Done():
			msg := fmt.Sprintf("served %s for %s: %s", srv, d, t)
			if t.failed() > 0 {
				return "", errors.New(msg)
			}
			return "ok: " + msg, nil
		case addrs := <-changes:
			t.servers++
			fmt.Printf("servers from %s: %v\n", srv, addrs)
		case <-tick.C:
			t.requests++
			if err := setGet(c, list, "serve-"+strconv.Itoa(i%1000)); err != nil {
				t.count(err)
				fmt.Printf("request %d: %v\n", t.requests, err)
			}
		}
	}
}

// refreshServers is waitServers' loop without an end: it keeps list at what srv names and
// sends each new list on changes.
func refreshServers(ctx context.Context, list *memcache.ServerList, srv string, changes chan<- []string) {
	var r net.Resolver
	var last []string
	for {
		if addrs, err := lookup(ctx, &r, srv); err == nil && len(addrs) > 0 && !slices.Equal(addrs, last) {
			if list.SetServers(addrs...) == nil {
				last = addrs
				changes <- addrs
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(refresh):
		}
	}
}

// errMissed is a get that did not return the value just set; errMoved one that missed it
// because the key's server changed between the set and the get.
var (
	errMissed = errors.New("missed the value just set")
	errMoved  = errors.New("missed the value just set: the server list changed between the set and the get")
)

// setGet sets key and gets it back through c, whose servers list holds.
func setGet(c *memcache.Client, list *memcache.ServerList, key string) error {
	value := []byte(time.Now().UTC().Format(time.RFC3339Nano))
	before, _ := list.PickServer(key)
	if err := c.Set(&memcache.Item{Key: key, Value: value}); err != nil {
		return errors.Wrapf(err, "set %s", key)
	}
	it, err := c.Get(key)
	if errors.Is(err, memcache.ErrCacheMiss) || (err == nil && string(it.Value) != string(value)) {
		if after, _ := list.PickServer(key); before == nil || after == nil || before.String() != after.String() {
			return errors.Wrapf(errMoved, "get %s", key)
		}
		return errors.Wrapf(errMissed, "get %s", key)
	}
	return errors.Wrapf(err, "get %s", key)
}

// count files err under what a user would call it.
func (t *tally) count(err error) {
	var ne net.Error
	switch {
	case errors.Is(err, errMoved):
		t.moved++
	case errors.Is(err, syscall.ECONNREFUSED):
		t.refused++
	case errors.Is(err, errMissed):
		t.misses++
	case errors.As(err, &ne) && ne.Timeout(), strings.Contains(err.Error(), "timeout"):
		t.timeouts++
	default:
		t.other++
	}
}
