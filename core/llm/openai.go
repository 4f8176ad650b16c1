package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Defaults of an OpenAI-compatible provider: DeepSeek, as DESIGN.md sets.
const (
	DefaultBaseURL        = "https://api.deepseek.com"
	DefaultModel          = "deepseek-chat"
	DefaultTimeout        = 5 * time.Minute
	DefaultMaxRetries     = 3
	DefaultRetryBaseDelay = 500 * time.Millisecond
	DefaultRetryMaxDelay  = 30 * time.Second
)

// OpenAIOptions configures an OpenAI-compatible provider. Zero values take the defaults above.
type OpenAIOptions struct {
	// BaseURL is the API root the client appends "/chat/completions" to, e.g.
	// "https://api.deepseek.com" or "https://api.openai.com/v1".
	BaseURL string
	// APIKey is sent as a bearer token (none when empty, for local servers). It never appears
	// in errors or logs.
	APIKey string
	// Model is used when a Request names none.
	Model string
	// Timeout bounds one Stream call, its retries and waits included. Negative: no bound.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is retried (429, 5xx, connection errors,
	// and only while nothing was streamed yet). Negative: never retry.
	MaxRetries int
	// RetryBaseDelay is the first backoff; it doubles per retry, with jitter.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps one backoff. A Retry-After longer than it is not waited for: the call
	// fails at once with a *StatusError carrying RetryAfter, for the caller to reschedule.
	RetryMaxDelay time.Duration
	// HTTPClient replaces the default client (which has no overall timeout: streams are long,
	// and Timeout and ctx bound the call).
	HTTPClient *http.Client
	// Logger receives a warning per retry; nil logs nothing.
	Logger *slog.Logger
}

// OpenAI is a Provider for any OpenAI-compatible chat-completions server, DeepSeek by default.
// It streams every call, assembles tool calls from their pieces, keeps DeepSeek's reasoning
// apart from the content, and retries transient failures. Safe for concurrent use.
type OpenAI struct {
	opts   OpenAIOptions
	host   string
	client *openai.Client
	tools  toolCache
	log    *slog.Logger
	// sleep waits between attempts; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns a provider with opts, defaults filled in. It fails only when BaseURL is
// not an absolute http(s) URL.
func NewOpenAI(opts OpenAIOptions) (*OpenAI, error) {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: openai: base URL %q is not an absolute http(s) URL", opts.BaseURL)
	}
	if opts.Model == "" {
		opts.Model = DefaultModel
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	}
	if opts.RetryBaseDelay <= 0 {
		opts.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if opts.RetryMaxDelay <= 0 {
		opts.RetryMaxDelay = DefaultRetryMaxDelay
	}
	hc := opts.HTTPClient
	if hc == nil {
		// Many runs call the model at once: keep a connection per concurrent call instead of
		// net/http's default of two idle connections per host.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
		hc = &http.Client{Transport: tr}
	}
	cfg := openai.DefaultConfig(opts.APIKey)
	cfg.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	cfg.HTTPClient = capturingDoer{hc}
	// DeepSeek sends ": keep-alive" comments while busy; go-openai counts each comment and blank
	// line against this limit and fails the stream past it (default 300).
	cfg.EmptyMessagesLimit = 100_000
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &OpenAI{opts: opts, host: u.Host, client: openai.NewClientWithConfig(cfg), log: log, sleep: sleepCtx}, nil
}

// Name reports "openai".
func (p *OpenAI) Name() string { return "openai" }

// Stream sends req and streams the answer to onDelta (which may be nil). Failures are
// classified: errors.Is(err, ErrAuth) for 401/403, errors.Is(err, ErrNotFound) for 404,
// *StatusError for any other HTTP failure after retries, ErrTimeout (with the context's error)
// when Timeout passed, the context's error (wrapped) when ctx is done, ErrStreamCut when the
// stream broke off after part of the answer arrived (never retried here: the part already went
// to onDelta), and ErrUnavailable for other transport failures. Temporary tells which may pass.
func (p *OpenAI) Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	cctx := ctx
	if p.opts.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, p.opts.Timeout)
		defer cancel()
	}
	c, err := p.prepare(req)
	if err != nil {
		return Response{}, fmt.Errorf("llm: openai: call to %s: %w", p.host, err)
	}
	for attempt := 0; ; attempt++ {
		resp, f := p.once(cctx, c, onDelta)
		if f == nil {
			return resp, nil
		}
		if err := p.contextErr(ctx, cctx); err != nil {
			return Response{}, err
		}
		if !f.retryable || f.streamed || p.opts.MaxRetries < 0 || attempt >= p.opts.MaxRetries {
			return Response{}, f.err
		}
		wait := backoff(attempt, p.opts.RetryBaseDelay, p.opts.RetryMaxDelay)
		if f.retryAfter > 0 {
			if f.retryAfter > p.opts.RetryMaxDelay {
				return Response{}, f.err
			}
			wait = f.retryAfter
		}
		if dl, ok := cctx.Deadline(); ok && time.Until(dl) < wait {
			return Response{}, f.err // waiting would outlast the call's budget
		}
		p.log.Warn("llm: retrying model call", "provider", p.host, "attempt", attempt+1,
			"status", f.status, "wait", wait, "error", f.err.Error())
		if p.sleep(cctx, wait) != nil {
			if err := p.contextErr(ctx, cctx); err != nil {
				return Response{}, err
			}
			return Response{}, f.err
		}
	}
}

