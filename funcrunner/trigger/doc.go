// Package trigger is the function runner's room for triggers: the HTTP
// gateway, queue consumers (NATS JetStream) and schedules. A trigger turns
// an outside event into a call: a synchronous one through the runner's
// "make a call" (the gateway), or an asynchronous one stored through the
// apiserver client, claimed by this runner (queues, schedules). It knows
// nothing else of the runner: call records follow pkg/function/call.
package trigger
