package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/adapters/console"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// chat runs the bot in the terminal: each line typed is a run handed to the lead chain, and
// its events are printed. With no Redis configured the store is embedded.
func chat(ctx context.Context, cfg *config.Config, stdin io.Reader, stdout, stderr io.Writer) error {
	log := newLogger(cfg, stderr)
	c, err := newCore(ctx, cfg, log, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if c.demo {
		fmt.Fprintln(stdout, "Switchboard chat — running the offline demo model (not an AI). Set DEEPSEEK_API_KEY for a real one.")
	} else {
		fmt.Fprintln(stdout, "Switchboard chat — model", cfg.LLM.Model)
	}
	fmt.Fprintln(stdout, "Type a message and press Enter; Ctrl-D to quit.")

	var pending *runs.Form
	sc := bufio.NewScanner(stdin)
	for {
		fmt.Fprint(stdout, "you> ")
		if !sc.Scan() {
			fmt.Fprintln(stdout)
			return sc.Err()
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		env := &runs.Envelope{
			RunID: runs.NewRunID(), Kind: runs.KindMessage, Conv: console.Conv, Text: line,
			Identity:  runs.Identity{Platform: console.Platform, ChannelUserID: "local", DisplayName: "you"},
			CreatedAt: time.Now(), Attempt: 1,
		}
		if pending != nil {
			env.Kind, env.ClarificationID = runs.KindClarificationAnswer, pending.ID
			env.Text = answerFromLine(*pending, line)
			pending = nil
		}
		sink := runs.SinkFunc(func(_ context.Context, ev runs.Event) error {
			switch ev.Kind {
			case runs.EventProgress:
				fmt.Fprintf(stdout, "  … %s\n", ev.Text)
			case runs.EventSubagentResult:
				fmt.Fprintf(stdout, "  ✓ %s (%s)\n", ev.Subagent.Name, ev.Subagent.StopReason)
			case runs.EventFinal:
				fmt.Fprintf(stdout, "bot> %s\n", ev.Text)
			case runs.EventClarification:
				f := ev.Form
				pending = f
				fmt.Fprintf(stdout, "bot> %s\n", f.Question)
				for _, fl := range f.Fields {
					for i, o := range fl.Options {
						fmt.Fprintf(stdout, "  %d. %s\n", i+1, o)
					}
				}
			case runs.EventFailed, runs.EventCancelled:
				fmt.Fprintf(stdout, "bot> %s\n", ev.Reason)
			}
			return nil
		})
		if _, err := c.team.HandleRun(ctx, runs.NewRun(env, sink)); err != nil {
			fmt.Fprintf(stdout, "bot> (that did not work: %v)\n", err)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// answerFromLine turns "2" into the second option of the form's first choice field.
func answerFromLine(f runs.Form, line string) string {
	for _, fl := range f.Fields {
		var n int
		if _, err := fmt.Sscanf(line, "%d", &n); err == nil && n >= 1 && n <= len(fl.Options) {
			return fl.Label + ": " + fl.Options[n-1]
		}
	}
	return line
}
