package api

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ResourceList maps a resource name ("cpu", "memory") to a quantity
// ("500m", "64Mi"), as Kubernetes writes them.
type ResourceList map[string]string

const (
	ResourceCPU    = "cpu"
	ResourceMemory = "memory"
	ResourcePods   = "pods"
)

// LabelPodNetwork, on a Node, says how its kubelet networks pods:
// PodNetworkOwn (each pod its own address) or PodNetworkShared (the
// node's network, where a container port is a port of the node). The
// scheduler keeps pods' fixed ports apart only on shared nodes.
const (
	LabelPodNetwork  = "minik8s.io/pod-network"
	PodNetworkOwn    = "cni"
	PodNetworkShared = "host"
)

// The cluster's address ranges by default, as k3s has them: pods'
// addresses (each node gets a slice) and the Services' cluster IPs. The
// kubelets and the apiserver must agree on them. A cluster whose pods
// share their nodes' network takes HostNetworkServiceCIDR, inside
// loopback, where every node's proxy listens on the cluster IPs.
const (
	DefaultClusterCIDR     = "10.42.0.0/16"
	DefaultServiceCIDR     = "10.43.0.0/16"
	HostNetworkServiceCIDR = "127.1.0.0/16"
)

// Node is a machine running a kubelet.
type Node struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       NodeSpec   `json:"spec,omitempty"`
	Status     NodeStatus `json:"status,omitempty"`
}

type NodeSpec struct {
	// PodCIDR is the node's slice of the cluster's pod range, given by the
	// apiserver when the node registers; PodCIDRs holds the same, as
	// Kubernetes has both.
	PodCIDR       string   `json:"podCIDR,omitempty"`
	PodCIDRs      []string `json:"podCIDRs,omitempty"`
	Unschedulable bool     `json:"unschedulable,omitempty"`
	// Taints keep pods that do not tolerate them off the node (NoSchedule;
	// PreferNoSchedule is a preference, NoExecute is refused).
	Taints     []corev1.Taint `json:"taints,omitempty"`
	ProviderID string         `json:"providerID,omitempty"`
	// ExternalID and ConfigSource are stored: Kubernetes itself no longer
	// acts on them. PodPreemptionPolicy is refused by Kubernetes'
	// validation while its feature is off.
	ExternalID          string                          `json:"externalID,omitempty"`
	ConfigSource        *corev1.NodeConfigSource        `json:"configSource,omitempty"`
	PodPreemptionPolicy *corev1.NodePodPreemptionPolicy `json:"podPreemptionPolicy,omitempty"`
}

type NodeStatus struct {
	Capacity        ResourceList        `json:"capacity,omitempty"`
	Allocatable     ResourceList        `json:"allocatable,omitempty"`
	Conditions      []NodeCondition     `json:"conditions,omitempty"`
	Addresses       []NodeAddress       `json:"addresses,omitempty"`
	DaemonEndpoints NodeDaemonEndpoints `json:"daemonEndpoints,omitempty"`
	NodeInfo        NodeSystemInfo      `json:"nodeInfo,omitempty"`
}

type NodeCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	LastHeartbeatTime  *time.Time `json:"lastHeartbeatTime,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
}

const NodeReady = "Ready"

type NodeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

const (
	NodeInternalIP = "InternalIP"
	NodeHostName   = "Hostname"
)

type NodeDaemonEndpoints struct {
	KubeletEndpoint DaemonEndpoint `json:"kubeletEndpoint,omitempty"`
}

type DaemonEndpoint struct {
	Port int32 `json:"Port"`
	// Scheme is "https" for a kubelet serving with a certificate of the
	// cluster CA (the apiserver then verifies it and presents its own);
	// empty for a plain one registered through the local port.
	Scheme string `json:"scheme,omitempty"`
}

type NodeSystemInfo struct {
	KernelVersion           string `json:"kernelVersion,omitempty"`
	OperatingSystem         string `json:"operatingSystem,omitempty"`
	Architecture            string `json:"architecture,omitempty"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion,omitempty"`
	KubeletVersion          string `json:"kubeletVersion,omitempty"`
}

