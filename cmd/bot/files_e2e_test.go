package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// The end-to-end tests of the files users send (issue 37), one scenario run on every platform:
// each platform's driver sends a message with one file through its fake, the real adapter
// downloads it with the platform's authentication, core/attach reads it, and the real model
// client sends what it made of it to the model fake. Two conversations per platform: one routed
// to the profile "eyes" (vision on, its own model), one on the default profile (vision off).

// The files of the scenario.
const (
	fileText       = "The launch word is PELICAN.\nSecond line of the notes.\n"
	fileTranscript = "please water the plants on Friday"
	eyesModel      = "vision-model"
	transcribeWith = "whisper-1"
	// hugeSize is a size the platforms declare over attach.DefaultMaxBytes (20 MiB).
	hugeSize = 25 << 20
)

// filePNG is a small, whole PNG (the model is only sent images that decode).
func filePNG(t testing.TB) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fileOgg is the first page of an OGG/Opus stream, as a voice note starts.
func fileOgg() []byte {
	const codec = "OpusHead"
	b := []byte("OggS\x00\x02")
	b = append(b, make([]byte, 8+4+4+4)...) // granule, serial, sequence, checksum
	b = append(b, 1, byte(len(codec)+11))   // one segment
	b = append(b, codec...)
	return append(b, 1, 2, 0x38, 1, 0x80, 0xbb, 0, 0, 0, 0, 0)
}

// fileELF is the start of a Linux executable.
func fileELF() []byte { return append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 56)...) }

// filePE is the start of a Windows executable.
func filePE() []byte {
	b := make([]byte, 128)
	copy(b, "MZ\x90\x00")
	binary.LittleEndian.PutUint32(b[0x3c:], 0x40)
	copy(b[0x40:], "PE\x00\x00")
	return b
}

// sentFile is a file a user sends, as the scenario describes it to every platform.
type sentFile struct {
	name, mime string
	data       []byte
	// size, when > 0, is the size the platform declares instead of len(data).
	size int64
	// voice sends it as a voice note where the platform has them (Telegram); elsewhere it is an
	// audio file.
	voice bool
	// photo sends it as a photo where the platform has them (Telegram).
	photo bool
}

// fileDriver sends messages with files on one platform, in the two conversations.
type fileDriver interface {
	// send posts text with f in the vision conversation (eyes) or the default one, failing every
	// download of f when broken, waits for the answer and returns what it shows.
	send(t *testing.T, eyes bool, text string, f sentFile, broken bool) string
	// fetches counts the requests the bot made for files' bytes (and, on Telegram, for their
	// paths) so far.
	fetches() int
	// secrets are what must never show in an answer, a model request or the logs: the bot's
	// token and the files' URLs (which hold a token or a signature).
	secrets() []string
}

// fileCase is one acceptance point of the scenario: a file sent in a conversation, and what the
// model and the user must be told of it.
type fileCase struct {
	name   string
	eyes   bool
	file   func(t testing.TB) sentFile
	broken bool
	// notice, when set, is the line the answer must start with.
	notice string
	// unfetched: the platform stated a size over the limit, so nothing is asked of it.
	unfetched bool
	check     func(t *testing.T, user modelserver.Message, transcripts []modelserver.Transcription)
}

// wantImages fails unless the message carries exactly the PNG images of the given sizes.
func wantImages(t *testing.T, m modelserver.Message, sizes ...int) {
	t.Helper()
	if len(m.Images) != len(sizes) {
		t.Fatalf("the user message has %d image part(s) %+v, want %d", len(m.Images), m.Images, len(sizes))
	}
	for i, img := range m.Images {
		if img.MIME != "image/png" || img.Size != sizes[i] || img.URL != "" {
			t.Errorf("image part %d is %+v, want a data: URL of image/png, %d bytes", i, img, sizes[i])
		}
	}
}

// wantContent fails unless the message's text holds every one of want.
func wantContent(t *testing.T, m modelserver.Message, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(m.Content, w) {
			t.Errorf("the user message lacks %q:\n%s", w, m.Content)
		}
	}
}

