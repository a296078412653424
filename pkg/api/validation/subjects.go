package validation

import "strings"

// NATS subjects: dot-separated tokens, where a pattern's `*` stands for
// any one token and a last `>` for one or more. These are nats-server's
// own rules (a test holds them to its functions), written here so that
// what validates API objects does not bring in a NATS server.

// SubjectCovers says whether pattern p matches every subject s matches
// (p covers s): orders.> covers orders.* and orders.new, not orders.
func SubjectCovers(p, s string) bool {
	pt, st := strings.Split(p, "."), strings.Split(s, ".")
	for i, t := range st {
		if i >= len(pt) {
			return false
		}
		switch pt[i] {
		case ">":
			return true
		case "*":
			if t == ">" {
				return false
			}
		default:
			if t != pt[i] {
				return false
			}
		}
	}
	return len(pt) == len(st)
}

// SubjectsCollide says whether some subject matches both a and b.
func SubjectsCollide(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; ; i++ {
		aEnd, bEnd := i >= len(at), i >= len(bt)
		if aEnd || bEnd {
			return aEnd && bEnd
		}
		x, y := at[i], bt[i]
		if x == ">" || y == ">" {
			return true
		}
		if x != "*" && y != "*" && x != y {
			return false
		}
	}
}

// DeadLetterFor is where a message of subject goes once its calls failed:
// deadLetter, or, when it ends in `>`, that prefix followed by the
// message's own subject (deadletter.> sends orders.new's to
// deadletter.orders.new).
func DeadLetterFor(deadLetter, subject string) string {
	if prefix, ok := strings.CutSuffix(deadLetter, ">"); ok {
		return prefix + subject
	}
	return deadLetter
}