// contextErr returns the error to report when ctx (the caller's) or cctx (bounded by Timeout)
// is done, nil while both go on.
func (p *OpenAI) contextErr(ctx, cctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("llm: openai: call to %s: %w", p.host, err)
	}
	if err := cctx.Err(); err != nil {
		return fmt.Errorf("llm: openai: call to %s timed out after %v: %w: %w", p.host, p.opts.Timeout, ErrTimeout, err)
	}
	return nil
}

// call is one model call ready to send: go-openai's view of it and its pre-encoded body.
type call struct {
	// stub carries only what go-openai reads before sending (the model, for the URL and its
	// checks, and max_tokens); go-openai's encoding of it is replaced by body on the wire.
	stub openai.ChatCompletionRequest
	body []byte
}

// toolsMarker stands for a request's tools when go-openai's checks only ask whether there are any.
var toolsMarker = []openai.Tool{{Type: openai.ToolTypeFunction}}

// prepare encodes req for the wire and runs go-openai's model checks on it, as go-openai would
// on the full request.
func (p *OpenAI) prepare(req Request) (call, error) {
	model := req.Model
	if model == "" {
		model = p.opts.Model
	}
	var c call
	c.stub.Model = model
	//lint:ignore SA1019 DeepSeek and most OpenAI-compatible servers read max_tokens, not max_completion_tokens.
	c.stub.MaxTokens = req.MaxTokens
	check := c.stub
	check.Tools = toolsMarker[:min(len(req.Tools), 1)]
	if err := openai.NewReasoningValidator().Validate(check); err != nil {
		return call{}, err
	}
	body, err := p.wireBody(req, model)
	if err != nil {
		return call{}, err
	}
	c.body = body
	return c, nil
}

// errStreamEnded means the stream ended before the server said it was finished.
var errStreamEnded = errors.New("the stream ended before the answer was finished")