// fileCases is the scenario: every kind of file the issue names, in order.
func fileCases() []fileCase {
	return []fileCase{{
		name: "ImageSeenByVisionProfile", eyes: true,
		file: func(t testing.TB) sentFile { return sentFile{name: "chart.png", mime: "image/png", data: filePNG(t)} },
		check: func(t *testing.T, m modelserver.Message, _ []modelserver.Transcription) {
			wantImages(t, m, len(filePNG(t)))
			wantContent(t, m, `Attached image "chart.png" (image/png`, "shown below as image 1")
		},
	}, {
		name: "ImageToldToModelWithoutVision", eyes: false,
		file: func(t testing.TB) sentFile { return sentFile{name: "chart.png", mime: "image/png", data: filePNG(t)} },
		check: func(t *testing.T, m modelserver.Message, _ []modelserver.Transcription) {
			wantImages(t, m)
			wantContent(t, m, `Attached image "chart.png" (image/png`, "this model cannot see images")
		},
	}, {
		name: "TextFileContent", eyes: false,
		file: func(testing.TB) sentFile {
			return sentFile{name: "notes.md", mime: "text/markdown", data: []byte(fileText)}
		},
		check: func(t *testing.T, m modelserver.Message, _ []modelserver.Transcription) {
			wantImages(t, m)
			wantContent(t, m, `Attached file "notes.md"`, "The launch word is PELICAN.", "Second line of the notes.", `[end of "notes.md"]`)
		},
	}, {
		name: "VoiceNoteTranscribed", eyes: false,
		file: func(testing.TB) sentFile {
			return sentFile{name: "memo.ogg", mime: "audio/ogg", data: fileOgg(), voice: true}
		},
		check: func(t *testing.T, m modelserver.Message, tr []modelserver.Transcription) {
			if len(tr) != 1 {
				t.Fatalf("%d transcription requests, want 1", len(tr))
			}
			if tr[0].Path != "/v1/audio/transcriptions" || tr[0].Authorization != "Bearer sk-e2e-test" {
				t.Errorf("transcription sent to %s with %q, want the top-level endpoint and its key", tr[0].Path, tr[0].Authorization)
			}
			if tr[0].Model != transcribeWith || !bytes.Equal(tr[0].File, fileOgg()) || !strings.HasSuffix(tr[0].FileName, ".ogg") {
				t.Errorf("transcription of %q (%d bytes) with model %q, want the voice note's bytes with %q",
					tr[0].FileName, len(tr[0].File), tr[0].Model, transcribeWith)
			}
			wantContent(t, m, `Attached audio "`, "its transcript is between", fileTranscript)
		},
	}, {
		name: "OversizedFileTold", eyes: false,
		file: func(testing.TB) sentFile {
			return sentFile{name: "huge.zip", mime: "application/zip", data: []byte("PK\x03\x04 not really"), size: hugeSize}
		},
		notice:    `"huge.zip" could not be read: it is larger than the 20 MB limit.`,
		unfetched: true,
		check: func(t *testing.T, m modelserver.Message, _ []modelserver.Transcription) {
			wantContent(t, m, `Attached file "huge.zip" (25 MB): could not be read`)
		},
	}, {
		name: "UndownloadableFileTold", eyes: false, broken: true,
		file: func(testing.TB) sentFile {
			return sentFile{name: "report.pdf", mime: "application/pdf", data: []byte("%PDF-1.7\n")}
		},
		notice: `"report.pdf" could not be read: the download failed`,
		check: func(t *testing.T, m modelserver.Message, _ []modelserver.Transcription) {
			wantContent(t, m, `Attached file "report.pdf": could not be read — the download failed`)
		},
	}, {
		name: "PNGNamedTxtIsAnImage", eyes: true,
		file: func(t testing.TB) sentFile { return sentFile{name: "notes.txt", mime: "text/plain", data: filePNG(t)} },
		check: func(t *testing.T, m modelserver.Message, _ []modelserver.Transcription) {
			wantImages(t, m, len(filePNG(t)))
			wantContent(t, m, `Attached image "notes.txt" (image/png`)
		},
	}, {
		name: "ELFNamedPNGNotReadable", eyes: true,
		file: func(testing.TB) sentFile { return sentFile{name: "cat.png", mime: "image/png", data: fileELF()} },
		check: func(t *testing.T, m modelserver.Message, _ []modelserver.Transcription) {
			wantImages(t, m)
			wantContent(t, m, `Attached file "cat.png" (application/x-executable`, "not readable here")
		},
	}, {
		name: "PENamedPNGNotReadable", eyes: true,
		file: func(testing.TB) sentFile { return sentFile{name: "dog.png", mime: "image/png", data: filePE()} },
		check: func(t *testing.T, m modelserver.Message, _ []modelserver.Transcription) {
			wantImages(t, m)
			wantContent(t, m, `Attached file "dog.png" (application/vnd.microsoft.portable-executable`, "not readable here")
		},
	}}
}

