package delivery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// fileChannel is the fake platform with files: Pages counts the fake's pieces, SendFile keeps
// the files (or fails when told to).
type fileChannel struct {
	*fakeChannel
	mu    sync.Mutex
	files []string
	to    []channels.Target
	keys  []string
	fail  bool
}

func (f *fileChannel) Pages(m channels.Message) (int, error) {
	n := f.PieceLen
	if n == 0 {
		n = 4000
	}
	return max(1, (len(chantest.Show(m))+n-1)/n), nil
}

func (f *fileChannel) SendFile(_ context.Context, to channels.Target, file channels.File) (channels.MessageRef, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.to = append(f.to, to)
	f.keys = append(f.keys, file.Key)
	if f.fail {
		return channels.MessageRef{}, errors.New("upload refused")
	}
	if file.Name != answerFileName || file.Caption == "" {
		return channels.MessageRef{}, fmt.Errorf("file %q with caption %q", file.Name, file.Caption)
	}
	f.files = append(f.files, string(file.Data))
	return channels.MessageRef{Conv: to.Conv, IDs: []string{"file-" + fmt.Sprint(len(f.files))}}, nil
}

func (f *fileChannel) sentKeys() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return append([]string(nil), f.keys...)
}

func (f *fileChannel) sentFiles() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return append([]string(nil), f.files...)
}

// paragraphs is an answer of n numbered paragraphs.
func paragraphs(n int) (string, []string) {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf("Paragraph %03d says a few words, enough to take some room.", i))
	}
	return strings.Join(ps, "\n\n"), ps
}

// inOrderOnce checks that every paragraph is in text exactly once, in order.
func inOrderOnce(t *testing.T, text string, ps []string) {
	t.Helper()
	pos := 0
	for i, p := range ps {
		if strings.Count(text, p) != 1 {
			t.Fatalf("paragraph %d appears %d times", i, strings.Count(text, p))
		}
		j := strings.Index(text[pos:], p)
		if j < 0 {
			t.Fatalf("paragraph %d is out of order", i)
		}
		pos += j + len(p)
	}
}

// TestLongAnswerSendsTheRestAsAFile proves delivery keeps an answer within MaxAnswerMessages on
// a channel that counts its messages and takes files: the head of the answer in at most that
// many messages, cut at a paragraph, the rest as one answer.md file — once, even when the run
// is delivered again by another attempt.
func TestLongAnswerSendsTheRestAsAFile(t *testing.T) {
	h := newDeliveryHarness(t)
	h.ch.PieceLen = 600
	ch := &fileChannel{fakeChannel: h.ch}
	// A grace period longer than the test: the answer is the run's one Send.
	opts := func(o *Options) { o.MaxAnswerMessages, o.PlaceholderAfter = 2, time.Hour }
	answer, ps := paragraphs(80)
	h.deliver(h.delivery(ch, opts), attempt(1, "", started("r1"), final("r1", answer))...)

	files := ch.sentFiles()
	if len(files) != 1 {
		t.Fatalf("%d files sent, want 1", len(files))
	}
	sends := h.ch.Sent()
	if len(sends) != 1 || len(sends[0].IDs) > 2 {
		t.Fatalf("sends %d (first of %d messages), want one card of at most 2 messages", len(sends), len(sends[0].IDs))
	}
	if !strings.Contains(sends[0].Text, answerFileName) {
		t.Errorf("the card does not say the rest is in the file: %q", sends[0].Text)
	}
	if !strings.HasPrefix(files[0], "Paragraph ") {
		t.Errorf("the file does not start at a paragraph: %.40q", files[0])
	}
	inOrderOnce(t, sends[0].Text+"\n"+files[0], ps)

	// Another attempt, in another process: nothing is sent again.
	h.deliver(h.delivery(ch, opts), attempt(2, "", started("r1"), final("r1", answer))...)
	if n := len(ch.sentFiles()); n != 1 {
		t.Errorf("%d files after a replay, want 1", n)
	}
}

