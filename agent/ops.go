package agent

import (
	"encoding/json"
	"time"
)

// The GraphQL operations the agent sends. They are fixed documents (checked
// against the schema in a test), so the agent needs no GraphQL library.

const agentJobFields = `cursor attempt leaseUntil cancelRequested
  job { id timeoutSeconds graceSeconds queue
    spec { kind action args exec { argv env { name value } stdin workdir } script { interpreter body } } }`

const (
	opEnroll = `mutation Enroll($input: EnrollAgentInput!) {
  enrollAgent(input: $input) { credential node { id hostname } } }`

	opAgentJobs = `subscription AgentJobs($nodeId: ID!, $after: Cursor) {
  agentJobs(nodeId: $nodeId, after: $after) { ` + agentJobFields + ` } }`

	opPoll = `mutation Poll($input: PollAgentJobsInput!) {
  pollAgentJobs(input: $input) { cursor jobs { ` + agentJobFields + ` } } }`

	opAcknowledge = `mutation Acknowledge($input: AgentJobInput!) {
  acknowledgeJob(input: $input) { duplicate } }`

	opStart = `mutation Start($input: AgentJobInput!) {
  startJob(input: $input) { duplicate } }`

	opAppendLog = `mutation AppendLog($input: AppendJobLogInput!) {
  appendJobLog(input: $input) { accepted lastSeq } }`

	opFinish = `mutation Finish($input: FinishJobInput!) {
  finishJob(input: $input) { duplicate } }`

	opHeartbeat = `mutation Heartbeat($input: HeartbeatInput!) {
  heartbeat(input: $input) { serverTime intervalSeconds cancelJobIds } }`

	opReportFacts = `mutation ReportFacts($input: ReportFactsInput!) {
  reportFacts(input: $input) { node { id } } }`

	opReportStats = `mutation ReportStats($input: ReportStatsInput!) {
  reportStats(input: $input) { accepted } }`
)

// Operations lists every document the agent sends, by operation name.
var Operations = map[string]string{
	"Enroll": opEnroll, "AgentJobs": opAgentJobs, "Poll": opPoll, "Acknowledge": opAcknowledge,
	"Start": opStart, "AppendLog": opAppendLog, "Finish": opFinish, "Heartbeat": opHeartbeat,
	"ReportFacts": opReportFacts, "ReportStats": opReportStats,
}

// Lease is an AgentJob as the control plane sends it: a job leased to this
// node, or the news that it is to stop.
type Lease struct {
	Cursor          string    `json:"cursor"`
	Attempt         int       `json:"attempt"`
	LeaseUntil      time.Time `json:"leaseUntil"`
	CancelRequested bool      `json:"cancelRequested"`
	Job             Job       `json:"job"`
}

// Job is what the agent needs of a job to run it.
type Job struct {
	ID             string  `json:"id"`
	TimeoutSeconds int     `json:"timeoutSeconds"`
	GraceSeconds   int     `json:"graceSeconds"`
	Queue          *string `json:"queue"`
	Spec           Spec    `json:"spec"`
}

// Spec is what to run: a SAL action, a program, or a script.
type Spec struct {
	Kind   string          `json:"kind"` // ACTION, EXEC, SCRIPT
	Action *string         `json:"action"`
	Args   json.RawMessage `json:"args"`
	Exec   *struct {
		Argv    []string `json:"argv"`
		Env     []EnvVar `json:"env"`
		Stdin   *string  `json:"stdin"`
		Workdir *string  `json:"workdir"`
	} `json:"exec"`
	Script *struct {
		Interpreter string `json:"interpreter"`
		Body        string `json:"body"`
	} `json:"script"`
}

// EnvVar is one environment variable of an exec job.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Result is how a job attempt ended, as the runner records it and the
// control plane receives it.
type Result struct {
	Outcome         string          `json:"outcome"` // SUCCEEDED, FAILED, TIMED_OUT, CANCELLED
	ExitCode        int             `json:"exitCode"`
	Output          json.RawMessage `json:"output,omitempty"`
	Error           *string         `json:"error,omitempty"`
	CPUTimeMs       int64           `json:"cpuTimeMs"`
	PeakMemoryBytes int64           `json:"peakMemoryBytes"`
}

// Job outcomes.
const (
	OutcomeSucceeded = "SUCCEEDED"
	OutcomeFailed    = "FAILED"
	OutcomeTimedOut  = "TIMED_OUT"
	OutcomeCancelled = "CANCELLED"
)
