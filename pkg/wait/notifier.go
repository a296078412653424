package wait

import "sync"

// Notifier wakes the goroutines waiting for news of a key. Take the
// channel (Watch) before reading the state it guards, so that no change in
// between is missed.
type Notifier struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
}

// NewNotifier returns a Notifier with no one waiting.
func NewNotifier() *Notifier { return &Notifier{chans: map[string]chan struct{}{}} }

// Watch returns a channel closed on the next wake of key.
func (n *Notifier) Watch(key string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch := n.chans[key]
	if ch == nil {
		ch = make(chan struct{})
		n.chans[key] = ch
	}
	return ch
}

// Forget drops key's channel, nobody waiting on it any more.
func (n *Notifier) Forget(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.chans, key)
}

// Wake wakes those waiting for key.
func (n *Notifier) Wake(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch := n.chans[key]; ch != nil {
		close(ch)
		delete(n.chans, key)
	}
}
