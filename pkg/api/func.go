package api

import "time"

// Func is a function template (seed 004). apiVersion "v2" (the default) is
// served by a warm ReplicaSet pool; "v1" runs every call step in a fresh pod.
type Func struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       FuncSpec   `json:"spec,omitempty"`
	Status     FuncStatus `json:"status,omitempty"`
}

// FuncSpec carries the seed's fields with the reference JSON names.
type FuncSpec struct {
	// Name must equal metadata.name (the reference design sends both); the
	// minik8s.io/v1 view leaves it out.
	Name string `json:"name,omitempty"`
	// Mode is how calls are served, in the minik8s.io/v1 view only: pool
	// (the default: a warm ReplicaSet pool, the reference apiVersion v2) or
	// fresh (a fresh pod per call step, v1). The reference form says it
	// with its apiVersion and leaves Mode out.
	Mode string `json:"mode,omitempty"`
	// ServiceAddress is the cluster IP of the function's Service; empty
	// means allocate one.
	ServiceAddress string `json:"serviceAddress,omitempty"`
	// PreRun is base64 of a shell script run once when a pod starts (plain
	// text in the minik8s.io/v1 view, as Function and Files are).
	PreRun string `json:"preRun,omitempty"`
	// Function is base64 of Python source defining run(arg) and maybe check(ret).
	Function string `json:"function"`
	// Left is called with run's result when check(ret) is true or absent;
	// Right otherwise. "RETURN" ends the chain.
	Left  string `json:"left,omitempty"`
	Right string `json:"right,omitempty"`

	InitInstanceNum *int `json:"initInstanceNum,omitempty"`
	MaxInstanceNum  *int `json:"maxInstanceNum,omitempty"`
	MinInstanceNum  *int `json:"minInstanceNum,omitempty"`

	// TimeoutSeconds bounds one call of run (default 60).
	TimeoutSeconds *int `json:"timeoutSeconds,omitempty"`
	// Runtime names the image function pods run (default minik8s/python-runtime:latest).
	Runtime string `json:"runtime,omitempty"`
	// Plugins run around every call of a Python function, in the order
	// declared (seed 000): built-ins (tracing, metrics, log-context) or
	// modules of Files defining pre(ctx) and post(ctx).
	Plugins *FuncPlugins `json:"plugins,omitempty"`
	// Files are more files of a Python function beside function.py (its
	// modules, user plugins among them): name → base64 of the contents.
	Files map[string]string `json:"files,omitempty"`
	// Image, instead of Python source in Function, names an image whose
	// own entrypoint serves the runtime's HTTP contract (pkg/function) on
	// $PORT: a function in any language.
	Image string `json:"image,omitempty"`
	// ContainerConcurrency is the most calls one pod serves at once (default:
	// the runtime's worker count). Runners never send a pod more; N calls in
	// flight ask for ceil(N / containerConcurrency) pods, up to the maximum.
	ContainerConcurrency *int `json:"containerConcurrency,omitempty"`
	// Resources are the requests and limits (cpu, memory) of the
	// function's container: the scheduler places its pods by them, the
	// kubelet enforces them, and a call reads the memory limit as
	// context["memory-limit"].
	Resources *ResourceRequirements `json:"resources,omitempty"`
	// IdleTimeoutSeconds is how long without a call makes the function
	// idle, its pods then removed down to its minimum (default: the
	// controller's idle window, 60 s).
	IdleTimeoutSeconds *int `json:"idleTimeoutSeconds,omitempty"`
	// Config is the function's own configuration, which its calls read as
	// context["config"]: an app's and a trigger's config go over it.
	Config map[string]string `json:"config,omitempty"`
	// Outputs are where a call may send data besides its result (seed
	// 000's output bindings): `minik8s.send(NAME, data)` in the function.
	Outputs []FuncOutput `json:"outputs,omitempty"`
	// Traffic splits the function's calls between its revisions (those
	// that do not name one); empty sends them all to the latest.
	Traffic []FuncTrafficTarget `json:"traffic,omitempty"`
}

// FuncTrafficTarget is the share of a function's calls one revision gets.
type FuncTrafficTarget struct {
	// Revision is a revision's number; Latest, in its place, follows the
	// newest (the one the spec is now).
	Revision int64 `json:"revision,omitempty"`
	Latest   bool  `json:"latest,omitempty"`
	// Percent is the share, 0-100; the targets' shares add up to 100.
	Percent int `json:"percent"`
}

// FuncRevision is one immutable version of a function's code and config,
// numbered from 1: the function controller makes one for every change of
// them. Calls name one as NAME@N; spec.traffic splits calls between them.
type FuncRevision struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       FuncRevisionSpec   `json:"spec,omitempty"`
	Status     FuncRevisionStatus `json:"status,omitempty"`
}

