package funcrunner

import (
	"sync"
	"time"

	"minik8s/pkg/function"
)

// demand counts the steps this runner runs per function ("ns/name"), for
// the demand report on its Lease that the function controller scales by.
type demand struct {
	mu    sync.Mutex
	funcs map[string]*function.FuncDemand
	// urgentCh tells the runner to report at once: a function has a step
	// waiting for a pod while it had none, so its pool must grow now.
	urgentCh chan struct{}
}

func newDemand() *demand {
	return &demand{funcs: map[string]*function.FuncDemand{}, urgentCh: make(chan struct{}, 1)}
}

func (d *demand) entryLocked(fn string) *function.FuncDemand {
	e := d.funcs[fn]
	if e == nil {
		e = &function.FuncDemand{}
		d.funcs[fn] = e
	}
	return e
}

// start counts a step of fn that begins; done must follow.
func (d *demand) start(fn string) {
	now := time.Now().UTC()
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entryLocked(fn)
	e.Started++
	e.InFlight++
	e.Peak = max(e.Peak, e.InFlight)
	e.LastCall = &now
}

// done counts the end of a step start counted.
func (d *demand) done(fn string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.funcs[fn]; e != nil && e.InFlight > 0 {
		e.InFlight--
	}
}

// wait counts a step of fn that waits for a pod (or a free slot on one);
// unwait must follow.
func (d *demand) wait(fn string) {
	d.mu.Lock()
	e := d.entryLocked(fn)
	e.Waiting++
	first := e.Waiting == 1
	d.mu.Unlock()
	if first {
		select {
		case d.urgentCh <- struct{}{}:
		default:
		}
	}
}

// unwait counts the end of a wait.
func (d *demand) unwait(fn string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.funcs[fn]; e != nil && e.Waiting > 0 {
		e.Waiting--
	}
}

// recount starts the counts of started steps anew (steps in flight and
// waiting stay): a Lease taken anew is a new incarnation of this runner
// to the controller, which counts its Started in full.
func (d *demand) recount() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.funcs {
		e.Started = 0
	}
}

// snapshot returns the current numbers and starts a new Peak period: each
// Peak is reset to the steps in flight now.
func (d *demand) snapshot() function.Demand {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := function.Demand{Functions: make(map[string]function.FuncDemand, len(d.funcs))}
	for fn, e := range d.funcs {
		v := *e
		if e.LastCall != nil {
			t := *e.LastCall
			v.LastCall = &t
		}
		out.Functions[fn] = v
		e.Peak = e.InFlight
	}
	return out
}

// urgent receives when a function gets a waiting step while it had none.
func (d *demand) urgent() <-chan struct{} { return d.urgentCh }
