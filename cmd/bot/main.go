// Command bot runs Switchboard.
//
//	bot chat                 talk to the bot in this terminal (no setup needed)
//	bot run [-c FILE]        production: the configured platforms, workers and HTTP endpoints
//	bot check-config [-c F]  print the effective configuration (secrets redacted) and its problems
//	bot version              print the version
//	bot healthcheck          exit 0 when this machine's `bot run` answers /healthz (containers)
//	bot help [COMMAND]       this summary, or one command's usage
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/switchboard-bot/switchboard/config"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise the module version.
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ()))
}

// Exit codes: 0 success; 2 the command line or the configuration is wrong (fix it and run again);
// 1 the environment failed (Redis, the platform, the network, a port).
const (
	exitOK     = 0
	exitEnv    = 1
	exitConfig = 2
)

// command is one subcommand: its synopsis, what it does, and how it runs. Commands that take
// the configuration get -c.
type command struct {
	name     string
	synopsis string // after "bot <name>"
	summary  string // one line for the overview
	detail   string // the rest of its help
	config   bool
	// ownFlags: the command parses its arguments itself (inv.args); --help is still answered here.
	ownFlags bool
	run      func(ctx context.Context, inv invocation) int
}

// invocation is what a command runs with.
type invocation struct {
	args           []string // the arguments, for a command with ownFlags
	cfgPath        string
	stdin          io.Reader
	stdout, stderr io.Writer
	environ        []string
}

var commands = []command{
	{
		name: "chat", synopsis: "[-c FILE]", config: true,
		summary: "talk to the bot in this terminal (embedded store; demo model without a key)",
		detail: `Runs the whole production path — router, signed runs, queue, workers, the agent team,
delivery — with this terminal as the only chat. Needs no setup: without redis.url the store is
embedded in the process; without DEEPSEEK_API_KEY (or BOT_LLM__BASE_URL) the offline demo model
answers, and says so. Type /help in the chat for its commands; Ctrl-D quits.`,
		run: func(ctx context.Context, inv invocation) int {
			cfg, code := loadConfig(inv, (*config.Config).Validate)
			if cfg == nil {
				return code
			}
			return report(chat(ctx, cfg, inv.stdin, inv.stdout, inv.stderr, chatInterrupts(ctx)), inv.stderr)
		},
	},
	{
		name: "run", synopsis: "[-c FILE]", config: true,
		summary: "serve the configured platforms (config: -c FILE or BOT_CONFIG, plus BOT_ env)",
		detail: `Starts the worker pool, every platform whose token is configured, and the HTTP listener on
http.addr (/healthz, /readyz, /metrics, webhooks). The configuration is built-in defaults, then
the YAML file, then BOT_<SECTION>__<KEY> environment variables (docs/configuration.md).
SIGTERM or SIGINT stops intake, lets runs in flight finish, then closes the platforms.
Exit status: 2 when the configuration is wrong, 1 when Redis, a platform or the listener fails.`,
		run: func(ctx context.Context, inv invocation) int {
			cfg, code := loadConfig(inv, (*config.Config).ValidateRun)
			if cfg == nil {
				return code
			}
			return report(serve(ctx, cfg, inv.stderr), inv.stderr)
		},
	},
	{
		name: "check-config", synopsis: checkConfigSynopsis, config: true, ownFlags: true,
		summary: "print the effective configuration with secrets redacted, and every problem",
		detail: `Loads the configuration as ` + "`bot run`" + ` would, prints it with every secret redacted, and lists
every problem ` + "`bot run`" + ` would refuse, each with its key, then the agent profiles. Exit status 0
when there is no problem, 2 otherwise.

With --route it prints instead which profile one conversation gets and why: the conversation's
key as the bot logs it (platform:workspace:chat:thread), then "dm" for a private chat with the
bot and "user=<channel_user_id>" for its sender, e.g.
  bot check-config --route "slack:T0123:C0456: dm user=T0123:U0456"
Exit status 0, or 2 when the key is malformed or the configuration does not load.`,
		run: func(_ context.Context, inv invocation) int { return checkConfig(inv) },
	},
	{
		name: "healthcheck", synopsis: "[-addr HOST:PORT] [-c FILE] [-timeout D]", ownFlags: true,
		summary: "ask /healthz of the local bot run (-addr, else http.addr); exit 0 on 200, else 1",
		detail: `The container's HEALTHCHECK, so the image needs no shell or curl. The address is -addr, or
else http.addr as ` + "`bot run`" + ` reads it (-c FILE or BOT_CONFIG, then BOT_HTTP__ADDR); a listener on
every interface is asked at 127.0.0.1. Every failure exits 1 with a one-line reason.

flags:
  -addr HOST:PORT   the listener to ask; http.addr from the configuration when empty
  -c FILE           configuration file (YAML); BOT_CONFIG when empty
  -timeout D        give up after this long (default 5s)`,
		run: func(ctx context.Context, inv invocation) int {
			return healthcheck(ctx, inv.args, inv.environ, inv.stdout, inv.stderr)
		},
	},
	{
		name: "version", summary: "print the version",
		run: func(_ context.Context, inv invocation) int {
			fmt.Fprintln(inv.stdout, "switchboard", versionString())
			return exitOK
		},
	},
}

// run is the whole command line; SIGTERM cancels the command's context, and so does SIGINT
// except in `bot chat`, which takes Ctrl-C itself (catchInterrupts).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, stopInterrupts := catchInterrupts(ctx)
	defer stopInterrupts()
	return runContext(ctx, args, stdin, stdout, stderr, environ)
}

