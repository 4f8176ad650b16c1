package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// The load benchmarks run the fakes (the Bot API, the fake Slack, the model server, and the
// webhook or Events API deliveries that play Telegram and Slack) in a child process — this test
// binary re-executed with loadFakesEnv set — so that getrusage and VmHWM of the benchmark
// process measure the bot alone, and the child's own figures measure the fakes. The benchmark
// drives the child over a small loopback control API (loadFakesServer) exactly as it drove the
// in-process fakes: pushing updates (Telegram) or envelopes and deliveries (Slack), waiting for
// what was posted, reading the posts back.

// loadFakesEnv, set in the environment, makes the test binary serve the fakes and nothing else.
const loadFakesEnv = "SB_LOAD_FAKES_CHILD"

// loadModelLatencyEnv, set for the child, makes the fake model wait that long (a Go duration)
// before each answer: the intake workloads, where the model is slow and intake is the work.
const loadModelLatencyEnv = "SB_LOAD_MODEL_LATENCY"

// loadModelStreamEnv, set for the child, makes the fake model write a realistic answer
// (realisticAnswer) as a real one does: streamed over that long (a Go duration), in chunks of
// realisticChunk bytes an even delay apart. The child then also keeps, per message, when the
// model received its request and wrote its last byte (GET /model/spans), and records the
// platform fakes' calls, so that the time of each answer's last edit can be read back (GET
// /last-edits): the realistic workloads' latency added to the model's.
const loadModelStreamEnv = "SB_LOAD_MODEL_STREAM"

// loadDiscordThreadFieldsEnv, set for the benchmark (the child inherits it), names the fields
// (comma-separated) the fake Discord's Start Thread from Message ignores instead of refusing
// (discordfake's IgnoreThreadFields): to run a build from before the bot sent its own thread
// body (SB_LOAD_BOT_BIN; before 1748d20, discordgo's ThreadStart added invitable) on the path it
// took then, answering in threads, not in the channel after a refusal. The figures of notes are
// taken without it.
const loadDiscordThreadFieldsEnv = "SB_LOAD_DISCORD_THREAD_FIELDS"

// realisticChunk is the size of a streamed piece of the realistic answer: about two tokens, so
// that 1.5 s of streaming is 75 chunks, 50 a second, as a model writing 100 tokens a second
// sends them.
const realisticChunk = 8

// loadModelChunkEnv, set for the benchmark (the child inherits it), replaces realisticChunk: an
// experiment's knob, to tell what the bot spends per chunk of a stream from what it spends per
// message (the figures of notes are taken without it).
const loadModelChunkEnv = "SB_LOAD_MODEL_CHUNK"

// realisticAnswer is the fake model's answer to text in the realistic workloads: the echo line
// the checks look for, on a line of its own, and about 600 bytes of prose after it.
func realisticAnswer(text string) string {
	return "echo: " + text + "\n\n" + realisticProse
}

const realisticProse = "Here is a short answer of the length a chat model usually writes for a question like " +
	"this one. It restates the question, gives two or three points with a sentence of reasoning each, " +
	"and ends with a suggestion of what to try next. First, check the obvious causes before the " +
	"unusual ones: most problems of this kind come from a setting that was changed recently. Second, " +
	"look at the logs around the time it started, since they usually name the component that failed. " +
	"Third, try the smallest change that could fix it and see whether the symptom goes away. If it " +
	"does not, tell me what you saw and I will suggest the next step."

func init() {
	if os.Getenv(loadFakesEnv) == "" {
		return
	}
	os.Exit(serveLoadFakes())
}

// loadFakesHello is the child's first line on stdout.
type loadFakesHello struct {
	TelegramURL string `json:"telegram_url"`
	Token       string `json:"token"`
	ModelURL    string `json:"model_url"`
	ControlURL  string `json:"control_url"`
	// The fake Slack's Web API URL and secrets.
	SlackAPIURL        string `json:"slack_api_url"`
	SlackBotToken      string `json:"slack_bot_token"`
	SlackAppToken      string `json:"slack_app_token"`
	SlackSigningSecret string `json:"slack_signing_secret"`
	// The fake Discord's base URL (REST and gateway discovery) and bot token.
	DiscordURL   string `json:"discord_url"`
	DiscordToken string `json:"discord_token"`
}