type NodeList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Node `json:"items"`
}

// Pod is a group of containers run together on one node.
type Pod struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec   `json:"spec,omitempty"`
	Status     PodStatus `json:"status,omitempty"`
}

type PodSpec struct {
	// InitContainers run one after another, each to its successful end,
	// before the containers start.
	InitContainers                []Container       `json:"initContainers,omitempty"`
	Containers                    []Container       `json:"containers"`
	Volumes                       []Volume          `json:"volumes,omitempty"`
	RestartPolicy                 string            `json:"restartPolicy,omitempty"`
	NodeName                      string            `json:"nodeName,omitempty"`
	NodeSelector                  map[string]string `json:"nodeSelector,omitempty"`
	TerminationGracePeriodSeconds *int64            `json:"terminationGracePeriodSeconds,omitempty"`
	SchedulerName                 string            `json:"schedulerName,omitempty"`
	// HostNetwork: the pod uses its node's network (a privileged pod).
	HostNetwork        bool   `json:"hostNetwork,omitempty"`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// AutomountServiceAccountToken: false keeps the service account's
	// token out of the pod.
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
	// DNSPolicy is how the pod resolves names, as in Kubernetes:
	// ClusterFirst (the default: the cluster DNS, or the node's resolver
	// for a pod on the node's network), ClusterFirstWithHostNet (the
	// cluster DNS on the node's network too), Default (the node's
	// resolver) or None (DNSConfig alone).
	DNSPolicy string `json:"dnsPolicy,omitempty"`
	// DNSConfig adds nameservers, search domains and options to what the
	// policy gives.
	DNSConfig *PodDNSConfig `json:"dnsConfig,omitempty"`
	// Hostname is the pod's host name (its name when empty); with
	// Subdomain, its fully qualified name is
	// HOSTNAME.SUBDOMAIN.NAMESPACE.svc.CLUSTER-DOMAIN in its /etc/hosts.
	Hostname  string `json:"hostname,omitempty"`
	Subdomain string `json:"subdomain,omitempty"`
	// HostAliases are lines added to the pod's /etc/hosts.
	HostAliases []HostAlias `json:"hostAliases,omitempty"`
	// SecurityContext is who the pod's processes are and what owns its
	// volumes (runAsUser, fsGroup, sysctls, seccomp, ...): Kubernetes'
	// own type, its whole schema, as the API types will all be
	// (docs/design.md, "The API types").
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// HostPID, HostIPC and ShareProcessNamespace are accepted so that
	// manifests read, and refused when set: minik8s runs each container
	// in its own PID and IPC namespaces.
	HostPID               bool  `json:"hostPID,omitempty"`
	HostIPC               bool  `json:"hostIPC,omitempty"`
	ShareProcessNamespace *bool `json:"shareProcessNamespace,omitempty"`

	// The rest of Kubernetes' pod spec, Kubernetes' own types. The
	// scheduler honours affinity's required node terms and waits for
	// schedulingGates; ServiceAccount is the old name of
	// ServiceAccountName, kept equal to it. What the others do here (most
	// are stored and not acted on; the few whose neglect would run
	// something other than the manifest asks are refused when set) is
	// pkg/api/validation's notActedOn table, which the README and
	// `kubectl explain` show.
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	PriorityClassName         string                            `json:"priorityClassName,omitempty"`
	Priority                  *int32                            `json:"priority,omitempty"`
	PreemptionPolicy          *corev1.PreemptionPolicy          `json:"preemptionPolicy,omitempty"`
	RuntimeClassName          *string                           `json:"runtimeClassName,omitempty"`
	Overhead                  corev1.ResourceList               `json:"overhead,omitempty"`
	ReadinessGates            []corev1.PodReadinessGate         `json:"readinessGates,omitempty"`
	SchedulingGates           []corev1.PodSchedulingGate        `json:"schedulingGates,omitempty"`
	SchedulingGroup           *corev1.PodSchedulingGroup        `json:"schedulingGroup,omitempty"`
	ResourceClaims            []corev1.PodResourceClaim         `json:"resourceClaims,omitempty"`
	Resources                 *corev1.ResourceRequirements      `json:"resources,omitempty"`
	OS                        *corev1.PodOS                     `json:"os,omitempty"`
	HostUsers                 *bool                             `json:"hostUsers,omitempty"`
	HostnameOverride          *string                           `json:"hostnameOverride,omitempty"`
	SetHostnameAsFQDN         *bool                             `json:"setHostnameAsFQDN,omitempty"`
	EnableServiceLinks        *bool                             `json:"enableServiceLinks,omitempty"`
	EphemeralContainers       []corev1.EphemeralContainer       `json:"ephemeralContainers,omitempty"`
	EvictionResponders        []corev1.EvictionResponder        `json:"evictionResponders,omitempty"`
	ImagePullSecrets          []corev1.LocalObjectReference     `json:"imagePullSecrets,omitempty"`
	ActiveDeadlineSeconds     *int64                            `json:"activeDeadlineSeconds,omitempty"`
	ServiceAccount            string                            `json:"serviceAccount,omitempty"`
}