// TestLongAnswerFallsBackToMessages proves an answer is never lost for want of files: a channel
// that cannot send files gets the whole answer as messages, and a file the platform refuses
// is sent as messages instead.
func TestLongAnswerFallsBackToMessages(t *testing.T) {
	answer, ps := paragraphs(80)
	// A grace period longer than the test: the answer is the run's one Send.
	opts := func(o *Options) { o.MaxAnswerMessages, o.PlaceholderAfter = 2, time.Hour }
	t.Run("no files", func(t *testing.T) {
		h := newDeliveryHarness(t)
		h.ch.PieceLen = 600
		h.deliver(h.delivery(h.ch, opts), attempt(1, "", started("r1"), final("r1", answer))...)
		sends := h.ch.Sent()
		if len(sends) != 1 || len(sends[0].IDs) <= 2 || strings.Contains(sends[0].Text, answerFileName) {
			t.Fatalf("want the whole answer in one card of several messages, got %d sends", len(sends))
		}
		inOrderOnce(t, sends[0].Text, ps)
	})
	t.Run("file refused", func(t *testing.T) {
		h := newDeliveryHarness(t)
		h.ch.PieceLen = 600
		ch := &fileChannel{fakeChannel: h.ch, fail: true}
		h.deliver(h.delivery(ch, opts), attempt(1, "", started("r1"), final("r1", answer))...)
		var all []string
		for _, s := range h.ch.Sent() {
			all = append(all, s.Text)
		}
		if len(all) != 2 {
			t.Fatalf("%d sends, want the card and the rest as text", len(all))
		}
		inOrderOnce(t, strings.Join(all, "\n"), ps)
		if h.metrics.Get("outbound/test/file_failed") != 1 {
			t.Error("the refused file was not counted")
		}
	})
}

// TestLongAnswerFileGoesWhereTheAnswerWent proves the file is sent to the answer's own target —
// the conversation and the message answered — so an adapter can refuse a target a file cannot
// reach like the answer did (a Slack answer only its asker sees), and that the rest then follows
// as messages to that same target.
func TestLongAnswerFileGoesWhereTheAnswerWent(t *testing.T) {
	h := newDeliveryHarness(t)
	h.ch.PieceLen = 600
	ch := &fileChannel{fakeChannel: h.ch, fail: true}
	opts := func(o *Options) { o.MaxAnswerMessages, o.PlaceholderAfter = 2, time.Hour }
	answer, ps := paragraphs(80)
	h.deliver(h.delivery(ch, opts), attempt(1, "msg-7", started("r1"), final("r1", answer))...)
	ch.Mu.Lock()
	tried := append([]channels.Target(nil), ch.to...)
	ch.Mu.Unlock()
	if len(tried) != 1 || tried[0].ReplyTo != "msg-7" {
		t.Fatalf("the file was sent to %+v, want the answer's target (replying to msg-7)", tried)
	}
	sends := h.ch.Sent()
	if len(sends) != 2 {
		t.Fatalf("%d sends, want the head and the rest as text", len(sends))
	}
	for i, s := range sends {
		if s.To != tried[0] {
			t.Errorf("send %d went to %+v, want %+v", i, s.To, tried[0])
		}
	}
	inOrderOnce(t, sends[0].Text+"\n"+sends[1].Text, ps)
}

// fileCrash is a fileChannel whose file reaches the platform and after which the process "dies"
// as far as Redis is concerned (as crashAfterSend): the file's record is never written. With
// byKey set its posts are idempotent per key, files as messages (as Discord's nonce): a post
// with a key already posted returns that post; keyedFileCrash says so (KeyedSender).
type fileCrash struct {
	*fileChannel
	faults *redistest.Faults
	byKey  map[string]channels.MessageRef // the platform's memory of keys, across processes; nil: none
}