// loadPushed is one pushed message as the child queued it.
type loadPushed struct {
	ID int   `json:"id"`
	At int64 `json:"at"` // Unix ns, taken just before the update was queued
	// TS is a Slack message's ts (Slack pushes only).
	TS string `json:"ts,omitempty"`
	// MsgID is a Discord message's id (Discord pushes only).
	MsgID string `json:"msg_id,omitempty"`
}

// loadUsage is a process's CPU and peak RSS.
type loadUsage struct {
	CPU  time.Duration `json:"cpu"`
	Peak int64         `json:"peak"`
}

// loadFakesHeap is what the fakes' heap grows to under a workload, made resident before they
// serve.
const loadFakesHeap = 64 << 20

// prefault makes n bytes of the heap resident: it allocates them, writes to every page, lets them
// go and collects, so the pages are free heap the process allocates from next.
func prefault(n uint64) {
	b := make([]byte, n)
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	runtime.KeepAlive(b)
	runtime.GC()
}

// serveLoadFakes runs the child: it starts the fakes and the control API, prints their
// addresses, and serves until its stdin closes (the parent ended).
func serveLoadFakes() int {
	// The fakes stand in for servers on other machines, but share this one with the bot they
	// measure: a collection every 4 MB of their garbage took a tenth of their CPU, and their
	// memory is no figure of the workload.
	debug.SetGCPercent(800)
	// A child starts afresh for each run, and its heap grows to about 60 MB in the burst it
	// serves: every page of it a page fault, paid in the measured burst (10,500 faults in
	// 2000msgs_200chats, and as much system CPU as user CPU). Servers on other machines are warm,
	// so the child makes that much heap resident before it serves: the fakes' CPU a message fell
	// from 0.26–0.41 to 0.20–0.25 ms.
	prefault(loadFakesHeap)
	// SB_LOAD_FAKES_CPUPROFILE names a file for the child's CPU profile: where the fakes' own
	// CPU per message goes (go tool pprof FILE).
	if path := os.Getenv("SB_LOAD_FAKES_CPUPROFILE"); path != "" {
		if f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid())); err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
		}
	}
	tg := telegramfake.Start()
	defer tg.Close()
	sl := slackfake.Start()
	defer sl.Close()
	dc := discordfake.Start()
	defer dc.Close()
	if fields := os.Getenv(loadDiscordThreadFieldsEnv); fields != "" {
		dc.IgnoreThreadFields(strings.Split(fields, ",")...)
	}
	model := modelserver.Start()
	defer model.Close()
	tg.SetRecording(false)
	sl.SetRecording(false)
	model.SetRecording(false)
	s := &loadFakesServer{tg: tg, sl: sl, dc: dc, spans: map[string]modelSpan{}}
	latency, _ := time.ParseDuration(os.Getenv(loadModelLatencyEnv))
	stream, _ := time.ParseDuration(os.Getenv(loadModelStreamEnv))
	if stream > 0 {
		// The answers' last edits are read back from the calls (GET /last-edits).
		tg.SetRecording(true)
		sl.SetRecording(true)
	}
	chunk := realisticChunk
	if n, err := strconv.Atoi(os.Getenv(loadModelChunkEnv)); err == nil && n > 0 {
		chunk = n
	}
	model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		reply := echoModel(r)
		reply.Latency = max(latency, 0)
		if stream > 0 {
			text := r.LastUserText()
			reply.Content, reply.ChunkSize = realisticAnswer(text), chunk
			reply.ChunkDelay = stream / time.Duration((len(reply.Content)+chunk-1)/chunk)
			reply.Done = func() { s.modelDone(text, r.Received, time.Now()) }
		}
		return reply
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "load fakes: listen:", err)
		return 1
	}
	srv := &http.Server{Handler: s.mux(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	_ = json.NewEncoder(os.Stdout).Encode(loadFakesHello{
		TelegramURL: tg.URL(), Token: tg.Token(), ModelURL: model.BaseURL(), ControlURL: "http://" + ln.Addr().String(),
		SlackAPIURL: sl.APIURL(), SlackBotToken: sl.BotToken(), SlackAppToken: sl.AppToken(), SlackSigningSecret: sl.SigningSecret(),
		DiscordURL: dc.URL(), DiscordToken: dc.Token(),
	})
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
	s.stopDeliveries()
	return 0
}

// loadFakesServer is the child's control API over its fakes.
type loadFakesServer struct {
	tg *telegramfake.Server
	sl *slackfake.Server
	dc *discordfake.Server
	// dcMu guards dcDMs and dcChannels, the Discord load's DMs and guild text channels by
	// index (discordDMs, discordChannels), and dcGuilds, the guilds made for the channels.
	dcMu       sync.Mutex
	dcDMs      []string
	dcChannels []string
	dcGuilds   int

	// tgHook plays Telegram's webhook deliveries, slHook Slack's Events API deliveries.
	tgHook, slHook deliverers

	// spansMu guards spans: per user text, the model's request that answered it (the last one,
	// if the bot asked more than once), with loadModelStreamEnv set.
	spansMu sync.Mutex
	spans   map[string]modelSpan
}

// modelSpan is when the fake model received a request and when it wrote the answer's last byte,
// in Unix ns.
type modelSpan struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

func (s *loadFakesServer) modelDone(text string, received, end time.Time) {
	s.spansMu.Lock()
	s.spans[text] = modelSpan{Start: received.UnixNano(), End: end.UnixNano()}
	s.spansMu.Unlock()
}

// platformCalls counts the calls platform's fake recorded, by method (Discord's by method and
// route; the realtime ones, getUpdates and Socket Mode, are not calls of the Web API). The
// Telegram and Slack fakes record calls with loadModelStreamEnv set only.
func (s *loadFakesServer) platformCalls(platform string) map[string]int {
	out := map[string]int{}
	switch platform {
	case "telegram":
		for _, c := range s.tg.Calls() {
			out[c.Method]++
		}
	case "slack":
		for _, c := range s.sl.Calls() {
			out[c.Method]++
		}
	case "discord":
		for _, c := range s.dc.Calls() {
			out[c.Method+" "+strings.TrimPrefix(c.Route, "/api/v9")]++
		}
	}
	return out
}

// lastEdits is, per bot message of platform ("chat:message" on Telegram, "channel:ts" on Slack,
// "channel:message" on Discord), when the last successful call that changed it after it was posted
// (an edit, a stream's append or stop) was served, in Unix ns. The Telegram and Slack fakes
// record calls with loadModelStreamEnv set only.
func (s *loadFakesServer) lastEdits(platform string) map[string]int64 {
	out := map[string]int64{}
	note := func(key string, at time.Time) { out[key] = max(out[key], at.UnixNano()) }
	switch platform {
	case "telegram":
		for _, c := range s.tg.Calls() {
			if strings.HasPrefix(c.Method, "edit") && c.Status == http.StatusOK {
				note(c.Params["chat_id"]+":"+c.Params["message_id"], c.At)
			}
		}
	case "slack":
		for _, c := range s.sl.Calls() {
			switch c.Method {
			case "chat.update", "chat.appendStream", "chat.stopStream":
				if c.Status == http.StatusOK && c.Error == "" {
					note(c.Params["channel"]+":"+c.Params["ts"], c.At)
				}
			}
		}
	case "discord":
		for _, c := range s.dc.Calls() {
			if c.Method == http.MethodPatch && c.Route == discordfake.RouteMessage && c.Status < 300 {
				// Path is /api/v9/channels/{channel}/messages/{message}.
				rest, _ := strings.CutPrefix(c.Path, "/api/v9/channels/")
				channel, msg, _ := strings.Cut(rest, "/messages/")
				note(channel+":"+msg, c.At)
			}
		}
	}
	return out
}

func (s *loadFakesServer) mux() *http.ServeMux {
	m := http.NewServeMux()
	// POST /push {"users":[..],"texts":[..],"webhook":url} → []loadPushed. With webhook set,
	// the queued updates are then delivered to it over webhookConnections connections.
	m.HandleFunc("POST /push", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Users   []int64  `json:"users"`
			Texts   []string `json:"texts"`
			Webhook string   `json:"webhook"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Users) != len(req.Texts) {
			http.Error(w, "bad push", http.StatusBadRequest)
			return
		}
		out := make([]loadPushed, len(req.Users))
		for i, u := range req.Users {
			at := time.Now()
			_, id := s.tg.PushPrivate(telegramfake.User{ID: u, FirstName: "Load"}, req.Texts[i])
			out[i] = loadPushed{ID: id, At: at.UnixNano()}
		}
		if req.Webhook != "" {
			s.tgHook.start(req.Webhook, func(h http.Header, _ []byte) {
				h.Set("X-Telegram-Bot-Api-Secret-Token", loadWebhookSecret)
			})
			for _, u := range s.tg.TakeUpdates() {
				s.tgHook.work <- u
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	// POST /slack/push {"channels":[..],"users":[..],"texts":[..],"mention":bool,"events":url}
	// → []loadPushed: a DM "message" event per channels[i] from users[i] with texts[i] — with
	// mention, a top-level channel post mentioning the bot, as Slack sends it (app_mention and
	// message) — sent over Socket Mode, or with events set delivered, signed, to that Events API
	// URL over webhookConnections connections.
	m.HandleFunc("POST /slack/push", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Channels []string `json:"channels"`
			Users    []string `json:"users"`
			Texts    []string `json:"texts"`
			Mention  bool     `json:"mention"`
			Events   string   `json:"events"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Users) != len(req.Texts) || len(req.Channels) != len(req.Texts) {
			http.Error(w, "bad push", http.StatusBadRequest)
			return
		}
		if req.Events != "" {
			secret := s.sl.SigningSecret()
			s.slHook.start(req.Events, func(h http.Header, body []byte) {
				ts := time.Now().Unix()
				h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10))
				h.Set("X-Slack-Signature", slackfake.Sign(secret, ts, body))
			})
		}
		out := make([]loadPushed, len(req.Texts))
		for i, text := range req.Texts {
			var cbs []map[string]any
			var ts string
			if req.Mention {
				var pair [2]map[string]any
				pair, ts = s.sl.MentionPairCallbacks(slackfake.Msg{Channel: req.Channels[i], User: req.Users[i], Text: slackfake.Mention() + " " + text})
				cbs = pair[:]
			} else {
				var cb map[string]any
				cb, ts = s.sl.MessageCallback(slackfake.Msg{Channel: req.Channels[i], ChannelType: "im", User: req.Users[i], Text: text})
				cbs = []map[string]any{cb}
			}
			out[i] = loadPushed{TS: ts, At: time.Now().UnixNano()}
			for _, cb := range cbs {
				if req.Events == "" {
					s.sl.Send("events_api", cb)
					continue
				}
				body, _ := json.Marshal(cb)
				s.slHook.work <- body
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	// GET /wait?what=intake|posted|answered&n=messages&chats=chats&first=chat id (the load
	// channel's or DM's index for the slack- and discord- conditions; discord-answered-mention
	// for the load channels' mentions, answered in their threads): blocks until the condition
	// holds (204) or the timeout parameter (ns) passes (504).
	m.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		n, _ := strconv.Atoi(q.Get("n"))
		chats, _ := strconv.Atoi(q.Get("chats"))
		first, _ := strconv.ParseInt(q.Get("first"), 10, 64)
		timeout, _ := strconv.ParseInt(q.Get("timeout"), 10, 64)
		var cond func() bool
		switch q.Get("what") {
		case "intake":
			cond = func() bool { return s.tg.Pending() == 0 }
		case "posted":
			cond = func() bool { return s.tg.Count("sendMessage") >= n }
		case "answered":
			cond = func() bool {
				for c := range chats {
					if !answered(s.tg, first+int64(c), n/chats+boolInt(c < n%chats)) {
						return false
					}
				}
				return true
			}
		case "slack-posted":
			// An answer is posted, or streamed (in threads, where slack.streaming is on).
			cond = func() bool { return s.sl.Count("chat.postMessage")+s.sl.Count("chat.startStream") >= n }
		case "slack-acked":
			cond = func() bool { return s.sl.Unacked() == 0 }
		case "slack-answered", "slack-answered-mention":
			mention := q.Get("what") == "slack-answered-mention"
			cond = func() bool {
				for c := range chats {
					if !slackAnswered(s.sl.Posted(slackLoadChannel(mention, int(first)+c)), n/chats+boolInt(c < n%chats)) {
						return false
					}
				}
				return true
			}
		case "discord-connected":
			cond = s.dc.Connected
		case "discord-posted":
			cond = func() bool { return s.dc.Count(http.MethodPost, discordfake.RouteMessages) >= n }
		case "discord-answered-mention":
			cond = func() bool { return s.discordMentionsAnswered(n, chats, int(first)) }
		case "discord-answered":
			dms := s.discordDMs(int(first) + chats)[first:]
			cond = func() bool {
				for c, ch := range dms {
					if !discordAnswered(s.dc, ch, n/chats+boolInt(c < n%chats)) {
						return false
					}
				}
				return true
			}
		default:
			http.Error(w, "unknown condition", http.StatusBadRequest)
			return
		}
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		deadline := time.NewTimer(time.Duration(timeout))
		defer deadline.Stop()
		for !cond() {
			select {
			case <-tick.C:
			case <-deadline.C:
				w.WriteHeader(http.StatusGatewayTimeout)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	// GET /posted?first=chat id&chats=n → map chat id → what the bot posted there.
	m.HandleFunc("GET /posted", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		chats, _ := strconv.Atoi(q.Get("chats"))
		first, _ := strconv.ParseInt(q.Get("first"), 10, 64)
		out := make(map[int64][]telegramfake.Message, chats)
		for c := range chats {
			out[first+int64(c)] = s.tg.Posted(first + int64(c))
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	// GET /slack/posted?first=i&chats=n&mention=0|1 → map channel → what the bot posted in each
	// of the n load channels from index i (slackLoadChannel).
	m.HandleFunc("GET /slack/posted", func(w http.ResponseWriter, r *http.Request) {
		first, _ := strconv.Atoi(r.URL.Query().Get("first"))
		chats, _ := strconv.Atoi(r.URL.Query().Get("chats"))
		mention := r.URL.Query().Get("mention") == "1"
		out := make(map[string][]slackfake.Message, chats)
		for c := first; c < first+chats; c++ {
			out[slackLoadChannel(mention, c)] = s.sl.Posted(slackLoadChannel(mention, c))
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	// GET /slack/statuses → every assistant.threads.setStatus call, in order.
	m.HandleFunc("GET /slack/statuses", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(s.sl.Statuses())
	})
	s.discordRoutes(m)
	// GET /model/spans → map user text → the model's span answering it (loadModelStreamEnv).
	m.HandleFunc("GET /model/spans", func(w http.ResponseWriter, _ *http.Request) {
		s.spansMu.Lock()
		defer s.spansMu.Unlock()
		_ = json.NewEncoder(w).Encode(s.spans)
	})
	// GET /last-edits?platform=telegram|slack|discord → map bot message → its last edit (see
	// lastEdits).
	m.HandleFunc("GET /last-edits", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(s.lastEdits(r.URL.Query().Get("platform")))
	})
	// GET /calls?platform=telegram|slack|discord → map method → the calls the platform's fake
	// recorded (see platformCalls).
	m.HandleFunc("GET /calls", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(s.platformCalls(r.URL.Query().Get("platform")))
	})
	m.HandleFunc("GET /usage", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(selfUsage())
	})
	m.HandleFunc("POST /reset-peak", func(w http.ResponseWriter, _ *http.Request) {
		_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		w.WriteHeader(http.StatusNoContent)
	})
	// POST /webhook-failures ends the deliveries and returns how many were not answered 200.
	m.HandleFunc("POST /webhook-failures", func(w http.ResponseWriter, _ *http.Request) {
		s.stopDeliveries()
		_ = json.NewEncoder(w).Encode(s.tgHook.fail.Load() + s.slHook.fail.Load())
	})
	return m
}

func (s *loadFakesServer) stopDeliveries() {
	s.tgHook.stop()
	s.slHook.stop()
}

// slackLoadChannel is the c-th load channel: a DM with user slackLoadUser(c), or with mention
// a public channel.
func slackLoadChannel(mention bool, c int) string {
	if mention {
		return fmt.Sprintf("C%06d", c)
	}
	return fmt.Sprintf("D%06d", c)
}

// slackLoadUser is the user of the c-th load channel.
func slackLoadUser(c int) string { return fmt.Sprintf("U%06d", c) }

// slackAnswered reports whether posted holds exactly n messages and none is a placeholder.
func slackAnswered(posted []slackfake.Message, n int) bool {
	if len(posted) != n {
		return false
	}
	for _, m := range posted {
		if slackPlaceholder(m) || m.Streaming {
			return false // still working, or still streaming
		}
	}
	return true
}

// deliverers POST the bodies queued on work to webhook URLs over webhookConnections
// connections, as Telegram's webhook and Slack's Events API deliveries do, counting every
// delivery not answered 200.
type deliverers struct {
	once sync.Once
	work chan []byte
	wg   sync.WaitGroup
	fail atomic.Int64
}

// start starts the deliverers on first use; later calls do nothing. urls is one URL or
// several, comma-separated: the deliverers take turns among them, as a load balancer in front
// of several processes would. sign sets a request's platform headers (a secret, a signature).
func (d *deliverers) start(urls string, sign func(h http.Header, body []byte)) {
	d.once.Do(func() {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = webhookConnections
		client := &http.Client{Transport: tr}
		d.work = make(chan []byte, 4096)
		targets := strings.Split(urls, ",")
		for i := range webhookConnections {
			url := targets[i%len(targets)]
			d.wg.Go(func() {
				for body := range d.work {
					req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					sign(req.Header, body)
					resp, err := client.Do(req)
					if err != nil {
						d.fail.Add(1)
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						d.fail.Add(1)
					}
				}
			})
		}
	})
}

// stop ends the deliverers, if they were started, once every delivery is done.
func (d *deliverers) stop() {
	started := true
	d.once.Do(func() { started = false })
	if started && d.work != nil {
		close(d.work)
		d.work = nil
		d.wg.Wait()
	}
}

// selfUsage is this process's CPU (user + system) and peak RSS since the last reset.
func selfUsage() loadUsage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return loadUsage{CPU: cpuTime(ru), Peak: peakRSSOf(ru)}
}

// loadFakes is the benchmark's handle on the child process.
type loadFakes struct {
	tb    testing.TB
	hello loadFakesHello
	cmd   *exec.Cmd
	stdin io.WriteCloser
	hc    *http.Client
}

// loadModel is how the child's fake model answers: after latency, and, with stream set, the
// realistic answer streamed over stream (loadModelStreamEnv). The zero loadModel echoes at once.
type loadModel struct {
	latency, stream time.Duration
}

// startLoadFakesWith starts the fakes with the model answering as m says.
func startLoadFakesWith(tb testing.TB, m loadModel) *loadFakes {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatalf("load fakes: own executable: %v", err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), loadFakesEnv+"=1")
	if m.latency > 0 {
		cmd.Env = append(cmd.Env, loadModelLatencyEnv+"="+m.latency.String())
	}
	if m.stream > 0 {
		cmd.Env = append(cmd.Env, loadModelStreamEnv+"="+m.stream.String())
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatalf("load fakes: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("load fakes: %v", err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("load fakes: starting the child: %v", err)
	}
	f := &loadFakes{tb: tb, cmd: cmd, stdin: stdin, hc: &http.Client{Transport: &http.Transport{}}}
	tb.Cleanup(f.close)
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		tb.Fatalf("load fakes: reading the child's addresses: %v", err)
	}
	if err := json.Unmarshal(line, &f.hello); err != nil {
		tb.Fatalf("load fakes: the child's addresses %q: %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return f
}

func (f *loadFakes) close() {
	_ = f.stdin.Close()
	_ = f.cmd.Wait()
	f.hc.CloseIdleConnections()
}

// call makes one control request and decodes its JSON answer into out (when not nil).
func (f *loadFakes) call(method, path string, in, out any) int {
	f.tb.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, f.hello.ControlURL+path, body)
	resp, err := f.hc.Do(req)
	if err != nil {
		f.tb.Fatalf("load fakes %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			f.tb.Fatalf("load fakes %s %s: decoding: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// push queues a private message from each users[i] with texts[i]; with webhook set the child
// then delivers the queued updates to it.
func (f *loadFakes) push(users []int64, texts []string, webhook string) []loadPushed {
	var out []loadPushed
	in := map[string]any{"users": users, "texts": texts, "webhook": webhook}
	if code := f.call(http.MethodPost, "/push", in, &out); code != http.StatusOK {
		f.tb.Fatalf("load fakes: push answered %d", code)
	}
	return out
}

// wait blocks until the child reports the condition (see /wait) holds.
func (f *loadFakes) wait(what string, n, chats int, first int64, timeout time.Duration) {
	f.tb.Helper()
	path := fmt.Sprintf("/wait?what=%s&n=%d&chats=%d&first=%d&timeout=%d", what, n, chats, first, timeout)
	if code := f.call(http.MethodGet, path, nil, nil); code != http.StatusNoContent {
		f.tb.Fatalf("load fakes: waiting for %s: %d (timeout %v)", what, code, timeout)
	}
}

// posted returns what the bot posted in chats first … first+chats-1.
func (f *loadFakes) posted(first int64, chats int) map[int64][]telegramfake.Message {
	out := map[int64][]telegramfake.Message{}
	f.call(http.MethodGet, fmt.Sprintf("/posted?first=%d&chats=%d", first, chats), nil, &out)
	return out
}

// usage is the child's CPU and peak RSS.
func (f *loadFakes) usage() loadUsage {
	var u loadUsage
	f.call(http.MethodGet, "/usage", nil, &u)
	return u
}

func (f *loadFakes) resetPeak() { f.call(http.MethodPost, "/reset-peak", nil, nil) }

// pushSlack sends a DM "message" event per texts[i] in channels[i] from users[i] — with mention
// a channel post mentioning the bot, as an app_mention and message pair — over Socket Mode, or
// with events set delivers them, signed, to that Events API URL.
func (f *loadFakes) pushSlack(channels, users, texts []string, mention bool, events string) []loadPushed {
	var out []loadPushed
	in := map[string]any{"channels": channels, "users": users, "texts": texts, "mention": mention, "events": events}
	if code := f.call(http.MethodPost, "/slack/push", in, &out); code != http.StatusOK {
		f.tb.Fatalf("load fakes: slack push answered %d", code)
	}
	return out
}

// slackPosted returns what the bot posted in the chats load channels from index first.
func (f *loadFakes) slackPosted(first, chats int, mention bool) map[string][]slackfake.Message {
	out := map[string][]slackfake.Message{}
	f.call(http.MethodGet, fmt.Sprintf("/slack/posted?first=%d&chats=%d&mention=%d", first, chats, boolInt(mention)), nil, &out)
	return out
}

// slackStatuses returns every assistant thread status the bot set, in order.
func (f *loadFakes) slackStatuses() []slackfake.Status {
	var out []slackfake.Status
	f.call(http.MethodGet, "/slack/statuses", nil, &out)
	return out
}

// modelSpans returns, per user text, when the fake model received the request answering it and
// when it wrote the answer's last byte (loadModel.stream set).
func (f *loadFakes) modelSpans() map[string]modelSpan {
	out := map[string]modelSpan{}
	f.call(http.MethodGet, "/model/spans", nil, &out)
	return out
}

// lastEdits returns when each bot message of platform was last edited (see
// loadFakesServer.lastEdits; loadModel.stream set for Telegram and Slack).
func (f *loadFakes) lastEdits(platform string) map[string]int64 {
	out := map[string]int64{}
	f.call(http.MethodGet, "/last-edits?platform="+platform, nil, &out)
	return out
}

// logCalls logs the calls the bot made to platform's fake, by method, per message of n: since
// the child started, so the few calls of the bot's start count too.
func (f *loadFakes) logCalls(b *testing.B, platform string, n int) {
	b.Helper()
	calls := map[string]int{}
	f.call(http.MethodGet, "/calls?platform="+platform, nil, &calls)
	methods := slices.Sorted(maps.Keys(calls))
	var sb strings.Builder
	for _, m := range methods {
		fmt.Fprintf(&sb, " %s=%.2f", m, float64(calls[m])/float64(n))
	}
	b.Logf("%s calls per message:%s", platform, sb.String())
}

// webhookFailures ends the child's webhook deliveries and returns how many failed.
func (f *loadFakes) webhookFailures() int64 {
	var n int64
	f.call(http.MethodPost, "/webhook-failures", nil, &n)
	return n
}