// HostAlias maps host names to an address in a pod's /etc/hosts.
type HostAlias struct {
	IP        string   `json:"ip"`
	Hostnames []string `json:"hostnames,omitempty"`
}

// The DNS policies of a pod, as Kubernetes names them.
const (
	DNSClusterFirst            = "ClusterFirst"
	DNSClusterFirstWithHostNet = "ClusterFirstWithHostNet"
	DNSDefault                 = "Default"
	DNSNone                    = "None"
)

// PodDNSConfig is what a pod adds to its resolver configuration.
type PodDNSConfig struct {
	Nameservers []string             `json:"nameservers,omitempty"`
	Searches    []string             `json:"searches,omitempty"`
	Options     []PodDNSConfigOption `json:"options,omitempty"`
}

// PodDNSConfigOption is a resolver option (ndots, timeout, edns0...).
type PodDNSConfigOption struct {
	Name  string  `json:"name,omitempty"`
	Value *string `json:"value,omitempty"`
}

const (
	RestartPolicyAlways    = "Always"
	RestartPolicyOnFailure = "OnFailure"
	RestartPolicyNever     = "Never"
)

type Container struct {
	Name       string   `json:"name"`
	Image      string   `json:"image"`
	Command    []string `json:"command,omitempty"`
	Args       []string `json:"args,omitempty"`
	WorkingDir string   `json:"workingDir,omitempty"`
	// EnvFrom sets a variable for each key of a ConfigMap or Secret; Env
	// is set after it and wins.
	EnvFrom        []corev1.EnvFromSource `json:"envFrom,omitempty"`
	Env            []EnvVar               `json:"env,omitempty"`
	Ports          []ContainerPort        `json:"ports,omitempty"`
	Resources      ResourceRequirements   `json:"resources,omitempty"`
	VolumeMounts   []VolumeMount          `json:"volumeMounts,omitempty"`
	ReadinessProbe *Probe                 `json:"readinessProbe,omitempty"`
	LivenessProbe  *Probe                 `json:"livenessProbe,omitempty"`
	// StartupProbe holds the other probes back until it passes; failing,
	// it restarts the container as liveness does.
	StartupProbe *Probe `json:"startupProbe,omitempty"`
	// Lifecycle's postStart runs as the container starts (it is not
	// running until it is done); preStop runs before it is told to stop,
	// within its grace period.
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`
	// TerminationMessagePath is a file the container may write why it
	// ended into (/dev/termination-log); the kubelet puts it in the
	// container's terminated state. With TerminationMessagePolicy
	// FallbackToLogsOnError a failed container that wrote none gets the
	// end of its log.
	TerminationMessagePath   string `json:"terminationMessagePath,omitempty"`
	TerminationMessagePolicy string `json:"terminationMessagePolicy,omitempty"`
	ImagePullPolicy          string `json:"imagePullPolicy,omitempty"`
	// SecurityContext overrides the pod's for this container and adds
	// what only a container has: capabilities, privileged,
	// readOnlyRootFilesystem, allowPrivilegeEscalation.
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`

	// The rest of Kubernetes' container: see PodSpec's (notActedOn).
	ResizePolicy       []corev1.ContainerResizePolicy `json:"resizePolicy,omitempty"`
	RestartPolicy      *corev1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
	RestartPolicyRules []corev1.ContainerRestartRule  `json:"restartPolicyRules,omitempty"`
	VolumeDevices      []corev1.VolumeDevice          `json:"volumeDevices,omitempty"`
	Stdin              bool                           `json:"stdin,omitempty"`
	StdinOnce          bool                           `json:"stdinOnce,omitempty"`
	TTY                bool                           `json:"tty,omitempty"`
}

