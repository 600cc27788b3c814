// Package catalog names the SAL actions and job kinds and holds the JSON Schema of
// each one's arguments.
//
// It is kept apart from package sal so that the control plane can validate job
// submissions against exactly the schemas the agent enforces, without linking
// the node-level code (gopsutil, process control) into cairnd.
package catalog

// Action names: a job of kind "action" names one of these.
const (
	ActionHost             = "sal.host"
	ActionCPU              = "sal.cpu"
	ActionMemory           = "sal.memory"
	ActionDisks            = "sal.disks"
	ActionNetInterfaces    = "sal.net.interfaces"
	ActionLoad             = "sal.load"
	ActionFacts            = "sal.facts"
	ActionStats            = "sal.stats"
	ActionProcesses        = "sal.processes"
	ActionProcessGet       = "sal.process.get"
	ActionProcessSignal    = "sal.process.signal"
	ActionProcessStart     = "sal.process.start"
	ActionSupervisorStart  = "sal.supervisor.start"
	ActionSupervisorStop   = "sal.supervisor.stop"
	ActionSupervisorStatus = "sal.supervisor.status"
	ActionFileRead         = "sal.file.read"
	ActionFileWrite        = "sal.file.write"
	ActionFileStat         = "sal.file.stat"
	ActionFileRemove       = "sal.file.remove"
	ActionFileMkdir        = "sal.file.mkdir"
	ActionNetTCP           = "sal.net.tcp"
	ActionNetHTTP          = "sal.net.http"
	ActionNetDNS           = "sal.net.dns"
)

// Job kinds that carry their own arguments instead of naming an action. They
// stream output, so the agent runs them through sal.System.Run and RunScript
// rather than Invoke.
const (
	JobExec   = "exec"
	JobScript = "script"
)

// Limits shared by the schemas and the code that enforces them.
const (
	// MaxReadBytes caps sal.file.read: results travel inside one API message.
	MaxReadBytes = 16 << 20
	// MaxTimeoutMS caps job timeouts at seven days.
	MaxTimeoutMS = 7 * 24 * 60 * 60 * 1000
	// MaxKillGraceMS caps the SIGTERM-to-SIGKILL grace at ten minutes.
	MaxKillGraceMS = 10 * 60 * 1000
	// MaxTCPTimeoutMS caps a TCP check at one minute.
	MaxTCPTimeoutMS = 60 * 1000
)

// Signals that sal.process.signal accepts.
const signalEnum = `["SIGTERM","SIGKILL","SIGHUP","SIGINT","SIGQUIT","SIGUSR1","SIGUSR2","SIGSTOP","SIGCONT"]`

// Interpreters that a script job may name.
const interpreterEnum = `["sh","bash","python3"]`

const draft = `"$schema":"https://json-schema.org/draft/2020-12/schema"`

// Reusable fragments. Paths must be absolute and free of ".." so that a
// submission is refused by the control plane before it reaches a node.
const (
	pathSchema   = `{"type":"string","minLength":1,"maxLength":4096,"pattern":"^(/([^/.][^/]*|\\.|\\.[^/.][^/]*|\\.\\.[^/]+)?)+$","description":"absolute path inside one of the node's file roots, without \"..\" elements"}`
	modeSchema   = `{"type":"string","pattern":"^0?[0-7]{3}$","description":"permission bits in octal, e.g. \"0644\""}`
	argvSchema   = `{"type":"array","minItems":1,"items":{"type":"string"},"prefixItems":[{"type":"string","minLength":1}],"description":"program and its arguments; the program is looked up in PATH when it has no slash"}`
	envSchema    = `{"type":"object","propertyNames":{"pattern":"^[^=\\x00]+$"},"additionalProperties":{"type":"string"},"description":"variables set on top of the agent's environment"}`
	dirSchema    = `{"type":"string","pattern":"^/","description":"absolute working directory"}`
	timeoutMS    = `{"type":"integer","minimum":0,"maximum":604800000,"description":"0 means no timeout"}`
	graceMS      = `{"type":"integer","minimum":0,"maximum":600000,"description":"time between SIGTERM and SIGKILL"}`
	pidSchema    = `{"type":"integer","minimum":1,"maximum":4194304}`
	nameSchema   = `{"type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$","description":"name of the supervised process"}`
	noArgsSchema = `{` + draft + `,"type":"object","additionalProperties":false}`
)

const processStartProps = `"argv":` + argvSchema + `,` +
	`"env":` + envSchema + `,` +
	`"clear_env":{"type":"boolean","description":"start from an empty environment"},` +
	`"dir":` + dirSchema + `,` +
	`"stdout":` + pathSchema + `,` +
	`"stderr":` + pathSchema

const runProps = `"env":` + envSchema + `,` +
	`"clear_env":{"type":"boolean","description":"start from an empty environment"},` +
	`"stdin":{"type":"string","description":"text written to the process's standard input"},` +
	`"dir":` + dirSchema + `,` +
	`"timeout_ms":` + timeoutMS + `,` +
	`"kill_grace_ms":` + graceMS

