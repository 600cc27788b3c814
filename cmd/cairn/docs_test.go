package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command is in docs/cli.md's table, so the table stays the whole
// command line.
func TestEveryCommandIsDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var walk func(prefix string, c *cobra.Command)
	walk = func(prefix string, c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			path := strings.TrimSpace(prefix + " " + sub.Name())
			if !strings.Contains(doc, "`"+path) && !strings.Contains(doc, "/ `"+sub.Name()+"`") {
				t.Errorf("%s is not in docs/cli.md", path)
			}
			walk(path, sub)
		}
	}
	walk("cairn", newRootCommand(newApp(func(string) string { return "" }, strings.NewReader(""))))
}

// Every command's help shows how it is used: an example line starting
// with its own name.
func TestEveryCommandHasAnExample(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			if !strings.Contains(sub.Long+sub.Example, sub.CommandPath()) {
				t.Errorf("%s --help shows no example (a line with %q)", sub.CommandPath(), sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(newRootCommand(newApp(func(string) string { return "" }, strings.NewReader(""))))
}