type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource takes a variable's value from a key of a Secret or a
// ConfigMap of the pod's namespace.
type EnvVarSource struct {
	SecretKeyRef    *KeySelector `json:"secretKeyRef,omitempty"`
	ConfigMapKeyRef *KeySelector `json:"configMapKeyRef,omitempty"`
	// FieldRef and ResourceFieldRef are the downward API: one of the pod's
	// fields, or one of a container's resources.
	FieldRef         *corev1.ObjectFieldSelector   `json:"fieldRef,omitempty"`
	ResourceFieldRef *corev1.ResourceFieldSelector `json:"resourceFieldRef,omitempty"`
	FileKeyRef       *corev1.FileKeySelector       `json:"fileKeyRef,omitempty"`
}

type KeySelector struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional,omitempty"`
}

// ContainerPort: a ContainerPort of 0 asks the kubelet to allocate a free
// port, passed to the container as PORT (pods use the node's network).
type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort,omitempty"`
	HostPort      int32  `json:"hostPort,omitempty"`
	Protocol      string `json:"protocol,omitempty"`
	// HostIP limits a hostPort to one of the node's addresses.
	HostIP string `json:"hostIP,omitempty"`
}

type ResourceRequirements struct {
	Limits   ResourceList           `json:"limits,omitempty"`
	Requests ResourceList           `json:"requests,omitempty"`
	Claims   []corev1.ResourceClaim `json:"claims,omitempty"`
}

type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	// SubPath mounts that path inside the volume instead of its root;
	// SubPathExpr is one with the container's $(VAR)s expanded.
	SubPath           string                        `json:"subPath,omitempty"`
	SubPathExpr       string                        `json:"subPathExpr,omitempty"`
	MountPropagation  *corev1.MountPropagationMode  `json:"mountPropagation,omitempty"`
	RecursiveReadOnly *corev1.RecursiveReadOnlyMode `json:"recursiveReadOnly,omitempty"`
	BindMountOptions  []string                      `json:"bindMountOptions,omitempty"`
}

