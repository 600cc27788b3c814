package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"cairn/domain/node"
	"cairn/graph/client"
	"cairn/internal/ptr"
)

// jobExitError carries a job's exit status out of `cairn run`: the command
// exits with it, as if the program had run here.
type jobExitError struct {
	jobID  string
	status string
	code   int
	reason string
}

func (e *jobExitError) Error() string {
	msg := fmt.Sprintf("job %s %s", e.jobID, strings.ToLower(strings.ReplaceAll(e.status, "_", " ")))
	if e.reason != "" {
		msg += ": " + e.reason
	}
	return msg
}

// ExitCode is the code cairn exits with.
func (e *jobExitError) ExitCode() int { return e.code }

// Exit codes of `cairn run` for jobs that did not end with a status of
// their own, after the conventions of timeout(1) and shells.
const (
	exitTimedOut  = 124
	exitCancelled = 130
)

const submitMutation = `mutation ($input: SubmitJobInput!) { submitJob(input: $input) { job { id } } }`

const cancelMutation = `mutation ($id: ID!) { cancelJob(input: {jobId: $id, reason: "interrupted by cairn run"}) { job { status } } }`

const jobResultQuery = `query ($id: ID!) { job(id: $id) { id status result { exitCode error } cancelReason lostReason
  counts { succeeded failed timedOut cancelled lost }
  children(first: 500) { edges { node { id status target { nodeId } result { exitCode } } } } } }`

type jobResult struct {
	Job *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Result *struct {
			ExitCode int     `json:"exitCode"`
			Error    *string `json:"error"`
		} `json:"result"`
		CancelReason *string `json:"cancelReason"`
		LostReason   *string `json:"lostReason"`
		Children     struct {
			Edges []struct {
				Node struct {
					ID     string `json:"id"`
					Status string `json:"status"`
					Target struct {
						NodeID *string `json:"nodeId"`
					} `json:"target"`
					Result *struct {
						ExitCode int `json:"exitCode"`
					} `json:"result"`
				} `json:"node"`
			} `json:"edges"`
		} `json:"children"`
	} `json:"job"`
}

