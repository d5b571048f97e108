package readiness

import (
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// Severity is the type of the event a transition to a reason records.
type Severity string

// Severities of the events a transition records: a Kubernetes event's type, or none.
const (
	// Silent records no event: the reason is a step on the way (Creating, Progressing) that
	// the condition shows and nobody needs to be told about.
	Silent  Severity = ""
	Normal  Severity = "Normal"
	Warning Severity = "Warning"
)

// Meaning is what the Available condition says with one reason, and how a transition to it
// is announced. The composition function and the provider announce from the same table, so
// a claim and an Instance in the same state tell a person the same thing.
type Meaning struct {
	// Reason is the condition's reason.
	Reason string
	// Available is the condition's status with this reason.
	Available bool
	// Event is the type of the event a transition to this reason records.
	Event Severity
	// Prefix leads the event's message, before the condition's message.
	Prefix string
	// ByMessage is true for the reasons whose message says what to fix: a new message is a
	// new transition, announced again. For the others a new replica count is not.
	ByMessage bool
}

// Reasons are the reasons of the Available condition, in the order documentation lists
// them. Unreachable and Conflict are only an Instance's; a composition hands them on to its
// claim like the others.
var Reasons = []Meaning{
	{Reason: ReasonAvailable, Available: true, Event: Normal, Prefix: "Memcached is available: "},
	{Reason: ReasonCreating},
	{Reason: ReasonResizing, Event: Normal, Prefix: "Memcached is "},
	{Reason: ReasonProgressing},
	{Reason: ReasonStalled, Event: Warning, Prefix: "Memcached "},
	{Reason: ReasonDegraded, Event: Warning, Prefix: "Memcached is degraded: "},
	{Reason: ReasonInvalidSpec, Event: Warning, ByMessage: true},
	{Reason: v1alpha1.ReasonUnreachable, Event: Warning, Prefix: "cannot observe the Memcached: "},
	{Reason: v1alpha1.ReasonConflict, Event: Warning, ByMessage: true},
}

// MeaningOf returns the Meaning of reason. A reason outside the table (none the product
// sets, or an empty one) is silent.
func MeaningOf(reason string) Meaning {
	for _, m := range Reasons {
		if m.Reason == reason {
			return m
		}
	}
	return Meaning{Reason: reason}
}

// State is as much of an Available verdict as decides whether it is news: its reason, and
// its message for the reasons whose message says what to fix. An event is recorded when the
// State changes, never once per reconcile.
type State struct {
	Reason, Message string
}

// StateOf is the State of a verdict with reason and message.
func StateOf(reason, message string) State {
	if MeaningOf(reason).ByMessage {
		return State{Reason: reason, Message: message}
	}
	return State{Reason: reason}
}

// Announcement is the event a transition to c records: its type (Silent for none) and its
// message.
func Announcement(c Condition) (Severity, string) {
	m := MeaningOf(c.Reason)
	if m.Event == Silent {
		return Silent, ""
	}
	return m.Event, m.Prefix + c.Message
}
