package wire

// The bodies of the Jupyter kernel gateway's REST API (/api, issue 31), as
// Kernel Gateway serves them and jupyter_server's GatewayClient reads them.

// JupyterAPI is the answer of GET /api.
type JupyterAPI struct {
	// Version is the gateway's version ("airlock").
	Version string `json:"version"`
	// ProtocolVersion is the messaging protocol the websocket speaks.
	ProtocolVersion string `json:"protocol_version"`
}

// KernelSpecFile is a kernelspec's kernel.json: how Jupyter shows and
// starts the kernel. Airlock's kernels start on the server, so Argv is
// empty.
type KernelSpecFile struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode"`
	Env           map[string]string `json:"env"`
	// Metadata holds {"airlock": {"environment": NAME}}.
	Metadata map[string]any `json:"metadata"`
}

// KernelSpec is one kernelspec: GET /api/kernelspecs/{name}.
type KernelSpec struct {
	Name      string            `json:"name"`
	Spec      KernelSpecFile    `json:"spec"`
	Resources map[string]string `json:"resources"`
}

// KernelSpecs is GET /api/kernelspecs: one spec per environment the key
// may use, by name, and the default one.
type KernelSpecs struct {
	Default     string                `json:"default"`
	Kernelspecs map[string]KernelSpec `json:"kernelspecs"`
}

// Kernel is a kernel (an Airlock session) as the kernels API shows it.
type Kernel struct {
	// ID is the session id in UUID form (s-0123abcd-...).
	ID   string `json:"id"`
	Name string `json:"name"`
	// LastActivity is an ISO 8601 time.
	LastActivity string `json:"last_activity"`
	// ExecutionState is idle, busy or starting (a hibernated session is
	// idle: it wakes on its next request).
	ExecutionState string `json:"execution_state"`
	// Connections counts the websockets attached.
	Connections int `json:"connections"`
}

// StartKernelRequest is the body of POST /api/kernels (optional).
type StartKernelRequest struct {
	// Name is the kernelspec ("" or absent: the default; "python3" starts
	// the python one).
	Name string `json:"name,omitempty"`
	// Env is accepted and ignored: a sandbox's environment variables come
	// from the server's allowlist.
	Env map[string]string `json:"env,omitempty"`
}