func newRunCommand(a *app) *cobra.Command {
	var (
		node, location, queue, jobID, workdir string
		interpreter                           string
		selector, env                         []string
		all, stdin, detach                    bool
		maxParallel, retries                  int
		timeout, grace, backoff               time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run (--node NODE | --selector EXPR | --location LOCATION | --all) [flags] -- PROGRAM [ARG...]",
		Short: "Run a program on a node, on nodes picked by labels or location, or on every node, and follow its output",
		Long: `Run a program on one node (--node), on one node of a set, or on every node of
the set (--all), and print its output as it runs. The set is the nodes of a
location (--location) meeting the label selector (--selector), or with --all
alone every node. A selector is written as Kubernetes writes them:
key=value, key!=value, key in (a,b), key notin (a,b), key (the label exists),
!key (it does not), separated by commas or given as several --selector.

cairn exits with the program's exit status; 124 when it timed out, 130 when
it was cancelled. On a fan-out (--all), each line is prefixed with its node,
and cairn exits 0 only if every node succeeded. A set that selects no node
is refused before anything runs.

The program runs without a shell; with --script, PROGRAM is instead a script
body run by the interpreter (sh, bash or python3). Interrupting cairn cancels
the job.

    cairn run --node n1 -- uname -a
    cairn run --selector role=web --all --max-parallel 5 -- systemctl restart nginx
    cairn run --location ams --selector 'zone in (a,b), !gpu' --all -- uptime
    cairn run --all -- df -h /
    cairn run --node n1 --script sh -- 'for i in 1 2 3; do echo $i; sleep 1; done'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{fmt.Errorf("give the program to run after --, e.g. cairn run --node n1 -- uptime")}
			}
			return runTarget{node: node, selector: selector, location: location, all: all}.check()
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if node != "" {
				n, err := resolveNode(cmd.Context(), a, c, node)
				if err != nil {
					return err
				}
				node = n.ID
				if n.Status == "DOWN" || n.Status == "DECOMMISSIONED" {
					return fmt.Errorf("node %s is %s: nobody would take the job (a job pinned to it is cancelled at once); run it on another node, or bring the agent back first",
						n.Hostname, strings.ToLower(n.Status))
				}
				if why := nodeWait(n); why != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), why)
				}
			}
			input, err := runInput(runTarget{node: node, selector: selector, location: location, all: all, maxParallel: maxParallel},
				args, interpreter, env, workdir, stdin, a.stdin)
			if err != nil {
				return err
			}
			if jobID != "" {
				input["jobId"] = jobID
			}
			if queue != "" {
				input["queue"] = queue
			}
			if timeout > 0 {
				input["timeoutSeconds"] = int((timeout + time.Second - 1) / time.Second)
			}
			if cmd.Flags().Changed("grace") {
				input["graceSeconds"] = int(grace / time.Second)
			}
			if retries > 0 {
				input["retry"] = map[string]any{"max": retries, "backoffSeconds": backoff.Seconds()}
			}
			return runJob(cmd.Context(), a, c, input, detach, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	addTargetFlags(f, &node, &location, &selector, &all)
	f.IntVar(&maxParallel, "max-parallel", 0, "with --all: at most this many nodes at once (0: no limit)")
	f.StringVar(&interpreter, "script", "", "run PROGRAM as a script body with this interpreter (sh, bash, python3)")
	f.StringArrayVarP(&env, "env", "e", nil, "environment variable NAME=VALUE for the program (repeat for several)")
	f.StringVar(&workdir, "workdir", "", "absolute working directory on the node")
	f.BoolVar(&stdin, "stdin", false, "send this command's standard input to the program (at most 1 MiB)")
	f.DurationVar(&timeout, "timeout-after", 0, "stop the program after this long (default: the server's, 1h)")
	f.DurationVar(&grace, "grace", 10*time.Second, "time between the stop signal and the kill")
	f.IntVar(&retries, "retries", 0, "run again this many times when it fails")
	f.DurationVar(&backoff, "backoff", 10*time.Second, "wait before the first retry, doubling each time")
	f.StringVar(&queue, "queue", "", "serial queue: jobs of one queue run one at a time on a node")
	f.StringVar(&jobID, "job-id", "", "the job's id; a job id that exists is refused, so a retried cairn run does not run twice")
	f.BoolVarP(&detach, "detach", "d", false, "print the job id and return without following")
	return cmd
}

// nodeWait says, for a node that cannot run a job now, why and how long the
// job will wait; "" for a node that can.
func nodeWait(n nodeRef) string {
	switch n.Status {
	case "ONLINE", "ENROLLED":
		if n.Cordoned {
			return fmt.Sprintf("node %s is cordoned: the job waits in the queue until it is undrained (cairn nodes undrain %s; interrupt to cancel it)", n.Hostname, n.Hostname)
		}
		return ""
	case "DRAINING", "DRAINED":
		return fmt.Sprintf("node %s is %s: the job waits in the queue until it is undrained (cairn nodes undrain %s; interrupt to cancel it)",
			n.Hostname, strings.ToLower(n.Status), n.Hostname)
	case "DISCONNECTED":
		since := ""
		if n.DisconnectedAt != nil {
			since = " since " + *n.DisconnectedAt
		}
		return fmt.Sprintf("node %s is disconnected%s: the job waits for its agent to come back, and is lost if the node is marked down first (interrupt to cancel it)",
			n.Hostname, since)
	}
	return fmt.Sprintf("node %s is %s", n.Hostname, strings.ToLower(n.Status))
}

// addTargetFlags adds the flags that say where a job runs, for cairn run
// and cairn schedules create.
func addTargetFlags(f *pflag.FlagSet, node, location *string, selector *[]string, all *bool) {
	f.StringVar(node, "node", "", "run on this node (id or hostname)")
	f.StringArrayVar(selector, "selector", nil, "run on nodes whose labels meet this selector, e.g. 'role=web, zone in (a,b)' (repeat for several)")
	f.StringVar(location, "location", "", "run on the nodes of this location")
	f.BoolVar(all, "all", false, "run on every node of the set (alone: on every node)")
}

// runTarget is where `cairn run` runs its program.
type runTarget struct {
	node        string
	selector    []string
	location    string
	all         bool
	maxParallel int
}

// check is a usage error for a target given twice over, or not at all.
func (t runTarget) check() error {
	set := len(t.selector) > 0 || t.location != ""
	switch {
	case t.node != "" && (set || t.all):
		return &usageError{fmt.Errorf("--node runs on one node: leave out --selector, --location and --all")}
	case t.node == "" && !set && !t.all:
		return &usageError{fmt.Errorf("say where to run it: --node NODE, --selector EXPR, --location LOCATION, or --all for every node")}
	}
	return nil
}

// apiTarget is the target as the API takes it.
func (t runTarget) apiTarget() (map[string]any, error) {
	if t.node != "" {
		return map[string]any{"nodeId": t.node}, nil
	}
	target := map[string]any{"mode": "ANY"}
	if t.all {
		target["mode"] = "ALL"
		if t.maxParallel > 0 {
			target["maxParallel"] = t.maxParallel
		}
	}
	if t.location != "" {
		target["location"] = t.location
	}
	if len(t.selector) > 0 {
		// Checked here for a usage error at once; the server reads the
		// same text with the same parser.
		match := strings.Join(t.selector, ",")
		if _, err := node.ParseSelector(match); err != nil {
			return nil, &usageError{fmt.Errorf("--selector: %w", err)}
		}
		target["match"] = match
	}
	if t.location == "" && len(t.selector) == 0 {
		target["every"] = true
	}
	return target, nil
}

// runInput builds the submission of `cairn run`.
func runInput(where runTarget, args []string, interpreter string,
	env []string, workdir string, withStdin bool, stdin io.Reader) (map[string]any, error) {
	target, err := where.apiTarget()
	if err != nil {
		return nil, err
	}
	var spec map[string]any
	if interpreter != "" {
		if len(args) != 1 || len(env) > 0 || workdir != "" || withStdin {
			return nil, &usageError{fmt.Errorf("--script takes the script body as its one argument, without --env, --workdir or --stdin")}
		}
		spec = map[string]any{"kind": "SCRIPT", "script": map[string]any{"interpreter": interpreter, "body": args[0]}}
	} else {
		exec := map[string]any{"argv": args}
		var vars []map[string]string
		for _, e := range env {
			k, v, ok := strings.Cut(e, "=")
			if !ok || k == "" {
				return nil, &usageError{fmt.Errorf("--env %q: write it as NAME=VALUE", e)}
			}
			vars = append(vars, map[string]string{"name": k, "value": v})
		}
		if len(vars) > 0 {
			exec["env"] = vars
		}
		if workdir != "" {
			exec["workdir"] = workdir
		}
		if withStdin {
			b, err := io.ReadAll(io.LimitReader(stdin, 1<<20+1))
			if err != nil {
				return nil, fmt.Errorf("read standard input: %w", err)
			}
			if len(b) > 1<<20 {
				return nil, &usageError{fmt.Errorf("--stdin: standard input is over 1 MiB; copy the data to the node with a file action instead")}
			}
			exec["stdin"] = string(b)
		}
		spec = map[string]any{"kind": "EXEC", "exec": exec}
	}
	return map[string]any{"spec": spec, "target": target}, nil
}

// runJob submits the job, follows its output and returns how it ended.
// Interrupting it cancels the job and waits (a while) for the job to stop.
func runJob(ctx context.Context, a *app, c *client.Client, input map[string]any, detach bool, stdout, stderr io.Writer) error {
	var sub struct {
		SubmitJob struct {
			Job struct {
				ID string `json:"id"`
			} `json:"job"`
		} `json:"submitJob"`
	}
	qctx, cancel := context.WithTimeout(ctx, a.timeout)
	err := c.Do(qctx, submitMutation, map[string]any{"input": input}, &sub)
	cancel()
	if err != nil {
		return err
	}
	id := sub.SubmitJob.Job.ID
	if detach {
		fmt.Fprintln(stdout, id)
		return nil
	}
	fmt.Fprintf(stderr, "cairn: job %s submitted\n", id)

	// The output is followed past an interrupt: the job is cancelled and
	// what it prints while it stops is still shown.
	follow, stopFollowing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopFollowing()
	go func() {
		select {
		case <-ctx.Done():
		case <-follow.Done():
			return
		}
		fmt.Fprintf(stderr, "cairn: interrupted; cancelling job %s\n", id)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.timeout)
		if err := c.Do(cctx, cancelMutation, map[string]any{"id": id}, nil); err != nil {
			fmt.Fprintf(stderr, "cairn: could not cancel job %s: %v\n", id, err)
		}
		cancel()
		// Give the job its grace to stop, then stop waiting.
		select {
		case <-follow.Done():
		case <-time.After(time.Minute):
			stopFollowing()
		}
	}()
	w := newLogWriter(stdout, stderr, a.output == outputJSON)
	if err := jobOutput(follow, a, c, id, true, w, stderr); err != nil && follow.Err() == nil {
		return err
	}
	// The output ends with the job, but a fan-out's children are read from
	// the read models, which may be a moment behind: read until all ended.
	var res jobResult
	qctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), a.timeout)
	defer cancel()
	for {
		res = jobResult{}
		if err := c.Do(qctx, jobResultQuery, map[string]any{"id": id}, &res); err != nil {
			return err
		}
		if res.Job == nil {
			return fmt.Errorf("job %s vanished", id)
		}
		if ended(res) {
			break
		}
		select {
		case <-qctx.Done():
			return exitOf(res)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return exitOf(res)
}

// ended reports whether the job and every child it shows have ended.
func ended(res jobResult) bool {
	terminal := func(s string) bool {
		switch s {
		case "SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED", "LOST":
			return true
		}
		return false
	}
	if !terminal(res.Job.Status) {
		return false
	}
	for _, k := range res.Job.Children.Edges {
		if !terminal(k.Node.Status) {
			return false
		}
	}
	return true
}

// exitOf turns how a job ended into cairn's exit.
func exitOf(res jobResult) error {
	j := res.Job
	e := &jobExitError{jobID: j.ID, status: j.Status}
	switch j.Status {
	case "SUCCEEDED":
		return nil
	case "TIMED_OUT":
		e.code = exitTimedOut
	case "CANCELLED":
		e.code, e.reason = exitCancelled, ptr.Value(j.CancelReason)
	case "LOST":
		e.code, e.reason = exitError, ptr.Value(j.LostReason)
	case "FAILED":
		e.code = exitError
		if j.Result != nil {
			e.code = j.Result.ExitCode
			e.reason = ptr.Value(j.Result.Error)
			if e.code <= 0 || e.code > 255 {
				e.code = exitError
			}
		}
	default:
		e.code, e.reason = exitError, "it has not ended"
	}
	// A fan-out fails with the first failed child's status.
	for _, k := range j.Children.Edges {
		if n := k.Node; n.Status != "SUCCEEDED" {
			e.reason = fmt.Sprintf("node %s: %s", ptr.Value(n.Target.NodeID), strings.ToLower(n.Status))
			if n.Result != nil && n.Result.ExitCode > 0 && n.Result.ExitCode < 256 {
				e.code = n.Result.ExitCode
			}
			break
		}
	}
	return e
}
