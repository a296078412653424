package mkctl

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// waitIndicator shows on stderr that mkctl is waiting for a call: on a
// terminal a spinner with the elapsed seconds, redrawn in place and erased
// at the end; elsewhere (pipes, logs, tests) a single line, so nothing
// fills up with frames.
type waitIndicator struct {
	w        io.Writer
	tty      bool
	start    time.Time
	interval time.Duration

	mu    sync.Mutex
	label string
	frame int
	stop  chan struct{}
	done  chan struct{}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// newWaitIndicator makes an indicator counting the seconds since start.
func newWaitIndicator(w io.Writer, start time.Time) *waitIndicator {
	return &waitIndicator{w: w, tty: isTerminal(w), start: start, interval: 100 * time.Millisecond}
}

// isTerminal reports whether w is a terminal, where redrawing a line works.
func isTerminal(w io.Writer) bool {
	return os.Getenv("TERM") != "dumb" && isTTY(w)
}

// isTTY reports whether v (a reader or a writer) is a terminal: a file
// on a character device that answers a terminal's ioctl, which /dev/null
// (cron's, nohup's and CI's stdin) does not.
func isTTY(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Start shows the indicator with label.
func (i *waitIndicator) Start(label string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stop != nil {
		return
	}
	i.label = label
	i.stop, i.done = make(chan struct{}), make(chan struct{})
	if !i.tty {
		fmt.Fprintf(i.w, "%s %s...\n", label, i.elapsed(time.Now()))
		close(i.done)
		return
	}
	i.draw(time.Now())
	go i.animate()
}

// SetLabel changes what the indicator says; only a terminal shows changes.
func (i *waitIndicator) SetLabel(label string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.label = label
}

// Stop ends the indicator, erasing it from a terminal. It is safe to call
// more than once, or without Start.
func (i *waitIndicator) Stop() {
	i.mu.Lock()
	if i.stop == nil {
		i.mu.Unlock()
		return
	}
	select {
	case <-i.stop:
	default:
		close(i.stop)
	}
	i.mu.Unlock()
	<-i.done
	if i.tty {
		i.mu.Lock()
		fmt.Fprint(i.w, "\r\x1b[K")
		i.mu.Unlock()
	}
}

func (i *waitIndicator) animate() {
	defer close(i.done)
	t := time.NewTicker(i.interval)
	defer t.Stop()
	for {
		select {
		case <-i.stop:
			return
		case now := <-t.C:
			i.mu.Lock()
			i.draw(now)
			i.mu.Unlock()
		}
	}
}

// draw writes one frame over the last; the caller holds mu.
func (i *waitIndicator) draw(now time.Time) {
	fmt.Fprintf(i.w, "\r%s %s %s…\x1b[K", spinnerFrames[i.frame%len(spinnerFrames)], i.label, i.elapsed(now))
	i.frame++
}

func (i *waitIndicator) elapsed(now time.Time) string {
	return fmt.Sprintf("%ds", int(now.Sub(i.start).Seconds()))
}

// waitLabeler says what a waiting call waits for: the function its chain
// is at and whether a pod of it is ready; if none is, it is a cold start.
type waitLabeler struct {
	o  *Options
	fn string

	steps   int
	checked time.Time
	text    string
	funcs   map[string]*api.Func
}

// recheckEvery bounds how stale the cold-start state of a label gets.
const recheckEvery = 2 * time.Second

func (w *waitLabeler) label(ctx context.Context, v api.FuncInstanceView) string {
	if w.text != "" && len(v.Steps) == w.steps && time.Since(w.checked) < recheckEvery {
		return w.text
	}
	w.steps, w.checked = len(v.Steps), time.Now()
	cur := w.current(ctx, v)
	text := "waiting for " + cur
	switch f := w.get(ctx, cur); {
	case cur == api.FuncReturn:
		text = "storing the result of " + w.fn
	case f == nil:
	case f.APIVersion == api.FuncAPIVersionV1:
		text = "waiting for a fresh pod of " + cur
	case !w.hasReadyPod(ctx, f):
		text = "waiting for a pod of " + cur + " (cold start)"
	}
	if len(v.Steps) > 0 {
		text += fmt.Sprintf(", step %d", len(v.Steps)+1)
	}
	w.text = text
	return text
}

// current is the function the chain runs now: the first, or where the
// last finished step sent it.
func (w *waitLabeler) current(ctx context.Context, v api.FuncInstanceView) string {
	if len(v.Steps) == 0 {
		return w.fn
	}
	last := v.Steps[len(v.Steps)-1]
	f := w.get(ctx, last.Function)
	if f == nil {
		return last.Function
	}
	next := f.Spec.Left
	if last.Check != nil && !*last.Check {
		next = f.Spec.Right
	}
	if next == "" {
		next = api.FuncReturn
	}
	return next
}

func (w *waitLabeler) get(ctx context.Context, name string) *api.Func {
	if name == api.FuncReturn {
		return nil
	}
	if f, ok := w.funcs[name]; ok {
		return f
	}
	if w.funcs == nil {
		w.funcs = map[string]*api.Func{}
	}
	f, err := w.o.Client().Funcs(w.o.Namespace).Get(ctx, name)
	if err != nil {
		f = nil
	}
	w.funcs[name] = f
	return f
}

func (w *waitLabeler) hasReadyPod(ctx context.Context, f *api.Func) bool {
	ep, err := w.o.Client().Endpoints(f.Namespace).Get(ctx, function.ObjectName(f.Name))
	if err != nil {
		return false
	}
	for _, s := range ep.Subsets {
		if len(s.Addresses) > 0 {
			return true
		}
	}
	return false
}
