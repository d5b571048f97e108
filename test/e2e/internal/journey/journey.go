// Package journey follows each claim of a scale run through the controllers it passes on its
// way to Available, from the timestamps its objects keep: the XR's and the Deployment's
// creation, the pod's creation and its PodScheduled and Ready transitions, the Deployment's and
// the XR's Available transitions. A scale run then says in which hop its claims waited, not only how long they
// waited in all, and its stage times can be read back second by second to explain a lull.
//
// The API server keeps timestamps in whole seconds: each is read as the middle of its second,
// so a hop between two such stages is right to within a second.
package journey

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A Stage is a point on a claim's way to Available, in the order a claim passes them.
type Stage int

// The stages, each named by the controller that brings a claim to it.
const (
	// Created: the scenario's create returned.
	Created Stage = iota
	// XRCreated: Crossplane's claim controller created the XR (a namespaced XR is its own).
	XRCreated
	// DeploymentCreated: the XR controller's first call of the function was applied.
	DeploymentCreated
	// PodCreated: the Deployment and ReplicaSet controllers made the pod.
	PodCreated
	// PodScheduled: the scheduler bound it.
	PodScheduled
	// PodReady: the kubelet (kwok) reported it Ready.
	PodReady
	// DeploymentAvailable: the ReplicaSet and Deployment controllers counted it available,
	// once it had been Ready for the Deployment's minReadySeconds.
	DeploymentAvailable
	// XRAvailable: the XR controller called the function again and it said Available.
	XRAvailable
	// Available: the scenario's watch saw the claim Available (for a claim, after the claim
	// controller copied the XR's condition).
	Available
	numStages
)

var stageNames = [numStages]string{"created", "XR created", "Deployment created", "pod created",
	"pod scheduled", "pod Ready", "Deployment available", "XR Available", "Available"}

// String names the stage as the scenario's log and the CSV's header do.
func (s Stage) String() string { return stageNames[s] }

// Unknown marks a stage a claim was not seen to reach.
const Unknown time.Duration = -1

// Claim is when one claim reached each stage, after the run's first create.
type Claim struct {
	Name string
	At   [numStages]time.Duration
}

// NewClaim is a claim created and first seen Available at the given times, its other stages
// Unknown until Observe fills them.
func NewClaim(name string, created, available time.Duration) Claim {
	c := Claim{Name: name}
	for i := range c.At {
		c.At[i] = Unknown
	}
	c.At[Created], c.At[Available] = created, available
	return c
}

// Observe fills the stages the claim's objects record, each as the middle of its second after
// start. Any of them may be nil: the stages it records stay Unknown. pod is the claim's first.
func (c *Claim) Observe(start time.Time, xr *unstructured.Unstructured, d *appsv1.Deployment, pod *corev1.Pod) {
	since := func(t metav1.Time) time.Duration {
		if t.IsZero() {
			return Unknown
		}
		return t.Add(500 * time.Millisecond).Sub(start)
	}
	if xr != nil {
		c.At[XRCreated] = since(xr.GetCreationTimestamp())
		c.At[XRAvailable] = since(availableSince(xr))
	}
	if d != nil {
		c.At[DeploymentCreated] = since(d.CreationTimestamp)
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
				c.At[DeploymentAvailable] = since(cond.LastTransitionTime)
			}
		}
	}
	if pod == nil {
		return
	}
	c.At[PodCreated] = since(pod.CreationTimestamp)
	for _, cond := range pod.Status.Conditions {
		switch {
		case cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue:
			c.At[PodScheduled] = since(cond.LastTransitionTime)
		case cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue:
			c.At[PodReady] = since(cond.LastTransitionTime)
		}
	}
}

// availableSince is when the XR's Available condition last became True, zero if it is not.
func availableSince(xr *unstructured.Unstructured) metav1.Time {
	conds, _, _ := unstructured.NestedSlice(xr.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Available" || m["status"] != "True" {
			continue
		}
		var t metav1.Time
		if s, ok := m["lastTransitionTime"].(string); ok && t.UnmarshalQueryParameter(s) == nil {
			return t
		}
	}
	return metav1.Time{}
}

// A Hop is the wait between two consecutive stages, over the claims seen to reach both.
type Hop struct {
	From, To    Stage
	Median, P90 time.Duration
	Claims      int
}

// String is the hop as the scenario logs it.
func (h Hop) String() string {
	return fmt.Sprintf("%s → %s: median %.1fs, 90th percentile %.1fs (%d)", h.From, h.To, h.Median.Seconds(), h.P90.Seconds(), h.Claims)
}

// Hops are the waits between each stage and the next one the claims were seen to reach: a
// stage no claim reached (a namespaced XR's XRCreated when it is not read) is passed over.
func Hops(claims []Claim) []Hop {
	var seen []Stage
	for s := range numStages {
		if slices.ContainsFunc(claims, func(c Claim) bool { return c.At[s] != Unknown }) {
			seen = append(seen, s)
		}
	}
	var hops []Hop
	for i := 1; i < len(seen); i++ {
		from, to := seen[i-1], seen[i]
		var waits []time.Duration
		for _, c := range claims {
			if c.At[from] != Unknown && c.At[to] != Unknown {
				waits = append(waits, c.At[to]-c.At[from])
			}
		}
		if len(waits) == 0 {
			continue
		}
		slices.Sort(waits)
		hops = append(hops, Hop{From: from, To: to, Median: waits[len(waits)/2], P90: waits[len(waits)*9/10], Claims: len(waits)})
	}
	return hops
}

// CSV is each claim's stage times in seconds (empty when Unknown), one claim a line in the
// order they became Available, under a header naming the stages.
func CSV(claims []Claim) string {
	sorted := slices.Clone(claims)
	slices.SortStableFunc(sorted, func(a, b Claim) int { return cmp.Compare(a.At[Available], b.At[Available]) })
	var b strings.Builder
	b.WriteString("claim")
	for s := range numStages {
		b.WriteString("," + strings.ReplaceAll(strings.ToLower(s.String()), " ", "_") + "_s")
	}
	b.WriteString("\n")
	for _, c := range sorted {
		b.WriteString(c.Name)
		for _, at := range c.At {
			b.WriteString(",")
			if at != Unknown {
				fmt.Fprintf(&b, "%.1f", at.Seconds())
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