// FuncRevisionSpec never changes once made.
type FuncRevisionSpec struct {
	// Function is the name of the function it is a revision of.
	Function string `json:"function"`
	// Revision is its number, from 1.
	Revision int64 `json:"revision"`
	// Template is the function's spec at that revision: its code and
	// config (the pool's bounds, address and traffic are the function's).
	Template FuncSpec `json:"template"`
}

// FuncRevisionStatus is the revision's own pool, when it serves calls
// while not the latest: the function controller is its one writer.
type FuncRevisionStatus struct {
	ReplicaSetUID string     `json:"replicaSetId,omitempty"`
	Counter       int        `json:"counter,omitempty"`
	TimeStamp     *time.Time `json:"timeStamp,omitempty"`
}

type FuncRevisionList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []FuncRevision `json:"items"`
}

// FuncOutput is one output of a function: a name and exactly one target.
type FuncOutput struct {
	Name string `json:"name"`
	// Function is called asynchronously with the data, as a child of the
	// sending call (its spec.parent); a function of the same namespace.
	Function string `json:"function,omitempty"`
	// Subject is a NATS subject the data is published on.
	Subject string `json:"subject,omitempty"`
	// URL receives the data in a POST, under the rules of callbacks.
	URL string `json:"url,omitempty"`
}

// FuncPlugins names the plugins of a function's calls.
type FuncPlugins struct {
	Pre  []string `json:"pre,omitempty"`
	Post []string `json:"post,omitempty"`
}

// FuncStatus is written by the system, never by the user.
type FuncStatus struct {
	ServiceUID    string     `json:"serviceId,omitempty"`
	ReplicaSetUID string     `json:"replicaSetId,omitempty"`
	Counter       int        `json:"counter,omitempty"`
	TimeStamp     *time.Time `json:"timeStamp,omitempty"`
	// Revision is the number of the revision the spec is now (the
	// latest); RevisionsMade how many were ever made, so the next is one
	// more.
	Revision      int64 `json:"revision,omitempty"`
	RevisionsMade int64 `json:"revisionsMade,omitempty"`
	// Conditions say whether the pods of the function's current code
	// start (type Ready): True once one served, False with the reason
	// when they fail to start.
	Conditions []FuncCondition `json:"conditions,omitempty"`
}

