package lead_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/lead"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/profile"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// BenchmarkConversationRedisBytes reports the Redis memory (MEMORY USAGE over every key the
// thread store wrote) of a conversation after 10 turns: plain text, and with files on every
// message — a 40 kB photo to a vision profile, a 4 kB text file, a voice note transcribed.
// The history keeps text (the file's text, the transcript, what was attached), never bytes:
//
//	go test -run '^$' -bench ConversationRedisBytes -benchtime 1x ./core/lead/
func BenchmarkConversationRedisBytes(b *testing.B) {
	photo := noisyPNG(b, 40<<10)
	notes := []byte(strings.Repeat("A line of meeting notes, about sixty characters long, ok.\n", 70)) // ~4 kB
	voice := append([]byte("OggS\x00\x02"), make([]byte, 12<<10)...)
	for _, withFiles := range []bool{false, true} {
		name := "text_only"
		if withFiles {
			name = "with_photo_textfile_voice"
		}
		b.Run(name, func(b *testing.B) {
			c := redistest.Client(b)
			prefix := redistest.Prefix(b, c)
			store := threads.New(c, threads.Options{Prefix: prefix})
			vision := true
			set, err := profile.New(profile.Profile{Name: profile.Default, Model: "m", HistoryTurns: 50},
				map[string]profile.Partial{"v": {Vision: &vision}}, []profile.Route{{Profile: "v"}})
			if err != nil {
				b.Fatal(err)
			}
			files := map[string][]byte{"photo.png": photo, "notes.txt": notes, "voice.ogg": voice}
			fetch := func(_ context.Context, _ conv.Key, a conv.Attachment, _ int64) ([]byte, error) {
				return files[a.Name], nil
			}
			p := llm.ScriptFunc(func(llm.Request) llm.Reply { return llm.Reply{Text: answerProse} })
			team, err := lead.NewTeam(p, store, lead.Options{Model: "m", Profiles: set, NoSubagents: true,
				Files: lead.FileOptions{Fetch: fetch, MaxBytes: 1 << 20, MaxTextChars: 20000, MaxFiles: 10, Transcriber: transcript{}}})
			if err != nil {
				b.Fatal(err)
			}
			defer team.Close()
			const convs, turns = 10, 10
			ctx := context.Background()
			for range b.N {
				for i := range convs {
					for j := range turns {
						env := envelope(runs.KindMessage, fmt.Sprintf("Question %d of conversation %d: what should we do about the report?", j, i))
						env.Conv = conv.Key{Platform: "telegram", Chat: fmt.Sprintf("mem-%d", i)}
						if withFiles {
							env.Attachments = []conv.Attachment{
								{Name: "photo.png", MIME: "image/png", Size: int64(len(photo))},
								{Name: "notes.txt", MIME: "text/plain", Size: int64(len(notes))},
								{Name: "voice.ogg", MIME: "audio/ogg", Size: int64(len(voice))},
							}
						}
						if _, err := team.HandleRun(ctx, runs.NewRun(env, &collector{})); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			var total int64
			it := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
			for it.Next(ctx) {
				n, err := c.MemoryUsage(ctx, it.Val()).Result()
				if err != nil {
					b.Fatal(err)
				}
				total += n
			}
			b.ReportMetric(float64(total)/convs, "redis-bytes/conv")
			b.ReportMetric(0, "ns/op")
		})
	}
}

const answerProse = "Here is a short answer of the length a chat model usually writes for a question like " +
	"this one. It restates the question, gives two or three points with a sentence of reasoning each, " +
	"and ends with a suggestion of what to try next. First, check the obvious causes before the " +
	"unusual ones: most problems of this kind come from a setting that was changed recently. Second, " +
	"look at the logs around the time it started, since they usually name the component that failed."

// transcript is a transcriber that writes a 30-second voice note's worth of words.
type transcript struct{}

func (transcript) Transcribe(context.Context, string, string, []byte) (string, error) {
	return strings.Repeat("we should move the release to thursday and tell the team ", 8), nil
}

// noisyPNG is a PNG of about size bytes (noise does not compress).
func noisyPNG(b *testing.B, size int) []byte {
	side := 1
	for side*side < size {
		side++
	}
	img := image.NewGray(image.Rect(0, 0, side, side))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.IntN(256))
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}