// withFileProfiles configures the scenario's profiles: eyesChat is routed to "eyes" (vision on,
// eyesModel), every other conversation gets the default profile (vision off); voice notes are
// transcribed by the top-level endpoint.
func withFileProfiles(cfg *config.Config, eyesChat string) {
	on := true
	cfg.Runs.PlaceholderAfter = time.Minute // one closing message per answer, never a placeholder
	cfg.LLM.Transcription = config.Transcription{Model: transcribeWith}
	cfg.Profiles = map[string]config.Profile{"eyes": {Model: eyesModel, Vision: &on}}
	cfg.Routes = []config.Route{{Match: config.RouteMatch{Channel: eyesChat}, Profile: "eyes"}}
}

// fileModel answers with the first line of the user's message (the case's caption): short
// answers, whatever the files made of the message.
func fileModel(r modelserver.Request) modelserver.Reply {
	first, _, _ := strings.Cut(r.LastUserText(), "\n")
	return modelserver.Reply{Content: "seen: " + first, ChunkSize: 64}
}

// lastUser is the last user message of the request whose last user message starts with
// caption.
func lastUser(t *testing.T, model *modelserver.Server, caption string) (modelserver.Request, modelserver.Message) {
	t.Helper()
	for _, r := range model.Requests() {
		for i := len(r.Messages) - 1; i >= 0; i-- {
			if m := r.Messages[i]; m.Role == "user" {
				if strings.HasPrefix(m.Content, caption) {
					return r, m
				}
				break
			}
		}
	}
	t.Fatalf("no model request for %q", caption)
	return modelserver.Request{}, modelserver.Message{}
}

// answerBody is the body of the closing card an answer shows: the text after its title line
// ("✅ Answer"; Slack's fallback text has the title with the status before the blocks), without
// the leading space and markup of its first line (the notices are in italics, which each
// platform writes its own way).
func answerBody(s string) string {
	_, body, ok := strings.Cut(s, "✅ Answer\n")
	if !ok {
		return ""
	}
	return strings.TrimLeft(body, " \n_*")
}

// runFileScenario runs every case of fileCases through d, one after the other in its two
// conversations, and checks that nothing secret showed anywhere.
func runFileScenario(t *testing.T, e *e2e, d fileDriver) {
	e.model.SetFunc(fileModel)
	e.model.SetTranscribe(func(modelserver.Transcription) modelserver.Reply {
		return modelserver.Reply{Content: fileTranscript}
	})
	var answers []string
	for i, c := range fileCases() {
		t.Run(c.name, func(t *testing.T) {
			caption := "case " + strconv.Itoa(i) + " " + c.name
			before, fetched := len(e.model.Transcriptions()), d.fetches()
			answer := d.send(t, c.eyes, caption, c.file(t), c.broken)
			answers = append(answers, answer)
			req, user := lastUser(t, e.model, caption)
			wantModel := e.cfg.LLM.Model
			if c.eyes {
				wantModel = eyesModel
			}
			if req.Model != wantModel {
				t.Errorf("the request went to model %q, want %q (the conversation's profile)", req.Model, wantModel)
			}
			c.check(t, user, e.model.Transcriptions()[before:])
			if n := d.fetches() - fetched; c.unfetched && n != 0 {
				t.Errorf("%d requests for the file, want none: its stated size is over the limit", n)
			} else if !c.unfetched && n == 0 {
				t.Error("the file was never downloaded")
			}
			if !strings.Contains(answer, "seen: "+caption) {
				t.Errorf("the answer shows %q, want the model's", answer)
			}
			switch {
			case c.notice != "":
				if !strings.HasPrefix(answerBody(answer), c.notice) {
					t.Errorf("the answer shows %q, want its body to start with the notice %q", answer, c.notice)
				}
			case strings.Contains(answer, "could not be"):
				t.Errorf("the answer shows a notice for a file that was read: %q", answer)
			}
		})
	}
	logs := e.logs.String()
	for _, s := range d.secrets() {
		for i, a := range answers {
			if strings.Contains(a, s) {
				t.Errorf("answer %d shows a secret or a file URL (%.12s…): %q", i, s, a)
			}
		}
		for _, r := range e.model.Requests() {
			for _, m := range r.Messages {
				if strings.Contains(m.Content, s) {
					t.Errorf("a model request shows a secret or a file URL (%.12s…)", s)
				}
			}
		}
		if strings.Contains(logs, s) {
			t.Errorf("the logs show a secret or a file URL (%.12s…)", s)
		}
	}
}