// runContext is run with the context the command runs under: `bot run` and `bot chat` serve
// until ctx ends, then drain and return 0 (tests cancel ctx instead of sending a signal).
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, overview())
		return exitConfig
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, overview())
			return exitOK
		}
		c, ok := lookup(rest[0])
		if !ok {
			fmt.Fprintf(stderr, "bot: unknown command %q\n\n%s", rest[0], overview())
			return exitConfig
		}
		fmt.Fprint(stdout, c.usage())
		return exitOK
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "bot: unknown command %q\n\n%s", name, overview())
		return exitConfig
	}
	inv := invocation{stdin: stdin, stdout: stdout, stderr: stderr, environ: environ}
	if c.ownFlags {
		for _, a := range rest {
			if a == "-h" || a == "-help" || a == "--help" {
				fmt.Fprint(stdout, c.usage())
				return exitOK
			}
		}
		inv.args = rest
		return c.run(ctx, inv)
	}
	fs := flag.NewFlagSet("bot "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.config {
		fs.StringVar(&inv.cfgPath, "c", "", "configuration file (YAML); BOT_CONFIG when empty")
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, c.usage())
			return exitOK
		}
		fmt.Fprintf(stderr, "bot %s: %v\n\n%s", c.name, err, c.usage())
		return exitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bot %s: unexpected argument %q\n\n%s", c.name, fs.Arg(0), c.usage())
		return exitConfig
	}
	return c.run(ctx, inv)
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// overview is the usage of bot itself: every command in a line.
func overview() string {
	var b strings.Builder
	b.WriteString("usage: bot <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-14s %s\n", c.name, c.summary)
	}
	b.WriteString("\n`bot help <command>` or `bot <command> --help` tells more of one.\n")
	return b.String()
}

// usage is one command's help.
func (c command) usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: bot %s", c.name)
	if c.synopsis != "" {
		b.WriteString(" " + c.synopsis)
	}
	b.WriteString("\n\n" + c.summary + "\n")
	if c.detail != "" {
		b.WriteString("\n" + c.detail + "\n")
	}
	if c.config {
		b.WriteString("\nflags:\n  -c FILE   configuration file (YAML); BOT_CONFIG when empty\n")
	}
	return b.String()
}

// report prints err as one line for the operator and returns the exit code: 0 for nil or an
// interrupt, 2 for a configuration problem, 1 for everything else.
func report(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, context.Canceled) {
		return exitOK
	}
	fmt.Fprintln(stderr, "bot:", err)
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		return exitConfig
	}
	return exitEnv
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// loadConfig loads the configuration and checks it with validate; on failure it prints every
// problem and returns nil and the exit code.
func loadConfig(inv invocation, validate func(*config.Config) error) (*config.Config, int) {
	cfg, err := config.Load(inv.cfgPath, inv.environ)
	if err == nil {
		err = validate(cfg)
	}
	if err != nil {
		fmt.Fprintln(inv.stderr, "bot:", err)
		return nil, exitConfig
	}
	return cfg, exitOK
}

// checkConfigSynopsis is the arguments of `bot check-config`, which parses them itself.
const checkConfigSynopsis = `[-c FILE] [--route "KEY [dm] [user=ID]"]`

// checkConfig prints the effective configuration, every problem `bot run` would refuse and the
// agent profiles; with --route, which profile one conversation gets and why.
func checkConfig(inv invocation) int {
	// `bot help check-config` has the whole story; commands cannot be read from here (it would
	// make an initialization cycle), so a bad flag gets the synopsis.
	const usage = "usage: bot check-config " + checkConfigSynopsis + "\n\n`bot help check-config` tells more.\n"
	fs := flag.NewFlagSet("bot check-config", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&inv.cfgPath, "c", "", "configuration file (YAML); BOT_CONFIG when empty")
	route := fs.String("route", "", "a conversation key, then dm and user=<id> if they apply")
	if err := fs.Parse(inv.args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(inv.stdout, usage)
			return exitOK
		}
		fmt.Fprintf(inv.stderr, "bot check-config: %v\n\n%s", err, usage)
		return exitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(inv.stderr, "bot check-config: unexpected argument %q\n\n%s", fs.Arg(0), usage)
		return exitConfig
	}
	routed := false
	fs.Visit(func(f *flag.Flag) { routed = routed || f.Name == "route" })

	cfg, err := config.Load(inv.cfgPath, inv.environ)
	if err != nil {
		var ve *config.ValidationError
		if !errors.As(err, &ve) || cfg == nil {
			fmt.Fprintln(inv.stderr, "bot:", err)
			return exitConfig
		}
	}
	if routed {
		return checkRoute(inv, cfg, *route)
	}
	fmt.Fprint(inv.stdout, cfg.Redacted())
	verr := cfg.ValidateRun()
	set, perr := profileSet(cfg)
	if perr == nil {
		writeProfiles(inv.stdout, set)
	} else if verr != nil {
		perr = nil // Validate names every problem profileSet finds, by its key
	}
	if err == nil && verr == nil && perr == nil {
		fmt.Fprintln(inv.stderr, "configuration OK")
		return exitOK
	}
	for _, e := range []error{err, verr, perr} {
		if e != nil {
			fmt.Fprintln(inv.stderr, "bot:", e)
		}
	}
	return exitConfig
}

// newLogger writes text or JSON logs at the configured level to w.
func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