// FuncCondition is one condition of a Func, as Kubernetes' conditions:
// ObservedGeneration is the Func's generation it was found for.
type FuncCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	ObservedGeneration int64      `json:"observedGeneration,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
}

// FuncReady is the condition type saying whether a function's pods start.
const FuncReady = "Ready"

// Names a Func may not take: RETURN ends a chain, template is a route.
const (
	FuncReturn   = "RETURN"
	FuncTemplate = "template"
)

const (
	FuncAPIVersionV1 = "v1"
	FuncAPIVersionV2 = "v2"
)

// The modes of a Func in the minik8s.io/v1 view.
const (
	FuncModePool  = "pool"
	FuncModeFresh = "fresh"
)

type FuncList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Func `json:"items"`
}

// FuncInstance is the durable record of one call and its chain; its name is
// the instanceId.
type FuncInstance struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       FuncInstanceSpec   `json:"spec,omitempty"`
	Status     FuncInstanceStatus `json:"status,omitempty"`
}

type FuncInstanceSpec struct {
	// Function is the first function of the chain.
	Function string `json:"function"`
	// Revision is the function's revision the call named (NAME@N); 0:
	// the one the function's traffic chose.
	Revision int64 `json:"revision,omitempty"`
	// Arg is the raw argument of the first call.
	Arg Bytes `json:"arg"`
	// CallbackURL, from the call's X-Callback-Url header, is where the
	// runner POSTs the result when the instance ends.
	CallbackURL string `json:"callbackUrl,omitempty"`
	// CallbackEvent: the caller accepted a CloudEvent (Accept:
	// application/cloudevents+json), so the callback POSTs the outcome
	// as one, structured, as a synchronous answer would be.
	CallbackEvent bool `json:"callbackEvent,omitempty"`
	// Sync marks a call whose caller waited for its answer (?wait=).
	Sync bool `json:"sync,omitempty"`
	// User is who made the call, as the apiserver authenticated it; a
	// function-invoker reads only the instances with its name here.
	User string `json:"user,omitempty"`
	// Trigger is the trigger that started the call (none for a call of
	// the function API).
	Trigger *FuncTriggerRef `json:"trigger,omitempty"`
	// Event is the CloudEvent the call came as, or was made into by its
	// trigger: its attributes and how it arrived. The argument is its data.
	Event *FuncEvent `json:"event,omitempty"`
	// Traceparent is the W3C trace context the call came with: its trace
	// goes on under the caller's.
	Traceparent string `json:"traceparent,omitempty"`
	// Parent is the call whose step sent this one through an output.
	Parent *FuncParentRef `json:"parent,omitempty"`
}

// FuncParentRef names the step of a call that made another through an
// output.
type FuncParentRef struct {
	// Instance is the parent call's instance id (same namespace).
	Instance string `json:"instance"`
	// Step is the parent's step, from 1; Output the output it sent on.
	Step   int    `json:"step"`
	Output string `json:"output"`
}

// FuncTriggerRef names the trigger that started a call and its type.
type FuncTriggerRef struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// App is the trigger's app, Config the app's config merged with the
	// trigger's own, as the call was made.
	App    string            `json:"app,omitempty"`
	Config map[string]string `json:"config,omitempty"`
	// Schedule is a schedule trigger's cron expression.
	Schedule string `json:"schedule,omitempty"`
}

// FuncEvent is the CloudEvent (1.0) a call came as: its attributes, and
// how it arrived. A function taking run(event, context) reads it as
// event["metadata"].
type FuncEvent struct {
	SpecVersion string `json:"specversion"`
	ID          string `json:"id"`
	Source      string `json:"source"`
	Type        string `json:"type"`
	// Time is RFC 3339.
	Time    string `json:"time,omitempty"`
	Subject string `json:"subject,omitempty"`
	// DataContentType is the media type of the data (the argument).
	DataContentType string `json:"datacontenttype,omitempty"`
	// Extensions are the event's extension attributes.
	Extensions map[string]string `json:"extensions,omitempty"`
	// Method, Path, Query and Headers describe the HTTP request of a call
	// that came by HTTP (the function API or an http trigger); values of
	// credentials (Authorization, Cookie, tokens, keys, secrets,
	// signatures) read [redacted].
	Method  string              `json:"method,omitempty"`
	Path    string              `json:"path,omitempty"`
	Query   map[string][]string `json:"query,omitempty"`
	Headers map[string]string   `json:"headers,omitempty"`
	// Topic is the subject a queue trigger's message came on.
	Topic string `json:"topic,omitempty"`
}

const (
	InstancePending   = "Pending"
	InstanceRunning   = "Running"
	InstanceSucceeded = "Succeeded"
	InstanceFailed    = "Failed"
)

type FuncInstanceStatus struct {
	// Phase is Running from the moment a call is accepted (status.runner
	// says whether a runner has it yet), Succeeded or Failed once it
	// ended; Pending only for an instance stored by hand without a status,
	// until its first step is recorded. pkg/function/call keeps the rules.
	Phase string `json:"phase,omitempty"`
	// Runner is the holder identity of the runner driving the instance
	// (its Lease's spec.holderIdentity). The claim holds while that Lease
	// is renewed; another runner takes over an instance whose runner's
	// Lease expired, by a compare-and-swap of this field.
	Runner string `json:"runner,omitempty"`
	// Callback is the delivery of the result to spec.callbackUrl.
	Callback *FuncCallbackStatus `json:"callback,omitempty"`
	Result   Bytes               `json:"result,omitempty"`
	// ResultType is how the result answers over HTTP: "json" (a value
	// JSON encodes), "http" (the answer {"statusCode", "headers", "body"}
	// a run(event, context) returned describes), or text ("").
	ResultType string `json:"resultType,omitempty"`
	Error      string `json:"error,omitempty"`
	// Failure is the error of a Failed instance as an error event carries
	// it: the exception's message, type and trace, or the platform's.
	Failure *FuncError `json:"failure,omitempty"`
	// Next is the step still to run: the durable cursor a runner that
	// takes the instance over (or restarts) resumes from.
	Next           *FuncStep        `json:"next,omitempty"`
	Hops           int              `json:"hops,omitempty"`
	Steps          []FuncStepRecord `json:"steps,omitempty"`
	CompletionTime *time.Time       `json:"completionTime,omitempty"`
	// Trace holds the call's spans: the call, each step, the waits for a
	// pod, the run in the pod and its plugins (with the tracing plugin).
	Trace []FuncSpan `json:"trace,omitempty"`
}

// FuncSpan is one span of a call's trace (W3C trace context ids, hex),
// kept with the instance: the call, its steps, a wait for a pod, the run in
// the pod and its plugins.
type FuncSpan struct {
	Name         string `json:"name"`
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId,omitempty"`
	// StartNs and EndNs are Unix times in nanoseconds.
	StartNs int64 `json:"startNs"`
	EndNs   int64 `json:"endNs"`
	// Service is the component that made it: apiserver, funcrunner, pod.
	Service string `json:"service,omitempty"`
	Error   string `json:"error,omitempty"`
}

