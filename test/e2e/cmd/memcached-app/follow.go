package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// refresh is how often a following client asks DNS for the servers: every second, where
// dskit's memcached client defaults to 30 s (addresses_lookup_period), so that a test sees a
// resize in seconds; CoreDNS answers that rate easily.
const refresh = time.Second

// follow is the sharding client docs/api.md shows: gomemcache over a ServerList that a loop
// refreshes from the Secret's srv record, so the client spreads keys over every ready
// replica and follows a resize. For each count in counts it waits until DNS names that many
// servers, writes keys keys under "batch-<count>-", reads them back, and prints which server
// holds how many; the last line sums it up.
func follow(dir string, counts []int, keys int, timeout time.Duration) (string, error) {
	srv, list, c, err := shardingClient(dir, 5*time.Second)
	if err != nil {
		return "", err
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var summary []string
	for _, n := range counts {
		addrs, err := waitServers(ctx, list, srv, n)
		if err != nil {
			return "", err
		}
		spread, err := writeBatch(c, list, fmt.Sprintf("batch-%d-", n), keys)
		if err != nil {
			return "", err
		}
		line := fmt.Sprintf("batch %d: %d keys over %d servers %v", n, keys, len(addrs), spread)
		fmt.Println(line)
		summary = append(summary, fmt.Sprintf("%d servers, %d keys", n, keys))
	}
	return fmt.Sprintf("ok: followed %s: %s", srv, strings.Join(summary, "; ")), nil
}

// shardingClient is gomemcache over a ServerList, dialing as the Secret at dir says, with
// the Secret's srv to fill the list from.
func shardingClient(dir string, timeout time.Duration) (string, *memcache.ServerList, *memcache.Client, error) {
	srv := secret(dir, "srv")
	if srv == "" {
		return "", nil, nil, errors.Errorf("the connection Secret at %s has no srv", dir)
	}
	dial, err := dialer(dir)
	if err != nil {
		return "", nil, nil, err
	}
	list := &memcache.ServerList{}
	c := memcache.NewFromSelector(list)
	c.Timeout = timeout
	c.DialContext = dial
	return srv, list, c, nil
}

// waitServers refreshes list from srv's SRV records (each target's A record with the SRV's
// port) every refresh until it names n servers, and returns them sorted.
func waitServers(ctx context.Context, list *memcache.ServerList, srv string, n int) ([]string, error) {
	var r net.Resolver
	var last []string
	for {
		addrs, err := lookup(ctx, &r, srv)
		if err == nil && !slices.Equal(addrs, last) {
			if err := list.SetServers(addrs...); err != nil {
				return nil, errors.Wrapf(err, "cannot use the servers %v", addrs)
			}
			fmt.Printf("servers from %s: %v\n", srv, addrs)
			last = addrs
		}
		if len(last) == n {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.Errorf("DNS named %v for %s, never %d servers (last error: %v)", last, srv, n, err)
		case <-time.After(refresh):
		}
	}
}

// lookup resolves the SRV record srv to host:port addresses, sorted.
func lookup(ctx context.Context, r *net.Resolver, srv string) ([]string, error) {
	_, records, err := r.LookupSRV(ctx, "", "", srv)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range records {
		out = append(out, net.JoinHostPort(strings.TrimSuffix(s.Target, "."), strconv.Itoa(int(s.Port))))
	}
	slices.Sort(out)
	return out, nil
}

// writeBatch sets keys keys named prefix<i>, gets every one back, and returns how many the
// client's own hashing put on each server.
func writeBatch(c *memcache.Client, list *memcache.ServerList, prefix string, keys int) (map[string]int, error) {
	spread := map[string]int{}
	var names []string
	for i := range keys {
		key := prefix + strconv.Itoa(i)
		names = append(names, key)
		if err := c.Set(&memcache.Item{Key: key, Value: []byte(key)}); err != nil {
			return nil, errors.Wrapf(err, "cannot set %s", key)
		}
		addr, err := list.PickServer(key)
		if err != nil {
			return nil, errors.Wrapf(err, "no server for %s", key)
		}
		spread[addr.String()]++
	}
	got, err := c.GetMulti(names)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot get the keys %s*", prefix)
	}
	if len(got) != keys {
		return nil, errors.Errorf("got %d of the %d keys %s* back", len(got), keys, prefix)
	}
	return spread, nil
}

// counts parses the --follow flag: server counts, comma-separated.
func counts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, errors.Errorf("--follow: %q is not a server count", f)
		}
		out = append(out, n)
	}
	return out, nil
}
