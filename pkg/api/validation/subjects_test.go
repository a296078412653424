package validation

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// The helpers say what nats-server says.
func TestSubjectsAsNATS(t *testing.T) {
	subjects := []string{"orders", "orders.new", "orders.old", "orders.*", "orders.>", "*.new", "*", ">", "orders.new.eu",
		"orders.*.eu", "*.*", "a.b.c", "a.>", "*.b.>", "orders.*.>"}
	for _, a := range subjects {
		for _, b := range subjects {
			if got, want := SubjectCovers(a, b), server.SubjectMatchesFilter(b, a); got != want {
				t.Errorf("SubjectCovers(%q, %q) = %v, nats-server says %v", a, b, got, want)
			}
			if got, want := SubjectsCollide(a, b), server.SubjectsCollide(a, b); got != want {
				t.Errorf("SubjectsCollide(%q, %q) = %v, nats-server says %v", a, b, got, want)
			}
		}
	}
}

func TestDeadLetterFor(t *testing.T) {
	for _, tc := range []struct{ dl, subject, want string }{
		{"deadletter.orders.new", "orders.new", "deadletter.orders.new"},
		{"deadletter.>", "orders.new", "deadletter.orders.new"},
		{"failed.>", "a.b.c", "failed.a.b.c"},
	} {
		if got := DeadLetterFor(tc.dl, tc.subject); got != tc.want {
			t.Errorf("DeadLetterFor(%q, %q) = %q, want %q", tc.dl, tc.subject, got, tc.want)
		}
	}
}
