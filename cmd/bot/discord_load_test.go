package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
)

// BenchmarkDiscordEndToEnd measures the whole pipeline over Discord — MESSAGE_CREATE dispatches
// from the fake Discord's gateway into the real adapter (discordgo), the router, the Redis queue
// (real Redis), workers, the lead chain calling the fake model (0 ms), delivery posting each
// answer with POST /channels/{id}/messages. Each DM channel is a conversation. Run it alone:
//
//	go test -run '^$' -bench DiscordEndToEnd -benchtime=1x ./cmd/bot/
//
// As in BenchmarkTelegramEndToEnd the fakes run in a child process (see loadfakes_test.go), so
// this process is the bot: bot-cpu-ms/msg and peak-rss-MB are the bot's alone, fakes-cpu-ms/msg
// the child's. It reports msgs/s end to end, Redis round trips and Redis CPU per message,
// receipt → first visible reply p50/p99, and the bot's allocations per message and GC cycles.
// Every workload then checks that each message got exactly one reply showing its answer and no
// placeholder was left behind.
//
// The realistic_ workload is paced instead, its answers streamed by the model over 1.5 s (see
// realisticMessages); it reports the latency the bot adds to the model's (reportAddedLatency)
// and logs the platform calls per message. SB_LOAD_TRIPS=1 names the callers of its Redis
// round trips.
func BenchmarkDiscordEndToEnd(b *testing.B) {
	for _, w := range discordWorkloads {
		b.Run(w.name, func(b *testing.B) {
			for range b.N {
				runDiscordLoad(b, w)
			}
		})
	}
}

// discordLoadSpec is one Discord workload: messages spread round-robin over chats DMs (each
// with its own user), or with mention over chats guild text channels, dispatched at once.
type discordLoadSpec struct {
	name            string
	messages, chats int
	// first is the first load DM's index; postedBefore, the bot messages posted before this
	// load (a warm-up's), so that its waits count this load's only.
	first, postedBefore int
	warm                bool // BenchmarkBinary: a burst of the same shape in the DMs after these first
	// rate, when set, paces the messages at rate a second instead of dispatching them at once;
	// stream makes the fake model stream the realistic answer over that long
	// (loadModelStreamEnv).
	rate   int
	stream time.Duration
	// pacing keeps discord.pacing as shipped (on: Discord's global limit of 50 requests a
	// second); the other workloads turn it off to measure the bot (BenchmarkBinary only).
	pacing bool
	// mention posts each message in a guild text channel (the c-th with discordLoadUser(c) as
	// its author) as a new top-level message mentioning the bot, which answers it, as shipped
	// (discord.reply_in_thread), in a thread it starts from the message: POST
	// /channels/{id}/messages/{id}/threads, then the answer in the thread.
	mention bool
}

var discordWorkloads = []discordLoadSpec{
	{name: "dm_2000msgs_200chats", messages: 2000, chats: 200},
	{name: "dm_2000msgs_2000chats", messages: 2000, chats: 2000},
	// DMs over the gateway, as shipped: typing, the placeholder after the grace period, edited
	// into the answer.
	{name: "realistic_paced50ps_stream1500ms", messages: realisticMessages, chats: 200, rate: realisticRate,
		stream: realisticStream},
}

// discordLoadOverrides are the settings the Discord load runs change from the defaults.
const discordLoadOverrides = "discord.token, discord.api_url, llm.base_url, redis.url, redis.prefix (the fakes, the test Redis); " +
	"discord.pacing=false (the workload measures the bot, not Discord's global limit of 50 requests/s)"

// discordLoad is one workload's messages, in push order: message i is texts[i] in load DM (or,
// with mention, load channel) chats[i].
type discordLoad struct {
	chats []int
	texts []string
}

func newDiscordLoad(w discordLoadSpec) discordLoad {
	l := discordLoad{chats: make([]int, w.messages), texts: make([]string, w.messages)}
	for i := range w.messages {
		l.chats[i] = w.first + i%w.chats
		l.texts[i] = fmt.Sprintf("m%d c%d", i/w.chats, i%w.chats)
	}
	return l
}

