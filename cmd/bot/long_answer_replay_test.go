package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/delivery"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	"github.com/switchboard-bot/switchboard/render"
)

// forgetAnswer deletes the run's record of its answer, leaving the file's: what Redis holds
// when a process died between sending the file and recording the answer.
func forgetAnswer(t *testing.T, prefix, runID string) {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rc.Close()
	if n, err := rc.Del(context.Background(), prefix+"run:"+runID+":out:"+delivery.StepFinal).Result(); err != nil || n != 1 {
		t.Fatalf("deleting the answer's record: %d, %v", n, err)
	}
}

// fileRun returns the id of the one run whose long answer's rest was recorded as sent as a
// file (its outbound record, delivery.StepFile, on the real Redis), once its answer is recorded
// too: the run's delivery writes that record last, after the file is shared.
func fileRun(t *testing.T, prefix string) string {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rc.Close()
	ctx := context.Background()
	var id string
	waitFor(t, "the long answer's file and answer records", 30*time.Second, func() bool {
		var keys []string
		it := rc.Scan(ctx, 0, prefix+"run:*:out:"+delivery.StepFile, 100).Iterator()
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		if it.Err() != nil || len(keys) != 1 {
			return false
		}
		id = strings.TrimSuffix(strings.TrimPrefix(keys[0], prefix+"run:"), ":out:"+delivery.StepFile)
		n, err := rc.Exists(ctx, prefix+"run:"+id+":out:"+delivery.StepFinal).Result()
		return err == nil && n == 1
	})
	return id
}

// replayAnswer delivers the run's answer again as its second attempt would, through a new
// Delivery — another process, knowing only what Redis recorded — on the running app's channels.
func replayAnswer(t *testing.T, r *running, runID string, k conv.Key, replyTo, answer string) {
	t.Helper()
	byName := map[string]channels.Channel{}
	for _, ch := range r.chans {
		byName[ch.Name()] = ch
	}
	key, err := render.NewKey(actionSecret(r.core))
	if err != nil {
		t.Fatal(err)
	}
	d, err := delivery.New(delivery.Options{Channels: byName, Records: r.core.threads.Records(), ActionKey: key,
		Logger: r.log, PlaceholderAfter: time.Hour, MaxAnswerMessages: r.cfg.Runs.MaxAnswerMessages})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, ev := range []runs.Event{{Kind: runs.EventStarted}, {Kind: runs.EventFinal, Text: answer}} {
		ev.RunID, ev.Step, ev.Conv, ev.Attempt, ev.ReplyTo, ev.At = runID, i+1, k, 2, replyTo, time.Now()
		if err := d.Deliver(context.Background(), ev); err != nil {
			t.Fatalf("replaying %s: %v", ev.Kind, err)
		}
	}
}

// TestSlackLongAnswerReplayPostsNothingTwice proves a long answer delivered once — head and
// answer.md — is not delivered again by the run's second attempt in another process: the
// outbound records (the answer's, and delivery.StepFile for the file) make it skip both, so
// nothing is posted or uploaded twice. And when only the file's record survived (the process
// died between the file and the answer's record), the replay sends the head again — Slack has
// no idempotent post — but never the file.
func TestSlackLongAnswerReplayPostsNothingTwice(t *testing.T) {
	t.Parallel()
	answer, _ := longAnswer(200_000)
	e := newSlackE2E(t, func(c *config.Config) { c.Runs.MaxAnswerMessages = 1 })
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 4096}
	})
	r := e.start()
	root, _ := e.sl.PushMentionPair(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: slackfake.Mention() + " tell me everything"})
	waitFor(t, "the answer's file", 30*time.Second, func() bool { return len(e.sl.Uploads()) == 1 })
	runID := fileRun(t, e.cfg.Redis.Prefix)
	posts, uploads := e.sl.Count("chat.postMessage"), e.sl.Count("files.getUploadURLExternal")

	replayAnswer(t, r, runID, conv.Key{Platform: "slack", Workspace: slackfake.TeamID, Chat: "C0GEN", Thread: root}, root, answer)
	if n := e.sl.Count("chat.postMessage"); n != posts {
		t.Errorf("the replay posted %d more messages", n-posts)
	}
	if n, m := e.sl.Count("files.getUploadURLExternal"), len(e.sl.Uploads()); n != uploads || m != 1 {
		t.Errorf("after the replay: %d upload URLs asked (was %d), %d files shared; want the file once", n, uploads, m)
	}

	forgetAnswer(t, e.cfg.Redis.Prefix, runID)
	replayAnswer(t, r, runID, conv.Key{Platform: "slack", Workspace: slackfake.TeamID, Chat: "C0GEN", Thread: root}, root, answer)
	if n := e.sl.Count("files.getUploadURLExternal"); n != uploads {
		t.Errorf("a replay without the answer's record uploaded the file again (%d upload URLs, was %d)", n, uploads)
	}
}

// TestDiscordLongAnswerReplayPostsNothingTwice proves the same on Discord, where even a replay
// that finds only the file's record posts nothing twice: the head's messages carry nonces
// derived from the run (enforce_nonce), so Discord returns the messages it made, and the file
// is skipped by its record.
func TestDiscordLongAnswerReplayPostsNothingTwice(t *testing.T) {
	t.Parallel()
	answer, _ := longAnswer(50_000)
	e := newDiscordE2E(t, nil)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 4096}
	})
	r := e.start()
	guild := "700000000000000041"
	ch := e.dc.Guild(guild)
	mid := e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dAnn, Content: "tell me everything", MentionBot: true})
	waitFor(t, "the answer's file", 30*time.Second, func() bool { return len(e.dc.FilesPosted(mid)) == 1 })
	runID := fileRun(t, e.cfg.Redis.Prefix)
	posts := e.dc.Count("POST", discordfake.RouteMessages)

	replayAnswer(t, r, runID, conv.Key{Platform: "discord", Workspace: guild, Chat: ch, Thread: mid}, mid, answer)
	if n := e.dc.Count("POST", discordfake.RouteMessages); n != posts {
		t.Errorf("the replay posted %d more messages", n-posts)
	}
	if n := len(e.dc.FilesPosted(mid)); n != 1 {
		t.Errorf("%d files after the replay, want 1", n)
	}

	shown := len(e.dc.PostedByBot(mid))
	forgetAnswer(t, e.cfg.Redis.Prefix, runID)
	replayAnswer(t, r, runID, conv.Key{Platform: "discord", Workspace: guild, Chat: ch, Thread: mid}, mid, answer)
	if n := len(e.dc.PostedByBot(mid)); n != shown {
		t.Errorf("a replay without the answer's record left %d messages in the thread, was %d", n, shown)
	}
	if n := len(e.dc.FilesPosted(mid)); n != 1 {
		t.Errorf("%d files after a replay without the answer's record, want 1", n)
	}
}
