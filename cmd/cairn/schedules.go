package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"
)

type scheduleRow struct {
	ID           string  `json:"id"`
	Status       string  `json:"status"`
	EverySeconds *int    `json:"everySeconds"`
	Cron         *string `json:"cron"`
	Job          struct {
		Spec struct {
			Kind   string  `json:"kind"`
			Action *string `json:"action"`
		} `json:"spec"`
		Target struct {
			NodeID *string `json:"nodeId"`
			Node   *struct {
				Hostname string `json:"hostname"`
			} `json:"node"`
			Selector []label `json:"selector"`
			Location *string `json:"location"`
			Every    bool    `json:"every"`
			Mode     *string `json:"mode"`
		} `json:"target"`
	} `json:"job"`
	Submitter string     `json:"submitter"`
	NextRunAt *time.Time `json:"nextRunAt"`
	UpdatedAt *time.Time `json:"updatedAt"`
}

const scheduleFields = `id status everySeconds cron job { spec { kind action } target { nodeId node { hostname } selector { key value } location every mode } } submitter nextRunAt updatedAt`

func newSchedulesCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "Create, show, pause, resume and delete job schedules",
		Long: `A schedule submits a job at an interval (--every) or at the instants of a
cron expression (--cron), to a node or to nodes picked as cairn run picks
them. Its id is yours to choose.

    cairn schedules create nightly-backup --cron "0 3 * * *" --node db-1 -- /usr/local/bin/backup
    cairn schedules show nightly-backup
    cairn schedules pause nightly-backup --reason "migration tonight"`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newScheduleCreateCommand(a), newScheduleShowCommand(a),
		newScheduleStateCommand(a, "pause", "pauseSchedule", "Pause a schedule: it submits nothing until resumed"),
		newScheduleStateCommand(a, "resume", "resumeSchedule", "Resume a paused schedule"),
		newScheduleStateCommand(a, "delete", "deleteSchedule", "Delete a schedule for good"))
	return cmd
}

func (a *app) writeSchedule(cmd *cobra.Command, s scheduleRow) error {
	if a.structured() {
		return a.writeData(cmd.OutOrStdout(), s)
	}
	schedule := "-"
	switch {
	case s.Cron != nil:
		schedule = "cron " + *s.Cron
	case s.EverySeconds != nil:
		schedule = "every " + (time.Duration(*s.EverySeconds) * time.Second).String()
	}
	where := "-"
	t := s.Job.Target
	switch {
	case t.Node != nil:
		where = t.Node.Hostname
	case t.NodeID != nil:
		where = *t.NodeID
	default:
		where = labelsText(t.Selector)
		if t.Location != nil {
			where += " in " + *t.Location
		}
		if t.Every && len(t.Selector) == 0 && t.Location == nil {
			where = "every node"
		}
		if t.Mode != nil && *t.Mode == "ALL" {
			where = "all of " + where
		}
	}
	what := s.Job.Spec.Kind
	if s.Job.Spec.Action != nil {
		what += " " + *s.Job.Spec.Action
	}
	return writeTable(cmd.OutOrStdout(), []string{"SCHEDULE", "STATUS", "WHEN", "RUNS", "ON", "NEXT"},
		[][]string{{s.ID, s.Status, schedule, what, where, when(s.NextRunAt)}})
}

func newScheduleCreateCommand(a *app) *cobra.Command {
	var (
		node, location, interpreter, cron string
		selector, env                     []string
		all                               bool
		every                             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create ID (--every DURATION | --cron EXPR) (--node NODE | --selector EXPR | --location LOCATION | --all) -- PROGRAM [ARG...]",
		Short: "Create a schedule that submits a job at an interval or at cron instants",
		Long: `Create a schedule. The job is written as for cairn run: a program and its
arguments after --, or a script body with --script.

    cairn schedules create disk-report --every 1h --all -- df -h /
    cairn schedules create nightly-backup --cron "0 3 * * *" --node db-1 -- /usr/local/bin/backup`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return &usageError{errors.New("give the schedule's id, then the program after --")}
			}
			if (every > 0) == (cron != "") {
				return &usageError{errors.New("say when: --every DURATION or --cron EXPR, one of them")}
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
			}
			job, err := runInput(runTarget{node: node, selector: selector, location: location, all: all}, args[1:], interpreter, env, "", false, nil)
			if err != nil {
				return err
			}
			in := map[string]any{"scheduleId": args[0], "job": job}
			if every > 0 {
				in["everySeconds"] = int(every / time.Second)
			} else {
				in["cron"] = cron
			}
			var p struct{ Schedule scheduleRow }
			if err := a.mutate(cmd.Context(), c, "createSchedule", "CreateScheduleInput", "schedule { "+scheduleFields+" }", in, &p); err != nil {
				return err
			}
			return a.writeSchedule(cmd, p.Schedule)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&every, "every", 0, "submit the job at this interval (at least 1m)")
	f.StringVar(&cron, "cron", "", "submit the job at the instants of this cron expression (5 fields, UTC)")
	addTargetFlags(f, &node, &location, &selector, &all)
	f.StringVar(&interpreter, "script", "", "PROGRAM is a script body for this interpreter (sh, bash, python3)")
	f.StringArrayVarP(&env, "env", "e", nil, "environment variable NAME=VALUE (repeat for several)")
	return cmd
}

func newScheduleShowCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "show ID",
		Short:   "Show a schedule: when it runs, what, where, and when next",
		Example: "  cairn schedules show nightly-backup -o yaml",
		Args:    argsOne("schedule id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var res struct{ Schedule *scheduleRow }
			if err := a.do(cmd.Context(), c, `query($id: ID!) { schedule(id: $id) { `+scheduleFields+` } }`, map[string]any{"id": args[0]}, &res); err != nil {
				return err
			}
			if res.Schedule == nil {
				return &NotFoundError{Kind: "schedule", Ref: args[0]}
			}
			return a.writeSchedule(cmd, *res.Schedule)
		},
	}
}

func newScheduleStateCommand(a *app, verb, mutation, short string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     verb + " ID",
		Short:   short,
		Example: "  cairn schedules " + verb + " nightly-backup",
		Args:    argsOne("schedule id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var p struct{ Schedule scheduleRow }
			if err := a.mutate(cmd.Context(), c, mutation, "ScheduleInput", "schedule { "+scheduleFields+" }",
				withOptional(map[string]any{"scheduleId": args[0]}, "reason", reason), &p); err != nil {
				return err
			}
			return a.writeSchedule(cmd, p.Schedule)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}