func (c *fileCrash) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	if ref, ok := c.byKey[m.Key]; ok && m.Key != "" {
		return ref, nil
	}
	ref, err := c.fileChannel.Send(ctx, to, m)
	if err == nil && m.Key != "" && c.byKey != nil {
		c.byKey[m.Key] = ref
	}
	return ref, err
}

func (c *fileCrash) SendFile(ctx context.Context, to channels.Target, f channels.File) (channels.MessageRef, error) {
	if ref, ok := c.byKey[f.Key]; ok && f.Key != "" {
		return ref, nil
	}
	ref, err := c.fileChannel.SendFile(ctx, to, f)
	if err == nil && f.Key != "" && c.byKey != nil {
		c.byKey[f.Key] = ref
	}
	if c.faults != nil {
		c.faults.DownFor(1 << 20)
	}
	return ref, err
}

type keyedFileCrash struct{ *fileCrash }

func (keyedFileCrash) KeyWindow() time.Duration { return time.Minute }

// TestLongAnswerFileAfterACrashIsCountedOrKeptOnce proves the file carrying a long answer's rest
// has a write-ahead intent and a key like the closing message: an attempt that posts it and dies
// before recording it leaves the intent, so the replay — which finds the answer's head recorded
// (StepFinalHead) and posts only the file again — counts it as a possible double where the
// platform cannot recognise a resend, and on a platform with idempotent keyed sends gets the
// post back: shown once, nothing counted.
func TestLongAnswerFileAfterACrashIsCountedOrKeptOnce(t *testing.T) {
	answer, _ := paragraphs(80)
	opts := func(o *Options) {
		o.MaxAnswerMessages, o.PlaceholderAfter, o.MaxRetryWait = 2, time.Hour, 100*time.Millisecond
	}
	for _, tc := range []struct {
		name           string
		keyed          bool
		files, sends   int
		possibleDouble int
	}{
		{"no idempotent sends", false, 2, 1, 1},
		{"keyed sends", true, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, faults := intentHarness(t)
			h.ch.PieceLen = 600
			files := &fileChannel{fakeChannel: h.ch}
			var posted map[string]channels.MessageRef
			if tc.keyed {
				posted = map[string]channels.MessageRef{}
			}
			process := func(faults *redistest.Faults) channels.Channel {
				c := &fileCrash{fileChannel: files, faults: faults, byKey: posted}
				if tc.keyed {
					return keyedFileCrash{c}
				}
				return c
			}
			run := runs.NewRunID()
			h.deliver(h.delivery(process(faults), opts), attempt(1, "", started(run), final(run, answer))...)
			if n := len(files.sentFiles()); n != 1 {
				t.Fatalf("the first attempt sent %d files, want 1", n)
			}
			faults.DownFor(0)
			h.deliver(h.delivery(process(nil), opts), attempt(2, "", started(run), final(run, answer))...)
			if n := len(files.sentFiles()); n != tc.files {
				t.Errorf("%d files shown after the replay, want %d", n, tc.files)
			}
			if n := len(h.ch.Sent()); n != tc.sends {
				t.Errorf("%d answer heads shown after the replay, want %d", n, tc.sends)
			}
			if n := h.metrics.Get("outbound/" + deliveryConv.Platform + "/possible_double"); n != tc.possibleDouble {
				t.Errorf("possible doubles counted %d, want %d", n, tc.possibleDouble)
			}
			if !h.recorded(run, StepFile) || !h.recorded(run, StepFileIntent) {
				t.Error("the replay left no file record or no file intent")
			}
			for _, k := range files.sentKeys() {
				if k != run+":"+StepFile {
					t.Errorf("the file was sent with key %q, want %q", k, run+":"+StepFile)
				}
			}
		})
	}
}

// restRefused is a fileChannel whose platform refuses the rest of a long answer — the file, and
// the messages it falls back to — while refuse is set (a platform outage that begins just after
// the answer's head went out).
type restRefused struct {
	*fileChannel
	refuse bool // guarded by fileChannel.Mu
}

