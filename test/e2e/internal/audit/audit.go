// Package audit reads the API server's audit log (JSON, one event a line) into request
// counts by client, verb and resource: who makes the API server work during a scenario. The
// API server's own metrics count requests by verb and resource but not by client; its audit
// events carry the client's user agent.
package audit

import (
	"bufio"
	"encoding/json"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Row is how many requests one client sent with one verb to one resource.
type Row struct {
	// Client is the user agent's product, the part before the first "/": crossplane,
	// kube-controller-manager, kwok, e2e.test (the suite itself).
	Client string
	// Verb is the request's verb: get, list, watch, create, update, patch, delete.
	Verb string
	// Resource is the resource, with its subresource after a "/" (deployments/status), and
	// its API group after a "." when it has one (xmemcacheds.cache.example.com).
	Resource string
	Requests int
}

// event is the part of an audit.k8s.io/v1 Event that Count reads.
type event struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// Count counts the requests received in [from, to) that r's events record, largest first.
// Requests without an object (discovery, /healthz) count under the resource "-".
func Count(r io.Reader, from, to time.Time) ([]Row, error) {
	type key struct{ client, verb, resource string }
	counts := map[key]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for line := 1; sc.Scan(); line++ {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, errors.Wrapf(err, "cannot parse audit event on line %d", line)
		}
		if e.RequestReceived.Before(from) || !e.RequestReceived.Before(to) {
			continue
		}
		k := key{client: client(e.UserAgent), verb: e.Verb, resource: "-"}
		if o := e.ObjectRef; o != nil && o.Resource != "" {
			k.resource = o.Resource
			if o.Subresource != "" {
				k.resource += "/" + o.Subresource
			}
			if o.APIGroup != "" {
				k.resource += "." + o.APIGroup
			}
		}
		counts[k]++
	}
	if err := sc.Err(); err != nil {
		return nil, errors.Wrap(err, "cannot read the audit log")
	}
	rows := make([]Row, 0, len(counts))
	for k, n := range counts {
		rows = append(rows, Row{Client: k.client, Verb: k.verb, Resource: k.resource, Requests: n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Requests != rows[j].Requests {
			return rows[i].Requests > rows[j].Requests
		}
		return rows[i].Client+rows[i].Verb+rows[i].Resource < rows[j].Client+rows[j].Verb+rows[j].Resource
	})
	return rows, nil
}

// client is a user agent's product name: "crossplane/v2.4.0 (linux/amd64) …" is crossplane.
func client(userAgent string) string {
	p, _, _ := strings.Cut(userAgent, "/")
	if p == "" {
		return "-"
	}
	return p
}

// Writes is the subset of rows that change something: create, update, patch, delete and
// deletecollection.
func Writes(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		switch r.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
			out = append(out, r)
		}
	}
	return out
}

// Total is the number of requests rows count.
func Total(rows []Row) int {
	n := 0
	for _, r := range rows {
		n += r.Requests
	}
	return n
}