func runDiscordLoad(b *testing.B, w discordLoadSpec) {
	b.StopTimer()
	fakes := startLoadFakesWith(b, loadModel{stream: w.stream})
	e := newE2E(b, func(c *config.Config) {
		// The child's fakes serve this workload; newE2E's in-process ones stay idle.
		c.Telegram.Token = ""
		c.Discord.Token, c.Discord.APIURL = fakes.hello.DiscordToken, fakes.hello.DiscordURL
		c.Discord.Pacing = false
		c.LLM.BaseURL = fakes.hello.ModelURL
		// newE2E's test settings (short lease, debug logs) give way to the defaults.
		d := config.Default()
		c.Runs, c.Log = d.Runs, d.Log
	})
	r := e.start()
	trips := &roundTrips{}
	if os.Getenv("SB_LOAD_TRIPS") != "" {
		trips.by = map[string]int{} // attribution costs a stack walk per command
	}
	r.core.redis.AddHook(trips)
	load := newDiscordLoad(w)
	prepareDiscordLoad(fakes, w)

	m := startSelfMeter(b, fakes)
	b.StartTimer()
	began := time.Now()
	acks := driveDiscordLoad(fakes, w, load)
	elapsed := time.Since(began)
	b.StopTimer()
	m.stop(b)
	posted := fakes.discordPosted(w.first, w.chats)
	lat := verifyDiscordLoad(b, posted, load, acks)
	reportRunAvg(b, r)
	r.stop()
	if w.stream > 0 {
		reportAddedLatency(b, discordAnswerTimes(posted, load, acks, fakes.lastEdits("discord")), fakes.modelSpans())
		fakes.logCalls(b, "discord", w.messages)
	}

	n := float64(w.messages)
	b.Logf("defaults except: %s", discordLoadOverrides)
	if w.rate > 0 {
		elapsed = 0 // a paced workload has no throughput
	}
	m.report(b, w.messages, elapsed, lat, trips)
	if trips.by != nil {
		fmt.Fprintf(os.Stderr, "%s: Redis round trips by caller:\n%s", b.Name(), trips.top(20, n))
	}
}

// prepareDiscordLoad waits until the bot holds a gateway session (a dispatch before it would be
// lost) and has the child create the workload's DM channels, or its guild text channels
// (announced to the bot with GUILD_CREATE), both before the clock starts.
func prepareDiscordLoad(fakes *loadFakes, w discordLoadSpec) {
	fakes.wait("discord-connected", 0, 0, 0, 30*time.Second)
	if w.mention {
		fakes.discordChannels(w.first + w.chats)
		return
	}
	fakes.discordDMs(w.first + w.chats)
}

// driveDiscordLoad dispatches the workload's messages through the child's gateway, at once or
// w.rate a second, and waits until every DM shows all its answers (with mention, until every
// message's thread shows its answer).
func driveDiscordLoad(fakes *loadFakes, w discordLoadSpec, load discordLoad) []loadPushed {
	var acks []loadPushed
	if w.rate > 0 {
		paced(w.messages, w.rate, func(i int) {
			acks = append(acks, fakes.pushDiscord(load.chats[i:i+1], load.texts[i:i+1], w.mention)...)
		})
	} else {
		acks = fakes.pushDiscord(load.chats, load.texts, w.mention)
	}
	fakes.wait("discord-posted", w.postedBefore+w.messages, 0, 0, 5*time.Minute)
	answered := "discord-answered"
	if w.mention {
		answered = "discord-answered-mention"
	}
	fakes.wait(answered, w.messages, w.chats, int64(w.first), 30*time.Second)
	return acks
}

// verifyDiscordLoad checks every message got exactly one bot message answering it (replying to
// it with its message_reference, or posted in the thread started from it) and showing its answer,
// with no placeholder left and no other bot message posted; it returns each message's receipt →
// first visible reply.
func verifyDiscordLoad(b *testing.B, posted map[int][]discordfake.Message, load discordLoad, acks []loadPushed) []time.Duration {
	b.Helper()
	asked := discordAsked(acks)
	replies := map[string][]discordfake.Message{} // user message id → the bot's replies to it
	placeholders, total := 0, 0
	for _, ps := range posted {
		for _, p := range ps {
			total++
			if isDiscordPlaceholder(p) {
				placeholders++
			}
			to := discordAnswers(p, asked)
			replies[to] = append(replies[to], p)
		}
	}
	lat := make([]time.Duration, 0, len(acks))
	lost, doubled := 0, 0
	for i, a := range acks {
		got := replies[a.MsgID]
		switch {
		case len(got) == 0 || !strings.Contains(got[0].Text(), "echo: "+load.texts[i]):
			lost++
			continue
		case len(got) > 1:
			doubled += len(got) - 1
		}
		lat = append(lat, got[0].CreatedAt.Sub(time.Unix(0, a.At)))
	}
	// Bot messages beyond one per message are doubles even when they reply to none of the load's.
	doubled += max(0, total-len(acks)-lost-doubled)
	if lost+doubled+placeholders > 0 || len(acks) != len(load.texts) {
		// The benchmark reports no figures when it fails: the answered messages' latencies, for
		// comparing a failing build with a passing one.
		b.Fatalf("%d lost, %d doubled, %d placeholders left behind (%d of %d pushed); first reply of the %d answered p50 %v, p99 %v",
			lost, doubled, placeholders, len(acks), len(load.texts), len(lat), percentile(lat, 50), percentile(lat, 99))
	}
	return lat
}

