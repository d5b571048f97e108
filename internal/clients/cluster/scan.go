package cluster

// What decoded JSON may cost, an upper bound for the provider's kinds whatever the JSON says.
// A JSON object decodes at most into a whole Go struct: 1,536 bytes covers the largest one the
// provider decodes (a Deployment is 1.2 KiB of structs however empty its JSON), and 512 bytes
// any struct nested in a slice (a Container is 408) — an object deeper than the second level
// (items[i] of a list, the object of a watch event) is one of those or a field of its parent.
// Any other value (a string, a number, a literal, an array) is at most a 16-byte header or
// element, doubled by a slice's growth: 32 bytes, plus twice its bytes. An answer of empty
// objects or values therefore costs what it decodes to, not what it weighs. Figures:
// docs/performance.md#what-a-target-cluster-can-make-the-provider-hold.
const (
	costShallowObject = 1536
	costDeepObject    = 512
	costValue         = 32
	costByte          = 2
)

// A scanner estimates what JSON decodes to as it reads it, a chunk at a time, value by
// top-level value (a list is one, a watch stream one per event). It does not validate: JSON
// client-go would refuse costs what its tokens would, which is enough to bound it.
type scanner struct {
	depth    int
	inString bool
	escaped  bool
	inScalar bool
	// cost is the estimate of the top-level value being read, total of all read so far.
	cost, total int64
	// items counts the objects opened at the second level: a list's items.
	items int
}

// scan reads p and calls done with the estimate of each top-level value it completes; the
// estimate of one it has begun is s.cost.
func (s *scanner) scan(p []byte, done func(cost int64)) {
	for _, c := range p {
		s.cost += costByte
		s.total += costByte
		if s.inString {
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '"':
				s.inString = false
				s.end(done)
			}
			continue
		}
		isScalar := c == '-' || c == '.' || c == '+' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if s.inScalar && !isScalar {
			s.inScalar = false
			s.end(done)
		}
		switch {
		case c == '"':
			s.inString = true
			s.add(costValue)
		case c == '{':
			if s.depth == 2 {
				s.items++
			}
			if s.depth <= 2 {
				s.add(costShallowObject)
			} else {
				s.add(costDeepObject)
			}
			s.depth++
		case c == '[':
			s.add(costValue)
			s.depth++
		case c == '}' || c == ']':
			if s.depth > 0 {
				s.depth--
			}
			s.end(done)
		case isScalar && !s.inScalar:
			s.inScalar = true
			s.add(costValue)
		}
	}
}

func (s *scanner) add(n int64) {
	s.cost += n
	s.total += n
}

// end completes a top-level value when the scanner is back at depth 0.
func (s *scanner) end(done func(cost int64)) {
	if s.depth == 0 && !s.inString && !s.inScalar {
		if done != nil {
			done(s.cost)
		}
		s.cost = 0
	}
}

// estimateJSON is what b, one JSON value, decodes to at most.
func estimateJSON(b []byte) int64 {
	var s scanner
	var total int64
	s.scan(b, func(c int64) { total += c })
	return total + s.cost
}