func (r *restRefused) setRefuse(on bool) {
	r.mu.Lock()
	r.refuse, r.fail = on, on
	r.mu.Unlock()
}

func (r *restRefused) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	r.mu.Lock()
	refuse := r.refuse
	r.mu.Unlock()
	if refuse && strings.HasSuffix(m.Key, ":"+StepFile) {
		return channels.MessageRef{}, errors.New("502 Bad Gateway")
	}
	return r.fileChannel.Send(ctx, to, m)
}

// TestLongAnswerRestRefusedIsTriedAgain proves the rest of a long answer the platform refuses
// is not lost: the closing event's delivery fails, so its run is tried again, and that try —
// in the same process or, from the head's record, in another — sends the rest only, the head
// being in the chat already; then the run is delivered and a replay sends nothing.
func TestLongAnswerRestRefusedIsTriedAgain(t *testing.T) {
	answer, ps := paragraphs(80)
	opts := func(o *Options) { o.MaxAnswerMessages, o.PlaceholderAfter = 2, time.Hour }
	for _, where := range []string{"same process", "another process"} {
		t.Run(where, func(t *testing.T) {
			h := newDeliveryHarness(t)
			h.ch.PieceLen = 600
			ch := &restRefused{fileChannel: &fileChannel{fakeChannel: h.ch}}
			ch.setRefuse(true)
			d := h.delivery(ch, opts)
			h.deliver(d, attempt(1, "", started("r1"))...)
			err := d.Deliver(h.ctx, attempt(1, "", runs.Event{RunID: "r1", Conv: deliveryConv, Kind: runs.EventFinal, Text: answer})[0])
			if err == nil {
				t.Fatal("the rest was refused and Deliver returned no error: the run would count as answered")
			}
			if got := h.metrics.Get("outbound/test/rest_failed"); got != 1 {
				t.Errorf("rest_failed counted %d, want 1", got)
			}
			if h.recorded("r1", StepFinal) {
				t.Fatal("the closing message is recorded while the rest is not delivered: a later try would skip the rest")
			}
			if !h.recorded("r1", StepFinalHead) {
				t.Fatal("the delivered head has no record")
			}
			heads := len(h.ch.Sent())
			if heads != 1 {
				t.Fatalf("%d sends after the refused rest, want the head only", heads)
			}

			ch.setRefuse(false)
			if where == "another process" {
				d = h.delivery(ch, opts)
			}
			h.deliver(d, attempt(2, "", final("r1", answer))...)
			files := ch.sentFiles()
			if len(files) != 1 || len(h.ch.Sent()) != 1 {
				t.Fatalf("after the next try: %d files and %d sends, want the rest as one file and the head not sent again", len(files), len(h.ch.Sent()))
			}
			inOrderOnce(t, h.ch.Sent()[0].Text+"\n"+files[0], ps)
			if !h.recorded("r1", StepFinal) {
				t.Error("the closing message is not recorded once the rest is delivered")
			}
			// The refused try posted nothing of the rest: this process knows it; another only
			// finds the file's intent, so its file may be a second one.
			want := 0
			if where == "another process" {
				want = 1
			}
			if got := h.metrics.Get("outbound/test/possible_double"); got != want {
				t.Errorf("possible_double counted %d, want %d", got, want)
			}

			// A replay after that sends nothing.
			h.deliver(h.delivery(ch, opts), attempt(3, "", final("r1", answer))...)
			if len(ch.sentFiles()) != 1 || len(h.ch.Sent()) != 1 {
				t.Errorf("a replay sent again: %d files, %d sends", len(ch.sentFiles()), len(h.ch.Sent()))
			}
		})
	}
}