type Volume struct {
	Name      string                 `json:"name"`
	EmptyDir  *EmptyDirVolumeSource  `json:"emptyDir,omitempty"`
	HostPath  *HostPathVolumeSource  `json:"hostPath,omitempty"`
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`
	Secret    *SecretVolumeSource    `json:"secret,omitempty"`
	// DownwardAPI writes the pod's own fields (name, labels, ...) and its
	// containers' resources as files.
	DownwardAPI *corev1.DownwardAPIVolumeSource `json:"downwardAPI,omitempty"`
	// Projected puts ConfigMap and Secret keys, downward API fields and
	// service account tokens (of an audience, renewed before they expire)
	// in one directory.
	Projected *corev1.ProjectedVolumeSource `json:"projected,omitempty"`
	// PersistentVolumeClaim mounts the directory of the volume bound to
	// the claim; the pod goes to the volume's node.
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
}

// SecretVolumeSource mounts a Secret's keys as files (mode 0644 unless
// DefaultMode says otherwise), or the keys Items name at their paths.
type SecretVolumeSource struct {
	SecretName  string             `json:"secretName"`
	Items       []corev1.KeyToPath `json:"items,omitempty"`
	DefaultMode *int32             `json:"defaultMode,omitempty"`
	Optional    *bool              `json:"optional,omitempty"`
}

// EmptyDirVolumeSource is Kubernetes': medium Memory is a tmpfs of
// sizeLimit.
type EmptyDirVolumeSource = corev1.EmptyDirVolumeSource

type HostPathVolumeSource struct {
	Path string `json:"path"`
}

// ConfigMapVolumeSource mounts a ConfigMap's keys as files (mode 0644
// unless DefaultMode says otherwise), or the keys Items name at their
// paths; an Optional one that does not exist is an empty volume.
type ConfigMapVolumeSource struct {
	Name        string             `json:"name"`
	Items       []corev1.KeyToPath `json:"items,omitempty"`
	DefaultMode *int32             `json:"defaultMode,omitempty"`
	Optional    *bool              `json:"optional,omitempty"`
}

type Probe struct {
	// One of HTTPGet, TCPSocket, GRPC and Exec says how to probe.
	HTTPGet             *HTTPGetAction     `json:"httpGet,omitempty"`
	TCPSocket           *TCPSocketAction   `json:"tcpSocket,omitempty"`
	GRPC                *corev1.GRPCAction `json:"grpc,omitempty"`
	Exec                *ExecAction        `json:"exec,omitempty"`
	InitialDelaySeconds int32              `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int32              `json:"periodSeconds,omitempty"`
	TimeoutSeconds      int32              `json:"timeoutSeconds,omitempty"`
	FailureThreshold    int32              `json:"failureThreshold,omitempty"`
	SuccessThreshold    int32              `json:"successThreshold,omitempty"`
	// TerminationGracePeriodSeconds is the grace a container killed for
	// failing this (liveness or startup) probe gets, instead of the pod's.
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// TCPSocketAction passes when podIP:port accepts a connection; Port is a
// number or the name of a container port.
type TCPSocketAction struct {
	Port IntOrString `json:"port"`
	// Host is another address than the pod's (a privileged pod's).
	Host string `json:"host,omitempty"`
}

// ExecAction runs Command in the container; exit status 0 passes.
type ExecAction struct {
	Command []string `json:"command,omitempty"`
}

// HTTPGetAction probes http://podIP:port/path; Port is a number or the name
// of a container port.
type HTTPGetAction struct {
	Path string      `json:"path,omitempty"`
	Port IntOrString `json:"port"`
	// Host is another address than the pod's (a privileged pod's); a Host
	// header among HTTPHeaders names the virtual host instead.
	Host        string              `json:"host,omitempty"`
	Scheme      string              `json:"scheme,omitempty"`
	HTTPHeaders []corev1.HTTPHeader `json:"httpHeaders,omitempty"`
	// Protocol HTTP2 probes with HTTP/2 (without TLS: h2c).
	Protocol *corev1.HTTPProtocol `json:"protocol,omitempty"`
}

type PodStatus struct {
	Phase      string         `json:"phase,omitempty"`
	Conditions []PodCondition `json:"conditions,omitempty"`
	Message    string         `json:"message,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	HostIP     string         `json:"hostIP,omitempty"`
	// NominatedNodeName is the node where the scheduler preempted pods
	// for this one, which waits for them to go.
	NominatedNodeName     string            `json:"nominatedNodeName,omitempty"`
	PodIP                 string            `json:"podIP,omitempty"`
	PodIPs                []PodIP           `json:"podIPs,omitempty"`
	StartTime             *time.Time        `json:"startTime,omitempty"`
	InitContainerStatuses []ContainerStatus `json:"initContainerStatuses,omitempty"`
	// QOSClass is how the node treats the pod when short of resources,
	// from its containers' requests and limits.
	QOSClass          string            `json:"qosClass,omitempty"`
	ContainerStatuses []ContainerStatus `json:"containerStatuses,omitempty"`
}

// PodIP is one of a pod's addresses.
type PodIP struct {
	IP string `json:"ip"`
}

const (
	PodPending   = "Pending"
	PodRunning   = "Running"
	PodSucceeded = "Succeeded"
	PodFailed    = "Failed"
	PodUnknown   = "Unknown"
)

const (
	PodReady        = "Ready"
	PodScheduled    = "PodScheduled"
	ContainersReady = "ContainersReady"
	PodInitialized  = "Initialized"
)

type PodCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
}

type ContainerStatus struct {
	Name         string          `json:"name"`
	State        ContainerState  `json:"state,omitempty"`
	LastState    ContainerState  `json:"lastState,omitempty"`
	Ready        bool            `json:"ready"`
	RestartCount int32           `json:"restartCount"`
	Image        string          `json:"image"`
	ContainerID  string          `json:"containerID,omitempty"`
	Ports        []ContainerPort `json:"ports,omitempty"`
}

type ContainerState struct {
	Waiting    *ContainerStateWaiting    `json:"waiting,omitempty"`
	Running    *ContainerStateRunning    `json:"running,omitempty"`
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

type ContainerStateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type ContainerStateRunning struct {
	StartedAt *time.Time `json:"startedAt,omitempty"`
}

type ContainerStateTerminated struct {
	ExitCode   int32      `json:"exitCode"`
	Signal     int32      `json:"signal,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Message    string     `json:"message,omitempty"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

type PodList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Pod `json:"items"`
}

// PodTemplateSpec is what a ReplicaSet stamps its pods from.
type PodTemplateSpec struct {
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec `json:"spec,omitempty"`
}

// Binding assigns a pod to a node (the pods/binding subresource).
type Binding struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Target     ObjectReference `json:"target"`
}

