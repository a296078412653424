package funcserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"minik8s/pkg/function"
)

// Sends delivered during the call (function.HeaderSends: stream): the
// answer streams each send as a line and the call waits for the caller's
// acknowledgement at function.SentPath, so that minik8s.send returns once
// the data is delivered, or raises saying why not.

// sendStream is the streamed answer of one call.
type sendStream struct {
	s       *server
	ctx     context.Context
	w       http.ResponseWriter
	enc     *json.Encoder
	token   string
	seq     int
	started bool
	acks    chan function.SendAck
}

func (s *server) newSendStream(ctx context.Context, w http.ResponseWriter) *sendStream {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	st := &sendStream{s: s, ctx: ctx, w: w, enc: json.NewEncoder(w), token: hex.EncodeToString(b), acks: make(chan function.SendAck, 1)}
	st.enc.SetEscapeHTML(false)
	s.acks.Store(st.token, st.acks)
	return st
}

func (st *sendStream) close() { st.s.acks.Delete(st.token) }

// send streams snd and waits, by deadline, for its acknowledgement: ""
// once delivered, else why not.
func (st *sendStream) send(snd function.Send, deadline time.Time) string {
	if !st.started {
		st.w.Header().Set("Content-Type", "application/x-ndjson")
		st.w.WriteHeader(http.StatusOK)
		st.started = true
	}
	seq := st.seq
	st.seq++
	if err := st.enc.Encode(function.SendLine{Send: snd, Call: st.token, Seq: seq}); err != nil {
		return "the caller went away: " + err.Error()
	}
	_ = http.NewResponseController(st.w).Flush()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case ack := <-st.acks:
			if ack.Seq != seq {
				continue // a late answer to an earlier send
			}
			return ack.Error
		case <-timer.C:
			return "the delivery was not confirmed within the call's timeout"
		case <-st.ctx.Done():
			return "the caller went away before the delivery was confirmed"
		}
	}
}

// finish answers resp: the stream's last line, or the whole answer when
// nothing was streamed.
func (st *sendStream) finish(resp Response) {
	if !st.started {
		writeJSON(st.w, http.StatusOK, resp)
		return
	}
	_ = st.enc.Encode(resp)
	_ = http.NewResponseController(st.w).Flush()
}

// handleSent takes a send's acknowledgement for the call it names.
func (s *server) handleSent(w http.ResponseWriter, r *http.Request) {
	var ack function.SendAck
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&ack); err != nil {
		writeJSON(w, http.StatusBadRequest, Response{Error: &Error{Type: ErrorBadRequest, Message: fmt.Sprintf("body: %v", err)}})
		return
	}
	v, ok := s.acks.Load(ack.Call)
	if !ok {
		writeJSON(w, http.StatusNotFound, Response{Error: &Error{Type: ErrorBadRequest, Message: "no call in progress has that token"}})
		return
	}
	select {
	case v.(chan function.SendAck) <- ack:
	default: // one is waiting already: a duplicate
	}
	w.WriteHeader(http.StatusNoContent)
}