// telegramFiles sends files in Ann's private chat (eyes) and Bob's (default).
type telegramFiles struct {
	e    *e2e
	sent map[int64]int
}

func (d *telegramFiles) send(t *testing.T, eyes bool, text string, f sentFile, broken bool) string {
	t.Helper()
	user := bob
	if eyes {
		user = ann
	}
	nf := telegramfake.NewFile{Kind: telegramfake.KindDocument, Name: f.name, MimeType: f.mime, Data: f.data, Size: int(f.size)}
	switch {
	case f.voice:
		nf.Kind, nf.Name = telegramfake.KindVoice, ""
	case f.photo:
		nf.Kind, nf.Name, nf.MimeType = telegramfake.KindPhoto, "", ""
	}
	uf := d.e.tg.AddFile(nf)
	if broken {
		d.e.tg.FailFile(uf.FileID, 5, telegramfake.FileFault{Status: 500})
	}
	d.e.tg.PushMessage(telegramfake.In{Chat: telegramfake.Private(user), From: user, Text: text, Caption: true, Files: []telegramfake.UserFile{uf}})
	d.sent[user.ID]++
	n := d.sent[user.ID]
	waitFor(t, strconv.Itoa(n)+" answer(s) in the chat", 15*time.Second, func() bool { return answered(d.e.tg, user.ID, n) })
	return visible(d.e.tg.Posted(user.ID)[n-1])
}

func (d *telegramFiles) fetches() int {
	return d.e.tg.Count("getFile") + d.e.tg.Count(telegramfake.DownloadMethod)
}

func (d *telegramFiles) secrets() []string {
	return []string{d.e.tg.Token(), "/file/bot"}
}

// TestTelegramFilesReachTheModel proves, on Telegram, every acceptance point of the files users
// send (see fileCases): images as image parts where the profile sees them and as a line saying
// they cannot be seen where it does not, a text file's content, a voice note's transcript, a
// notice ahead of the answer for a file too large or that would not download, and types read
// from the bytes, not the name — with no token or file URL in any answer, request or log line.
func TestTelegramFilesReachTheModel(t *testing.T) {
	t.Parallel()
	e := newE2E(t, func(c *config.Config) { withFileProfiles(c, strconv.FormatInt(ann.ID, 10)) })
	e.start()
	d := &telegramFiles{e: e, sent: map[int64]int{}}
	runFileScenario(t, e, d)

	// A photo (not a file) is a message's largest size, named for the model after its kind.
	t.Run("PhotoSeenByVisionProfile", func(t *testing.T) {
		var b bytes.Buffer
		if err := jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, 8, 8)), nil); err != nil {
			t.Fatal(err)
		}
		answer := d.send(t, true, "case photo", sentFile{data: b.Bytes(), photo: true}, false)
		if !strings.Contains(answer, "seen: case photo") {
			t.Errorf("the answer shows %q, want the model's", answer)
		}
		_, user := lastUser(t, e.model, "case photo")
		if len(user.Images) != 1 || user.Images[0].MIME != "image/jpeg" || user.Images[0].Size != b.Len() {
			t.Errorf("image parts %+v, want the photo's %d bytes of image/jpeg", user.Images, b.Len())
		}
		wantContent(t, user, `Attached image "photo.jpg" (image/jpeg`, "shown below as image 1")
	})
}

// slackFiles sends files in Ann's DM (eyes) and Bob's (default).
type slackFiles struct {
	e    *slackE2E
	urls []string
	sent map[string]int
}

const (
	slackEyesDM  = "D0EYES"
	slackPlainDM = "D0PLAIN"
)