// ActionSchemas returns every action name with the JSON Schema (draft 2020-12)
// of its arguments. The map is freshly built, so callers may keep or change it.
func ActionSchemas() map[string]string {
	return map[string]string{
		ActionHost:          noArgsSchema,
		ActionCPU:           noArgsSchema,
		ActionMemory:        noArgsSchema,
		ActionDisks:         noArgsSchema,
		ActionNetInterfaces: noArgsSchema,
		ActionLoad:          noArgsSchema,
		ActionFacts:         noArgsSchema,
		ActionStats:         noArgsSchema,
		ActionProcesses:     noArgsSchema,
		ActionProcessGet: `{` + draft + `,"type":"object","additionalProperties":false,"required":["pid"],` +
			`"properties":{"pid":` + pidSchema + `}}`,
		ActionProcessSignal: `{` + draft + `,"type":"object","additionalProperties":false,"required":["pid"],` +
			`"properties":{"pid":` + pidSchema + `,"signal":{"enum":` + signalEnum + `,"default":"SIGTERM"}}}`,
		ActionProcessStart: `{` + draft + `,"type":"object","additionalProperties":false,"required":["argv"],` +
			`"properties":{` + processStartProps + `}}`,
		ActionSupervisorStart: `{` + draft + `,"type":"object","additionalProperties":false,"required":["name","argv"],` +
			`"properties":{"name":` + nameSchema + `,` + processStartProps + `,` +
			`"restart":{"type":"object","additionalProperties":false,"properties":{` +
			`"max_restarts":{"type":"integer","minimum":-1,"description":"-1 restarts without limit, 0 never restarts"},` +
			`"initial_backoff_ms":{"type":"integer","minimum":0,"maximum":3600000},` +
			`"max_backoff_ms":{"type":"integer","minimum":0,"maximum":3600000},` +
			`"reset_after_ms":{"type":"integer","minimum":0,"maximum":86400000,"description":"a run this long forgets earlier restarts"}}}}}`,
		ActionSupervisorStop: `{` + draft + `,"type":"object","additionalProperties":false,"required":["name"],` +
			`"properties":{"name":` + nameSchema + `,"grace_ms":` + graceMS + `}}`,
		ActionSupervisorStatus: `{` + draft + `,"type":"object","additionalProperties":false,` +
			`"properties":{"name":` + nameSchema + `}}`,
		ActionFileRead: `{` + draft + `,"type":"object","additionalProperties":false,"required":["path"],` +
			`"properties":{"path":` + pathSchema + `,"max_bytes":{"type":"integer","minimum":1,"maximum":16777216}}}`,
		ActionFileWrite: `{` + draft + `,"type":"object","additionalProperties":false,"required":["path","content"],` +
			`"properties":{"path":` + pathSchema + `,"content":{"type":"string"},` +
			`"encoding":{"enum":["utf-8","base64"],"default":"utf-8"},"mode":` + modeSchema + `}}`,
		ActionFileStat: `{` + draft + `,"type":"object","additionalProperties":false,"required":["path"],` +
			`"properties":{"path":` + pathSchema + `}}`,
		ActionFileRemove: `{` + draft + `,"type":"object","additionalProperties":false,"required":["path"],` +
			`"properties":{"path":` + pathSchema + `,"recursive":{"type":"boolean"}}}`,
		ActionFileMkdir: `{` + draft + `,"type":"object","additionalProperties":false,"required":["path"],` +
			`"properties":{"path":` + pathSchema + `,"mode":` + modeSchema + `}}`,
		ActionNetTCP: `{` + draft + `,"type":"object","additionalProperties":false,"required":["host","port"],` +
			`"properties":{"host":{"type":"string","minLength":1,"maxLength":253},` +
			`"port":{"type":"integer","minimum":1,"maximum":65535},` +
			`"timeout_ms":{"type":"integer","minimum":1,"maximum":60000,"default":3000}}}`,
		ActionNetHTTP: `{` + draft + `,"type":"object","additionalProperties":false,"required":["url"],` +
			`"properties":{"url":{"type":"string","minLength":8,"maxLength":2048,"pattern":"^https?://"},` +
			`"expect_status":{"type":"integer","minimum":100,"maximum":599},` +
			`"timeout_ms":{"type":"integer","minimum":1,"maximum":60000,"default":3000}}}`,
		ActionNetDNS: `{` + draft + `,"type":"object","additionalProperties":false,"required":["name"],` +
			`"properties":{"name":{"type":"string","minLength":1,"maxLength":253}}}`,
	}
}

// JobSchemas returns the argument schemas of the job kinds "exec" and "script".
func JobSchemas() map[string]string {
	return map[string]string{
		JobExec: `{` + draft + `,"type":"object","additionalProperties":false,"required":["argv"],` +
			`"properties":{"argv":` + argvSchema + `,` + runProps + `}}`,
		JobScript: `{` + draft + `,"type":"object","additionalProperties":false,"required":["interpreter","body"],` +
			`"properties":{"interpreter":{"enum":` + interpreterEnum + `},` +
			`"body":{"type":"string","minLength":1},` +
			`"args":{"type":"array","items":{"type":"string"}},` + runProps + `}}`,
	}
}
