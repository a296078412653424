// Package funcapi is the apiserver's side of the function API of the
// reference design, below HTTP: it stores calls and hands them over,
// nothing on the data path. An asynchronous call is a FuncInstance stored
// before the 202 (Start), which a runner claims; a synchronous one is
// handed to a live runner found in its Leases (RunSync), its record
// batched by call.Records after the caller has the answer; a step call
// moves a stored call's cursor (Step); a gateway's records are checked
// whole and batched the same way (AcceptRecords). It bounds what waits:
// the backlog of asynchronous calls and the bytes of their arguments.
//
// The rules of a call record are pkg/function/call's; this package
// applies them through the registry (apiserver/registry). The HTTP
// routes that parse the function API's paths, authorize and answer stay
// with the HTTP front (the parent package), which calls this one.
package funcapi
