package funcrunner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// maxStreamedSendBytes bounds what one call's streamed sends may carry in
// all; a send past it is refused (the function's send raises).
const maxStreamedSendBytes = 8 << 20

// readStream reads a streamed answer (function.SendLine lines, then the
// Result): each send is delivered as it comes, and acknowledged to the
// pod, whose call waits on it.
func readStream(ctx context.Context, hc *http.Client, ip string, port int32, body io.Reader, send func(int, function.Send) api.FuncSendRecord) (*function.Result, error) {
	dec := json.NewDecoder(io.LimitReader(body, maxAnswerBytes+6*maxStreamedSendBytes+64<<10))
	sent := 0
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("reading the answer of the pod at %s: %w: %v", ip, errPodLost, err)
		}
		var line function.SendLine
		if err := json.Unmarshal(raw, &line); err != nil || line.Call == "" {
			var res function.Result
			if err := json.Unmarshal(raw, &res); err != nil {
				return nil, fmt.Errorf("the pod at %s answered something that is not a result: %v", ip, err)
			}
			return &res, nil
		}
		ack := function.SendAck{Call: line.Call, Seq: line.Seq}
		if sent += len(line.Send.Data); sent > maxStreamedSendBytes {
			ack.Error = fmt.Sprintf("a call sends at most %d bytes in all", maxStreamedSendBytes)
		} else if rec := send(line.Seq, line.Send); rec.Error != "" {
			ack.Error = rec.Error
		}
		if err := postAck(ctx, hc, ip, port, ack); err != nil {
			return nil, fmt.Errorf("acknowledging a send to the pod at %s: %w: %v", ip, errPodLost, err)
		}
	}
}

func postAck(ctx context.Context, hc *http.Client, ip string, port int32, ack function.SendAck) error {
	b, err := json.Marshal(ack)
	if err != nil {
		return err
	}
	url := "http://" + net.JoinHostPort(ip, strconv.Itoa(int(port))) + function.SentPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("the pod answered %s", resp.Status)
	}
	return nil
}