// discordAsked is the set of the pushed messages' ids.
func discordAsked(acks []loadPushed) map[string]bool {
	asked := make(map[string]bool, len(acks))
	for _, a := range acks {
		asked[a.MsgID] = true
	}
	return asked
}

// discordAnswers is the id of the user message that bot message p answers: the one whose thread
// p is posted in (a thread started from a message has the message's id), else the one p replies
// to.
func discordAnswers(p discordfake.Message, asked map[string]bool) string {
	if asked[p.ChannelID] {
		return p.ChannelID
	}
	return p.ReplyTo
}

// discordLoadUser is the user of the c-th load DM, and the author of the mentions in the c-th
// load channel.
func discordLoadUser(c int) discordfake.User {
	return discordfake.User{ID: fmt.Sprintf("42%016d", c), Username: fmt.Sprintf("load%d", c)}
}

// discordDMs returns the child's first n load DM channels, creating those missing; DM c is with
// discordLoadUser(c).
func (s *loadFakesServer) discordDMs(n int) []string {
	s.dcMu.Lock()
	defer s.dcMu.Unlock()
	for c := len(s.dcDMs); c < n; c++ {
		s.dcDMs = append(s.dcDMs, s.dc.DM(discordLoadUser(c).ID))
	}
	return slices.Clone(s.dcDMs[:n])
}

// discordLoadGuild is the id of the guild holding the load channels the child created in its
// batch-th batch.
func discordLoadGuild(batch int) string { return fmt.Sprintf("7%017d", 100+batch) }

// discordChannels returns the child's first n load channels (guild text channels), creating
// those missing. The missing ones are made in a new guild, added once they all exist, so that a
// single GUILD_CREATE tells the bot of them, as Discord tells a bot of a guild's channels — the
// bot looks up no channel.
func (s *loadFakesServer) discordChannels(n int) []string {
	s.dcMu.Lock()
	defer s.dcMu.Unlock()
	if missing := n - len(s.dcChannels); missing > 0 {
		guild := discordLoadGuild(s.dcGuilds)
		s.dcGuilds++
		for range missing - 1 {
			s.dcChannels = append(s.dcChannels, s.dc.TextChannel(guild))
		}
		s.dcChannels = append(s.dcChannels, s.dc.Guild(guild)) // its own channel, and the announcement
	}
	return slices.Clone(s.dcChannels[:n])
}

// discordMentionPosts returns, for the c-th load channel ch, the bot's posts in ch and in every
// thread started from a user message of ch, and the user messages there.
func (s *loadFakesServer) discordMentionPosts(ch string) (bot []discordfake.Message, asked []string) {
	for _, m := range s.dc.Posted(ch) {
		if m.Author.ID == discordfake.BotID {
			bot = append(bot, m)
			continue
		}
		asked = append(asked, m.ID)
		bot = append(bot, s.dc.PostedByBot(m.ID)...)
	}
	return bot, asked
}

// discordMentionsAnswered reports whether each of the chats load channels from index first
// holds n/chats mentions (spread as newDiscordLoad spreads them), each answered by exactly one
// bot message (in its thread, or replying to it where no thread could be started), none a
// placeholder.
func (s *loadFakesServer) discordMentionsAnswered(n, chats, first int) bool {
	for c, ch := range s.discordChannels(first + chats)[first:] {
		bot, asked := s.discordMentionPosts(ch)
		if len(asked) != n/chats+boolInt(c < n%chats) || len(bot) != len(asked) {
			return false
		}
		ids := make(map[string]bool, len(asked))
		for _, id := range asked {
			ids[id] = true
		}
		answered := make(map[string]bool, len(asked))
		for _, p := range bot {
			to := discordAnswers(p, ids)
			if isDiscordPlaceholder(p) || !ids[to] || answered[to] {
				return false
			}
			answered[to] = true
		}
	}
	return true
}