// TestLongAnswerRestUnreachableGivesUp proves a rest the bot can no longer send (blocked,
// kicked) is given up, as a closing message is: trying the run again would fail the same way.
func TestLongAnswerRestUnreachableGivesUp(t *testing.T) {
	h := newDeliveryHarness(t)
	h.ch.PieceLen = 600
	ch := &fileChannel{fakeChannel: h.ch, fail: true}
	uc := &unreachableRest{fileChannel: ch}
	answer, _ := paragraphs(80)
	opts := func(o *Options) { o.MaxAnswerMessages, o.PlaceholderAfter = 2, time.Hour }
	h.deliver(h.delivery(uc, opts), attempt(1, "", started("r1"), final("r1", answer))...)
	if h.metrics.Get("outbound/test/unreachable") != 1 || h.metrics.Get("outbound/test/rest_failed") != 0 {
		t.Errorf("unreachable counted %d, rest_failed %d; want 1 and 0",
			h.metrics.Get("outbound/test/unreachable"), h.metrics.Get("outbound/test/rest_failed"))
	}
	if !h.recorded("r1", StepFinal) {
		t.Error("the closing message is not recorded: a replay would send it again")
	}
}

// unreachableRest answers ErrUnreachable to the rest of a long answer sent as messages.
type unreachableRest struct{ *fileChannel }

func (u *unreachableRest) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	if strings.HasSuffix(m.Key, ":"+StepFile) {
		return channels.MessageRef{}, channels.ErrUnreachable
	}
	return u.fileChannel.Send(ctx, to, m)
}

// headCrash is a restRefused whose first send of an answer's head reaches the platform, after
// which the process "dies" as far as Redis is concerned (as crashAfterSend).
type headCrash struct {
	*restRefused
	faults *redistest.Faults
}

func (c headCrash) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref, err := c.restRefused.Send(ctx, to, m)
	if !strings.HasSuffix(m.Key, ":"+StepFile) {
		c.faults.DownFor(1 << 20)
	}
	return ref, err
}

// TestLongAnswerHeadResentThenRestRefusedCountsTheDouble proves a head that may show twice is
// counted when it is sent, even when its rest is then refused: an attempt that posted the head
// and died left the intent; the next, in another process, posts the head again and has its rest
// refused — one possible double, counted then — and the try after it sends the rest only,
// counting nothing more.
func TestLongAnswerHeadResentThenRestRefusedCountsTheDouble(t *testing.T) {
	answer, _ := paragraphs(80)
	opts := func(o *Options) {
		o.MaxAnswerMessages, o.PlaceholderAfter, o.MaxRetryWait = 2, time.Hour, 100*time.Millisecond
	}
	h, faults := intentHarness(t)
	h.ch.PieceLen = 600
	ch := &restRefused{fileChannel: &fileChannel{fakeChannel: h.ch}}
	ch.setRefuse(true)
	run := runs.NewRunID()
	d1 := h.delivery(headCrash{ch, faults}, opts)
	h.deliver(d1, attempt(1, "", started(run))...)
	_ = d1.Deliver(h.ctx, attempt(1, "", runs.Event{RunID: run, Conv: deliveryConv, Kind: runs.EventFinal, Text: answer})[0])
	faults.DownFor(0)

	d2 := h.delivery(ch, opts)
	if err := d2.Deliver(h.ctx, attempt(2, "", runs.Event{RunID: run, Conv: deliveryConv, Kind: runs.EventFinal, Text: answer})[0]); err == nil {
		t.Fatal("the rest was refused and Deliver returned no error")
	}
	if n := h.metrics.Get("outbound/test/possible_double"); n != 1 {
		t.Fatalf("possible doubles counted %d after the head was posted again, want 1", n)
	}
	ch.setRefuse(false)
	h.deliver(d2, attempt(3, "", final(run, answer))...)
	if n := len(ch.sentFiles()); n != 1 {
		t.Errorf("%d files, want the rest once", n)
	}
	if n := len(h.ch.Sent()); n != 2 {
		t.Errorf("%d heads shown, want 2 (the crashed attempt's and the next)", n)
	}
	if n := h.metrics.Get("outbound/test/possible_double"); n != 1 {
		t.Errorf("possible doubles counted %d in all, want 1", n)
	}
}
