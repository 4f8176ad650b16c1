package main

import (
	"fmt"

	slackadapter "github.com/switchboard-bot/switchboard/adapters/slack"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/render"
)

// newSlack builds the Slack channel from slack.* and, in HTTP mode, mounts its three handlers
// (events, interactivity, slash command) on the shared listener.
func (a *app) newSlack(key render.Key) (*slackadapter.Channel, error) {
	s := a.cfg.Slack
	ch, err := slackadapter.New(slackadapter.Config{
		BotToken:           s.BotToken,
		AppToken:           s.AppToken,
		SigningSecret:      s.SigningSecret,
		APIURL:             s.APIURL,
		Mode:               slackadapter.Mode(s.Mode),
		Connections:        s.Connections,
		ThreadReplies:      slackadapter.ThreadReplies(s.ThreadReplies),
		ReplyInThread:      s.ReplyInThread,
		ReplyInThreadSet:   true,
		Command:            s.Command,
		AssistantStatusOff: !s.AssistantStatus,
		ActionKey:          key,
		Logger:             a.log.With("channel", "slack"),
		// A payload the adapter skipped as malformed is an inbound event that became no run.
		OnMalformed: func() { a.metrics.refused.WithLabelValues("slack", "malformed").Inc() },
	})
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	if s.Mode == config.SlackHTTP {
		a.webhooks[s.EventsPath] = ch.EventsHandler()
		a.webhooks[s.InteractionsPath] = ch.InteractionsHandler()
		a.webhooks[s.CommandsPath] = ch.CommandsHandler()
	}
	return ch, nil
}