// discordRoutes adds the child's Discord control endpoints to m.
func (s *loadFakesServer) discordRoutes(m *http.ServeMux) {
	// POST /discord/dms?n=chats creates the first n load DMs (if missing).
	m.HandleFunc("POST /discord/dms", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		s.discordDMs(n)
		w.WriteHeader(http.StatusNoContent)
	})
	// POST /discord/channels?n=chats creates the first n load channels (if missing).
	m.HandleFunc("POST /discord/channels", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		s.discordChannels(n)
		w.WriteHeader(http.StatusNoContent)
	})
	// POST /discord/push {"chats":[..],"texts":[..],"mention":bool} → []loadPushed: texts[i]
	// posted by discordLoadUser(chats[i]) in its DM — with mention, in load channel chats[i],
	// mentioning the bot — each dispatched as MESSAGE_CREATE over the gateway.
	m.HandleFunc("POST /discord/push", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Chats   []int    `json:"chats"`
			Texts   []string `json:"texts"`
			Mention bool     `json:"mention"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Chats) != len(req.Texts) {
			http.Error(w, "bad push", http.StatusBadRequest)
			return
		}
		n := slices.Max(append([]int{-1}, req.Chats...)) + 1
		var chans []string
		if req.Mention {
			chans = s.discordChannels(n)
		} else {
			chans = s.discordDMs(n)
		}
		out := make([]loadPushed, len(req.Texts))
		for i, text := range req.Texts {
			at := time.Now()
			id := s.dc.Post(discordfake.UserMessage{Channel: chans[req.Chats[i]], Author: discordLoadUser(req.Chats[i]), Content: text,
				MentionBot: req.Mention})
			out[i] = loadPushed{MsgID: id, At: at.UnixNano()}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	// GET /discord/posted?first=i&chats=n → map load index → what the bot posted in the load DM
	// of that index, if there is one, and in the load channel of that index, if there is one,
	// with the threads started from the channel's messages, for the n indexes from i. A child
	// serves one workload: its load chats are DMs or channels.
	m.HandleFunc("GET /discord/posted", func(w http.ResponseWriter, r *http.Request) {
		first, _ := strconv.Atoi(r.URL.Query().Get("first"))
		chats, _ := strconv.Atoi(r.URL.Query().Get("chats"))
		s.dcMu.Lock()
		dms, chans := len(s.dcDMs), len(s.dcChannels)
		s.dcMu.Unlock()
		out := make(map[int][]discordfake.Message, chats)
		if dms > first {
			for c, ch := range s.discordDMs(min(dms, first+chats))[first:] {
				out[first+c] = s.dc.PostedByBot(ch)
			}
		}
		if chans > first {
			for c, ch := range s.discordChannels(min(chans, first+chats))[first:] {
				bot, _ := s.discordMentionPosts(ch)
				out[first+c] = append(out[first+c], bot...)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
}

// discordDMs has the child create the first n load DMs.
func (f *loadFakes) discordDMs(n int) {
	f.tb.Helper()
	if code := f.call(http.MethodPost, fmt.Sprintf("/discord/dms?n=%d", n), nil, nil); code != http.StatusNoContent {
		f.tb.Fatalf("load fakes: discord dms answered %d", code)
	}
}

// discordChannels has the child create the first n load channels.
func (f *loadFakes) discordChannels(n int) {
	f.tb.Helper()
	if code := f.call(http.MethodPost, fmt.Sprintf("/discord/channels?n=%d", n), nil, nil); code != http.StatusNoContent {
		f.tb.Fatalf("load fakes: discord channels answered %d", code)
	}
}

// pushDiscord dispatches texts[i] from discordLoadUser(chats[i]) in its DM over the gateway —
// with mention, in load channel chats[i], mentioning the bot.
func (f *loadFakes) pushDiscord(chats []int, texts []string, mention bool) []loadPushed {
	f.tb.Helper()
	var out []loadPushed
	in := map[string]any{"chats": chats, "texts": texts, "mention": mention}
	if code := f.call(http.MethodPost, "/discord/push", in, &out); code != http.StatusOK {
		f.tb.Fatalf("load fakes: discord push answered %d", code)
	}
	return out
}

// discordPosted returns what the bot posted in each of the chats load DMs (or load channels,
// with the threads started from their messages) from index first.
func (f *loadFakes) discordPosted(first, chats int) map[int][]discordfake.Message {
	out := map[int][]discordfake.Message{}
	f.call(http.MethodGet, fmt.Sprintf("/discord/posted?first=%d&chats=%d", first, chats), nil, &out)
	return out
}