// once makes one attempt. On failure it reports whether anything reached onDelta.
func (p *OpenAI) once(ctx context.Context, c call, onDelta func(Delta)) (Response, *failure) {
	rec := &exchange{body: c.body}
	ctx = context.WithValue(ctx, exchangeKey{}, rec)
	stream, err := p.client.CreateChatCompletionStream(ctx, c.stub)
	if err != nil {
		return Response{}, p.classify(err, rec, false)
	}
	defer stream.Close()
	var acc accumulator
	var chunk wireChunk
	for {
		// RecvRaw frames the events and reports error events as Recv does; the chunk is
		// decoded here into the few fields the accumulator reads.
		line, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			if !acc.finished {
				return Response{}, p.classify(errStreamEnded, rec, acc.streamed)
			}
			return acc.response(), nil
		}
		if err != nil {
			return Response{}, p.classify(err, rec, acc.streamed)
		}
		if err := decodeChunk(line, &chunk); err != nil {
			return Response{}, p.classify(err, rec, acc.streamed)
		}
		acc.add(&chunk, onDelta)
	}
}

// accumulator assembles one streamed answer.
type accumulator struct {
	content, reasoning strings.Builder
	calls              []*partialCall
	byIndex            map[int]*partialCall
	finish             openai.FinishReason
	finished           bool
	streamed           bool
	usage              Usage
}

type partialCall struct {
	id, name string
	args     strings.Builder
}

func (a *accumulator) add(chunk *wireChunk, onDelta func(Delta)) {
	if chunk.Usage != nil {
		a.usage = *chunk.Usage
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // one choice is asked for; ignore any other
		}
		d := ch.Delta
		text := d.Content + d.Refusal
		if text != "" || d.ReasoningContent != "" {
			a.content.WriteString(text)
			a.reasoning.WriteString(d.ReasoningContent)
			a.streamed = true
			if onDelta != nil {
				onDelta(Delta{Content: text, Reasoning: d.ReasoningContent})
			}
		}
		for _, tc := range d.ToolCalls {
			a.streamed = true
			a.toolPiece(tc)
		}
		if ch.FinishReason != "" && ch.FinishReason != openai.FinishReasonNull {
			a.finish = ch.FinishReason
			a.finished = true
		}
	}
}

// toolPiece merges one piece of a tool call, keyed by its index; a piece without an index
// (some servers) continues the last call unless it starts a new one with an id.
func (a *accumulator) toolPiece(tc openai.ToolCall) {
	if a.byIndex == nil {
		a.byIndex = map[int]*partialCall{}
	}
	var c *partialCall
	switch {
	case tc.Index != nil:
		c = a.byIndex[*tc.Index]
		if c == nil {
			c = &partialCall{}
			a.byIndex[*tc.Index] = c
			a.calls = append(a.calls, c)
		}
	case tc.ID == "" && len(a.calls) > 0:
		c = a.calls[len(a.calls)-1]
	default:
		c = &partialCall{}
		a.calls = append(a.calls, c)
	}
	if c.id == "" {
		c.id = tc.ID
	}
	if c.name == "" {
		c.name = tc.Function.Name
	}
	c.args.WriteString(tc.Function.Arguments)
}

func (a *accumulator) response() Response {
	r := Response{Content: a.content.String(), Reasoning: a.reasoning.String(), Usage: a.usage}
	for i, c := range a.calls {
		id := c.id
		if id == "" {
			id = "call_" + strconv.Itoa(i)
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: id, Name: c.name, Arguments: c.args.String()})
	}
	r.Finish = normalizeFinish(a.finish, len(r.ToolCalls) > 0)
	return r
}

// normalizeFinish maps a wire finish reason to a FinishReason. Servers that say "stop" after
// calling tools are read as FinishToolCalls; DeepSeek's "insufficient_system_resource" (the
// answer was cut short) as FinishLength.
func normalizeFinish(f openai.FinishReason, hasCalls bool) FinishReason {
	switch f {
	case openai.FinishReasonLength, "insufficient_system_resource":
		return FinishLength
	case openai.FinishReasonContentFilter:
		return FinishRefusal
	case openai.FinishReasonToolCalls, openai.FinishReasonFunctionCall:
		return FinishToolCalls
	}
	if hasCalls {
		return FinishToolCalls
	}
	return FinishStop
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