// FuncError is a failed call's error: message, type and trace (seed 001).
type FuncError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Trace   string `json:"trace"`
}

// FuncCallbackStatus records the POST of a finished instance's result to
// its callback URL.
type FuncCallbackStatus struct {
	// Delivered is true once the URL answered 2xx.
	Delivered bool `json:"delivered"`
	Attempts  int  `json:"attempts"`
	// StatusCode of the last attempt (0: no answer); Error says why it failed.
	StatusCode int        `json:"statusCode,omitempty"`
	Error      string     `json:"error,omitempty"`
	Time       *time.Time `json:"time,omitempty"`
}

type FuncStep struct {
	Function string `json:"function"`
	Arg      Bytes  `json:"arg"`
	// Revision is the function's revision the step runs on: the one the
	// call named (NAME@N), or the one this call ran the function on
	// before; 0 lets the function's traffic choose.
	Revision int64 `json:"revision,omitempty"`
}

// FuncStepRecord is what one step of a chain did.
type FuncStepRecord struct {
	Function string `json:"function"`
	// Revision is the function's revision the step ran on.
	Revision int64  `json:"revision,omitempty"`
	Pod      string `json:"pod,omitempty"`
	Node     string `json:"node,omitempty"`
	Arg      Bytes  `json:"arg"`
	Result   Bytes  `json:"result,omitempty"`
	Check    *bool  `json:"check,omitempty"`
	Output   string `json:"output,omitempty"`
	Error    string `json:"error,omitempty"`
	// PluginErrors are the post plugins that failed (the call stands).
	PluginErrors []string `json:"pluginErrors,omitempty"`
	// Sends are what the step sent through its function's outputs.
	Sends []FuncSendRecord `json:"sends,omitempty"`
	// Retried are the pods lost under the step (dead, or the connection
	// broken, before they answered), and why: the step ran again, on Pod.
	Retried []string `json:"retried,omitempty"`
	// Superseded: a step call (PUT /api/funcs/NAME/ID) moved the call on
	// while this step ran; it ran, and its outcome was not followed.
	Superseded bool       `json:"superseded,omitempty"`
	Start      *time.Time `json:"start,omitempty"`
	// DurationMs is the whole step as the caller saw it, a cold start
	// included; RunMs is the function's own run (and check) time.
	DurationMs int64 `json:"durationMs"`
	RunMs      int64 `json:"runMs"`
}

// FuncSendRecord is the delivery of one send through an output.
type FuncSendRecord struct {
	Output string `json:"output"`
	// Instance is the call made, for an output to a function.
	Instance string `json:"instance,omitempty"`
	// Bytes is the size of the data sent.
	Bytes int `json:"bytes"`
	// Error says why it was not delivered ("" once it was).
	Error string `json:"error,omitempty"`
}

type FuncInstanceList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []FuncInstance `json:"items"`
}

// FuncInstanceView is the flat answer of GET /api/funcs/:id.
type FuncInstanceView struct {
	InstanceID string `json:"instanceId"`
	// Namespace is where the call is (the function's namespace).
	Namespace string           `json:"namespace,omitempty"`
	Function  string           `json:"function"`
	Status    string           `json:"status"`
	Result    Bytes            `json:"result"`
	Error     string           `json:"error,omitempty"`
	Steps     []FuncStepRecord `json:"steps"`
}

// FuncSummary is one line of GET /api/funcs: a function, how it is reached
// and how it is doing (seed 003's list of every invocable function).
type FuncSummary struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Version is the serving mode: v2 (a warm pool) or v1 (a pod per step).
	Version string `json:"version"`
	// Runtime is the image the function's pods run (its own with spec.image).
	Runtime  string           `json:"runtime"`
	Triggers []TriggerSummary `json:"triggers"`
	// Counter is status.counter: the pods the function is scaled to.
	Counter   int        `json:"counter"`
	ReadyPods int        `json:"readyPods"`
	LastCall  *time.Time `json:"lastCall,omitempty"`
}

// TriggerSummary is a trigger of a function as the list shows it.
type TriggerSummary struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Source is what it listens to: METHODS PATH, a cron expression, a subject.
	Source string `json:"source"`
	Ready  bool   `json:"ready"`
}

type FuncSummaryList struct {
	Items []FuncSummary `json:"items"`
}

// Func defaults, applied where the values are used so that a template is
// read back exactly as it was written.
const (
	DefaultFuncMaxInstances   = 10
	DefaultFuncTimeoutSeconds = 60
	DefaultFuncRuntime        = "minik8s/python-runtime:latest"
	// DefaultContainerConcurrency is the runtime's default worker count
	// (funcserver.DefaultWorkers): one call per Python worker.
	DefaultContainerConcurrency = 4
	MaxContainerConcurrency     = 64
)