type ObjectReference struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
	// ResourceVersion and FieldPath (a part of the object, as
	// "spec.containers{web}") are Kubernetes' too.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
}

// LabelSelector selects objects by their labels.
type LabelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

type LabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// ReplicaSet keeps a number of identical pods running.
type ReplicaSet struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       ReplicaSetSpec   `json:"spec,omitempty"`
	Status     ReplicaSetStatus `json:"status,omitempty"`
}

type ReplicaSetSpec struct {
	Replicas *int32          `json:"replicas,omitempty"`
	Selector *LabelSelector  `json:"selector"`
	Template PodTemplateSpec `json:"template"`
	// MinReadySeconds a pod must have been ready to count as available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
}

type ReplicaSetStatus struct {
	Replicas             int32 `json:"replicas"`
	ReadyReplicas        int32 `json:"readyReplicas,omitempty"`
	AvailableReplicas    int32 `json:"availableReplicas,omitempty"`
	FullyLabeledReplicas int32 `json:"fullyLabeledReplicas,omitempty"`
	ObservedGeneration   int64 `json:"observedGeneration,omitempty"`
}

type ReplicaSetList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []ReplicaSet `json:"items"`
}

// Scale is the replicasets/scale subresource.
type Scale struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       ScaleSpec   `json:"spec,omitempty"`
	Status     ScaleStatus `json:"status,omitempty"`
}

type ScaleSpec struct {
	Replicas int32 `json:"replicas"`
}

type ScaleStatus struct {
	Replicas int32  `json:"replicas"`
	Selector string `json:"selector,omitempty"`
}

// Service gives a set of pods one stable address.
type Service struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       ServiceSpec   `json:"spec,omitempty"`
	Status     ServiceStatus `json:"status,omitempty"`
}

