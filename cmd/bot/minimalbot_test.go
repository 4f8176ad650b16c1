package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	openai "github.com/sashabaranov/go-openai"
	"github.com/switchboard-bot/switchboard/config"
)

// The minimal bot is the floor BenchmarkBinary's figures are read against: the least a
// Telegram bot on the same client libraries does for a message — long poll getUpdates, one
// streamed model call, one sendMessage replying to it — with no queue, no state, no Redis, no
// signing, no delivery record. Figures differ from machine to machine by more than most changes
// move them (a system call cost 1.34 µs on one session's machine, a third of that on another),
// so the workload minimalbot_2000msgs_200chats runs it under the same load, fakes and meter as
// `bot run`: the bot's CPU per message over the minimal bot's is the overhead of being
// dependable, and it compares across machines where the bare figures do not.
//
// It is this test binary re-executed with minimalBotEnv set, configured by the same BOT_*
// variables as `bot run` (those it needs), answering /readyz on BOT_HTTP__ADDR once polling.

// minimalBotEnv, set in the environment, makes the test binary run the minimal bot and nothing
// else.
const minimalBotEnv = "SB_LOAD_MINIMAL_BOT"

// minimalBotWorkers bounds the messages in flight, as `bot run`'s worker pool does, and as
// many: the realistic workload keeps 75 answers streaming at once, more than 64 workers take.
const minimalBotWorkers = config.DefaultWorkers

func init() {
	if os.Getenv(minimalBotEnv) == "" {
		return
	}
	if err := runMinimalBot(); err != nil {
		fmt.Fprintln(os.Stderr, "minimal bot:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runMinimalBot() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	client := &http.Client{Transport: tr}

	tg, err := tgbotapi.NewBotAPIWithClient(os.Getenv("BOT_TELEGRAM__TOKEN"),
		os.Getenv("BOT_TELEGRAM__API_URL")+"/bot%s/%s", client)
	if err != nil {
		return fmt.Errorf("getMe: %w", err)
	}
	mcfg := openai.DefaultConfig(os.Getenv("BOT_LLM__API_KEY"))
	mcfg.BaseURL, mcfg.HTTPClient = os.Getenv("BOT_LLM__BASE_URL"), client
	model, modelName := openai.NewClientWithConfig(mcfg), os.Getenv("BOT_LLM__MODEL")

	ln, err := net.Listen("tcp", os.Getenv("BOT_HTTP__ADDR"))
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	work := make(chan tgbotapi.Update)
	var wg sync.WaitGroup
	for range minimalBotWorkers {
		wg.Go(func() {
			for u := range work {
				if err := answerMinimal(ctx, tg, model, modelName, u.Message); err != nil && ctx.Err() == nil {
					fmt.Fprintln(os.Stderr, "minimal bot: answering:", err)
				}
			}
		})
	}
	defer wg.Wait()
	defer close(work)
	offset := 0
	for ctx.Err() == nil {
		updates, err := tg.GetUpdates(tgbotapi.UpdateConfig{Offset: offset, Limit: 100, Timeout: 1})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			fmt.Fprintln(os.Stderr, "minimal bot: getUpdates:", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for _, u := range updates {
			offset = u.UpdateID + 1
			if u.Message == nil {
				continue
			}
			select {
			case work <- u:
			case <-ctx.Done():
			}
		}
	}
	return nil
}

// answerMinimal streams the model's answer to m and sends it as a reply.
func answerMinimal(ctx context.Context, tg *tgbotapi.BotAPI, model *openai.Client, name string, m *tgbotapi.Message) error {
	stream, err := model.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model: name, Stream: true,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "You are a helpful assistant."},
			{Role: openai.ChatMessageRoleUser, Content: m.Text},
		},
	})
	if err != nil {
		return err
	}
	defer stream.Close()
	var text []byte
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if len(r.Choices) > 0 {
			text = append(text, r.Choices[0].Delta.Content...)
		}
	}
	reply := tgbotapi.NewMessage(m.Chat.ID, string(text))
	reply.ReplyToMessageID = m.MessageID
	_, err = tg.Send(reply)
	return err
}