func (d *slackFiles) send(t *testing.T, eyes bool, text string, f sentFile, broken bool) string {
	t.Helper()
	channel, user := slackPlainDM, slackBob
	if eyes {
		channel, user = slackEyesDM, slackAnn
	}
	sf := d.e.sl.AddFile(slackfake.NewFile{Name: f.name, MIME: f.mime, Data: f.data, Size: f.size})
	d.urls = append(d.urls, sf.URLPrivate, sf.URLPrivateDownload)
	if broken {
		d.e.sl.FailFile(sf.ID, 5, slackfake.FileFault{Status: 500})
	}
	d.e.sl.PushMessage(slackfake.Msg{Channel: channel, ChannelType: "im", User: user, Text: text, Subtype: "file_share",
		Files: []slackfake.File{sf}})
	d.sent[channel]++
	n := d.sent[channel]
	var got []slackfake.Message
	waitFor(t, strconv.Itoa(n)+" answer(s) in the DM", 15*time.Second, func() bool {
		got = d.e.inThread(channel, "")
		if len(got) != n {
			return false
		}
		for _, m := range got {
			if slackPlaceholder(m) || m.Streaming {
				return false
			}
		}
		return true
	})
	return slackVisible(got[n-1])
}

func (d *slackFiles) fetches() int { return d.e.sl.Count(slackfake.DownloadMethod) }

func (d *slackFiles) secrets() []string {
	return append([]string{d.e.sl.BotToken(), "/files-pri/"}, d.urls...)
}

// TestSlackFilesReachTheModel proves, on Slack, what TestTelegramFilesReachTheModel proves on
// Telegram: the files shared in a DM are downloaded with the workspace's bot token and reach the
// model as the conversation's profile allows.
func TestSlackFilesReachTheModel(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, func(c *config.Config) { withFileProfiles(c, slackEyesDM) })
	e.start()
	runFileScenario(t, e.e2e, &slackFiles{e: e, sent: map[string]int{}})
}

// discordFiles sends files in Ann's DM (eyes) and Bob's (default).
type discordFiles struct {
	e           *discordE2E
	eyes, plain string
	urls        []string
	sent        map[string]int
}

func (d *discordFiles) send(t *testing.T, eyes bool, text string, f sentFile, broken bool) string {
	t.Helper()
	channel, user := d.plain, dBob
	if eyes {
		channel, user = d.eyes, dAnn
	}
	a := d.e.dc.AddFile(channel, discordfake.NewFile{Filename: f.name, ContentType: f.mime, Data: f.data, Size: f.size})
	_, query, _ := strings.Cut(a.URL, "?")
	d.urls = append(d.urls, a.URL, a.ProxyURL, query)
	if broken {
		d.e.dc.FailFile(a.ID, 5, discordfake.FileFault{Status: 500})
	}
	d.e.dc.Post(discordfake.UserMessage{Channel: channel, Author: user, Content: text, Attachments: []discordfake.Attachment{a}})
	d.sent[channel]++
	n := d.sent[channel]
	waitFor(t, strconv.Itoa(n)+" answer(s) in the DM", 15*time.Second, func() bool { return discordAnswered(d.e.dc, channel, n) })
	return d.e.dc.PostedByBot(channel)[n-1].Text()
}

func (d *discordFiles) fetches() int { return len(d.e.dc.Downloads()) }

func (d *discordFiles) secrets() []string {
	return append([]string{d.e.dc.Token(), "/attachments/"}, d.urls...)
}

// TestDiscordFilesReachTheModel proves, on Discord, what TestTelegramFilesReachTheModel proves
// on Telegram: the attachments of DMs are downloaded from their signed CDN URLs and reach the
// model as the conversation's profile allows.
func TestDiscordFilesReachTheModel(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	// Discord names a DM by a channel id it makes: the route is set once the fake made it.
	d := &discordFiles{e: e, eyes: e.dc.DM(dAnn.ID), plain: e.dc.DM(dBob.ID), sent: map[string]int{}}
	withFileProfiles(e.cfg, d.eyes)
	if err := e.cfg.Validate(); err != nil {
		t.Fatalf("test configuration: %v", err)
	}
	e.start()
	runFileScenario(t, e.e2e, d)
}
