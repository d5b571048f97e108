// Package availability tells, in samples of a claim's Available condition read over time, a
// lapse (the function said the Memcached is not available) from Crossplane's echo of a
// condition the claim had before.
//
// The echo is Crossplane's (crossplane/crossplane#7062, in every release up to at least
// v2.4.2): its XR reconciler re-applies the XR's conditions as its informer cache last saw
// them, with the function's new status, and only then writes the conditions the function
// returned. Right after a transition, while the cache lags behind Crossplane's own writes,
// the XR (and a claim synced from it in that moment) shows the condition it had before for
// a second or two; each write can start the next reconcile on the same stale cache. An echo
// gives itself away: its lastTransitionTime is no newer than that of the Available=True
// the claim had when it was first read. docs/status.md says what a user sees of it.
package availability

import "time"

// MaxEcho is how long a run of echoes may last before it counts as a lapse: the run ends once
// Crossplane's cache has caught up with its own writes, within a second or two on a loaded
// two-core machine. Anything longer is what a user would be paged for.
const MaxEcho = 10 * time.Second

// A Sample is one read of a claim's Available condition.
type Sample struct {
	// Status is the condition's status: True, False or Unknown ("" when absent).
	Status string
	// Since is its lastTransitionTime.
	Since time.Time
	// At is when it was read.
	At time.Time
}

// A Tracker follows one claim's samples in the order they were read, from a first
// Available=True on: every sample after it must be Available or an echo. Its zero value has
// seen no Available=True yet, so every sample that is not True is a lapse.
type Tracker struct {
	// available is the lastTransitionTime of the first Available=True seen: a condition that
	// is not True and newer than that is a verdict made since, a lapse, even when it is
	// read only as an echo after the claim was Available again.
	available time.Time
	// echoing is when the current run of echoes was first read (zero outside one).
	echoing time.Time
	// Echoes counts the samples that were echoes.
	Echoes int
}

// Lapse records s and reports whether it is a lapse: not Available, and not an echo of a
// False condition older than the first Available=True that began less than MaxEcho before.
// A sample without a condition or its time is a lapse: nothing shows it is an echo. So is
// Unknown: Crossplane writes Unknown, reason FatalError, over the function's condition when
// a pipeline run fails, keeping the condition's lastTransitionTime, so its time tells a new
// failure from an old one no better than the status does.
func (t *Tracker) Lapse(s Sample) bool {
	if s.Status == "True" {
		if t.available.IsZero() {
			t.available = s.Since
		}
		t.echoing = time.Time{}
		return false
	}
	// lastTransitionTime has a resolution of one second: a condition as old as the first
	// Available=True may be the one it replaced in the same second, or a new verdict of that
	// second. A new verdict lasts, and is a lapse once it outlasts MaxEcho.
	if s.Status != "False" || t.available.IsZero() || s.Since.IsZero() || s.Since.After(t.available) {
		return true
	}
	t.Echoes++
	if t.echoing.IsZero() {
		t.echoing = s.At
	}
	return s.At.Sub(t.echoing) > MaxEcho
}