type ServiceSpec struct {
	Type      string            `json:"type,omitempty"`
	Selector  map[string]string `json:"selector,omitempty"`
	Ports     []ServicePort     `json:"ports,omitempty"`
	ClusterIP string            `json:"clusterIP,omitempty"`
	// ClusterIPs is ClusterIP as a list (one IPv4 address: Services are
	// single-stack), kept equal to it.
	ClusterIPs []string `json:"clusterIPs,omitempty"`
	// PublishNotReadyAddresses puts the pods that are not ready in the
	// Endpoints too.
	PublishNotReadyAddresses bool `json:"publishNotReadyAddresses,omitempty"`

	// The rest of Kubernetes' Service: defaulted as Kubernetes defaults
	// it (IPv4, SingleStack, Cluster traffic policies, no session
	// affinity); what differs is refused (pkg/api/validation's
	// notacted.go).
	IPFamilies                    []corev1.IPFamily                    `json:"ipFamilies,omitempty"`
	IPFamilyPolicy                *corev1.IPFamilyPolicy               `json:"ipFamilyPolicy,omitempty"`
	InternalTrafficPolicy         *corev1.ServiceInternalTrafficPolicy `json:"internalTrafficPolicy,omitempty"`
	ExternalTrafficPolicy         corev1.ServiceExternalTrafficPolicy  `json:"externalTrafficPolicy,omitempty"`
	SessionAffinity               corev1.ServiceAffinity               `json:"sessionAffinity,omitempty"`
	SessionAffinityConfig         *corev1.SessionAffinityConfig        `json:"sessionAffinityConfig,omitempty"`
	TrafficDistribution           *string                              `json:"trafficDistribution,omitempty"`
	ExternalIPs                   []string                             `json:"externalIPs,omitempty"`
	ExternalName                  string                               `json:"externalName,omitempty"`
	HealthCheckNodePort           int32                                `json:"healthCheckNodePort,omitempty"`
	AllocateLoadBalancerNodePorts *bool                                `json:"allocateLoadBalancerNodePorts,omitempty"`
	LoadBalancerClass             *string                              `json:"loadBalancerClass,omitempty"`
	LoadBalancerIP                string                               `json:"loadBalancerIP,omitempty"`
	LoadBalancerSourceRanges      []string                             `json:"loadBalancerSourceRanges,omitempty"`
}

// ServicePort: TargetPort is a number or the name of a container port, since
// allocated ports differ from pod to pod.
type ServicePort struct {
	Name       string      `json:"name,omitempty"`
	Protocol   string      `json:"protocol,omitempty"`
	Port       int32       `json:"port"`
	TargetPort IntOrString `json:"targetPort,omitempty"`
	// NodePort, on a Service of type NodePort, is the port every node
	// serves it on, at the node's address.
	NodePort int32 `json:"nodePort,omitempty"`
	// AppProtocol is a hint (h2c, kubernetes.io/ws...); the proxies
	// forward TCP whatever it says.
	AppProtocol *string `json:"appProtocol,omitempty"`
}

// ServiceStatus: minik8s has no load balancers; the field is there for
// what Kubernetes' clients send (an empty loadBalancer).
type ServiceStatus struct {
	LoadBalancer *LoadBalancerStatus `json:"loadBalancer,omitempty"`
}

type LoadBalancerStatus struct {
	Ingress []LoadBalancerIngress `json:"ingress,omitempty"`
}

type LoadBalancerIngress struct {
	IP       string `json:"ip,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

type ServiceList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Service `json:"items"`
}

// Endpoints lists the ready addresses behind a Service.
type Endpoints struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Subsets    []EndpointSubset `json:"subsets,omitempty"`
}

type EndpointSubset struct {
	Addresses         []EndpointAddress `json:"addresses,omitempty"`
	NotReadyAddresses []EndpointAddress `json:"notReadyAddresses,omitempty"`
	Ports             []EndpointPort    `json:"ports,omitempty"`
}

// EndpointAddress: with host networking one pod IP can serve on several
// ports, so the port lives with the address.
type EndpointAddress struct {
	IP        string           `json:"ip"`
	Port      int32            `json:"port,omitempty"`
	NodeName  string           `json:"nodeName,omitempty"`
	TargetRef *ObjectReference `json:"targetRef,omitempty"`
	Hostname  string           `json:"hostname,omitempty"`
}

type EndpointPort struct {
	Name     string `json:"name,omitempty"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol,omitempty"`
}

type EndpointsList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Endpoints `json:"items"`
}

// ConfigMap holds configuration files; function pods get their code from one.
type ConfigMap struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
	// Immutable: its data can no longer change (Kubernetes' validation
	// refuses the update).
	Immutable *bool `json:"immutable,omitempty"`
}

type ConfigMapList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []ConfigMap `json:"items"`
}
